//! Replays: events already in the ledger sent again to a subscription, as
//! new deliveries in the replay's own ordered lane. The request is checked
//! by `motor_domain::replay`, the deliveries and jobs written by
//! `motor_store::replays`, in one transaction.

use motor_domain::{
    replay::{RawReplay, ReplayRequest, Selection},
    subscription::SubscriptionId,
    FieldError,
};
use motor_store::{
    operator,
    replays::{self as store, NewReplay, StoredReplay},
    subscriptions, Pool,
};
use sha2::{Digest, Sha256};
use sqlx::PgConnection;

use crate::{
    access::{refuse_deleted, restricted},
    Access, AppError, Result,
};

/// A replay request as a caller sends it: a range of one instance's
/// `seq`s or a list of event ids, and why.
#[derive(Debug, Clone, Default)]
pub struct ReplayInput {
    pub instance_id: Option<String>,
    pub from_seq: Option<i64>,
    pub to_seq: Option<i64>,
    pub event_ids: Option<Vec<String>>,
    pub reason: String,
}

/// Replays events to a subscription of `access.app`. Validation first (a
/// refused request does not use up its key); then, under the
/// subscription's lock: 403 for a subscription or instances outside the
/// key's restriction, 422 for an `instancia_id` of another app; the key's
/// earlier answer if it was used with this same request (409 with
/// another); 409 for an `eliminada` subscription; then the deliveries,
/// their jobs and the replay's row. Events of other apps and unknown ids
/// are skipped, like events the subscription does not cover.
pub async fn create(
    pool: &Pool,
    access: &Access,
    requested_by: &str,
    id: SubscriptionId,
    idempotency_key: &str,
    input: ReplayInput,
) -> Result<StoredReplay> {
    let request = ReplayRequest::parse(RawReplay {
        instance_id: input.instance_id.as_deref(),
        from_seq: input.from_seq,
        to_seq: input.to_seq,
        event_ids: input.event_ids.as_deref(),
        reason: &input.reason,
    })?;
    let request_hash = Sha256::digest(request.canonical(id).as_bytes()).to_vec();

    let mut tx = pool.begin().await?;
    let sub = subscriptions::lock(&mut tx, access.app, id).await?;
    access.check_visible(&sub)?;
    check_instances(&mut tx, access, &request.selection).await?;
    if let Some(first) = store::find(&mut tx, access.app, idempotency_key).await? {
        if first.request_hash != request_hash {
            return Err(AppError::conflict(
                "this Idempotency-Key was used with a different request",
            ));
        }
        return Ok(first);
    }
    refuse_deleted(&sub)?;
    let stored = store::create(
        &mut tx,
        &NewReplay {
            app: access.app,
            subscription: id,
            idempotency_key,
            request_hash: &request_hash,
            requested_by,
            request: &request,
        },
    )
    .await?;
    tx.commit().await?;
    Ok(stored)
}

/// A range's instance must be the app's (422) and, for a restricted key,
/// one of its own (403); listed events must all be in the key's
/// instances (403).
async fn check_instances(
    conn: &mut PgConnection,
    access: &Access,
    selection: &Selection,
) -> Result<()> {
    match selection {
        Selection::Range { instance_id, .. } => {
            if !access.restriction.is_empty() && !access.restriction.contains(instance_id) {
                return Err(restricted());
            }
            match operator::instance_app(&mut *conn, *instance_id).await? {
                Some(app) if app == access.app => Ok(()),
                _ => Err(FieldError::invalid("instancia_id", "not an instance of this app").into()),
            }
        }
        Selection::Events(ids) => {
            if access.restriction.is_empty() {
                return Ok(());
            }
            let instances = store::instances_of(conn, access.app, ids).await?;
            if instances.iter().any(|i| !access.restriction.contains(i)) {
                return Err(restricted());
            }
            Ok(())
        }
    }
}

/// How far one of the subscription's replays has gone (the subscription
/// must be visible to `access`; a deleted one still answers).
pub async fn progress(
    pool: &Pool,
    access: &Access,
    id: SubscriptionId,
    replay: motor_domain::delivery::ReplayId,
) -> Result<store::ReplayProgress> {
    let mut conn = pool.acquire().await?;
    let sub = subscriptions::get(&mut conn, access.app, id).await?;
    access.check_visible(&sub)?;
    store::progress(&mut conn, access.app, id, replay)
        .await?
        .ok_or(AppError::NotFound("replay"))
}
