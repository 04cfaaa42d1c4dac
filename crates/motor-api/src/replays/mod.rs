//! `POST /v1/subscriptions/{id}/replays` (scope `deliveries:replay`) and
//! the operator's `POST /v1/admin/apps/{id}/subscriptions/{sid}/replays`:
//! send events already in the ledger again, as new deliveries in the
//! replay's own ordered lane. The request is checked by
//! `motor_domain::replay`, the deliveries and jobs are written by
//! `motor_store::replays`, in one transaction.

mod dto;
mod handlers;

use axum::http::HeaderMap;
use motor_domain::{
    replay::{parse_idempotency_key, RawReplay, ReplayRequest, Selection},
    subscription::SubscriptionId,
    FieldError,
};
use motor_store::{
    operator,
    replays::{self as store, NewReplay},
    subscriptions, Pool,
};
use sha2::{Digest, Sha256};
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{
    error::ApiError,
    subscriptions::rules::{refuse_deleted, Access},
    AppState,
};

/// Who a replay is recorded as when the operator asks for it.
pub const OPERATOR: &str = "operador";

/// Replays events to a subscription of `access.app`. Validation first (a
/// refused request does not use up its key); then, under the
/// subscription's lock: 403 for a subscription or instances outside the
/// key's restriction, 422 for an `instancia_id` of another app; the key's
/// earlier answer if it was used with this same request (409 with
/// another); 409 for an `eliminada` subscription; then the deliveries,
/// their jobs and the replay's row. Events of other apps and unknown ids are skipped, like
/// events the subscription does not cover.
pub async fn create_replay(
    pool: &Pool,
    access: &Access,
    requested_by: &str,
    id: SubscriptionId,
    idempotency_key: &str,
    input: CreateReplay,
) -> Result<Replay, ApiError> {
    let request = ReplayRequest::parse(RawReplay {
        instance_id: input.instancia_id.as_deref(),
        from_seq: input.desde_seq,
        to_seq: input.hasta_seq,
        event_ids: input.event_ids.as_deref(),
        reason: &input.motivo,
    })?;
    let request_hash = Sha256::digest(request.canonical(id).as_bytes()).to_vec();

    let mut tx = pool.begin().await?;
    let sub = subscriptions::lock(&mut tx, access.app, id).await?;
    access.check_visible(&sub)?;
    check_instances(&mut tx, access, &request.selection).await?;
    if let Some(first) = store::find(&mut tx, access.app, idempotency_key).await? {
        if first.request_hash != request_hash {
            return Err(ApiError::Conflict(
                "this Idempotency-Key was used with a different request".into(),
            ));
        }
        return Ok(first.into());
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
    Ok(stored.into())
}

/// A range's instance must be the app's (422) and, for a restricted key,
/// one of its own (403); listed events must all be in the key's
/// instances (403).
async fn check_instances(
    conn: &mut sqlx::PgConnection,
    access: &Access,
    selection: &Selection,
) -> Result<(), ApiError> {
    let forbidden = || ApiError::Forbidden("this key is restricted to other instances".into());
    match selection {
        Selection::Range { instance_id, .. } => {
            if !access.restriction.is_empty() && !access.restriction.contains(instance_id) {
                return Err(forbidden());
            }
            match operator::instance_app(&mut *conn, *instance_id).await? {
                Some(app) if app == access.app => Ok(()),
                _ => Err(
                    FieldError::invalid("body.instancia_id", "not an instance of this app").into(),
                ),
            }
        }
        Selection::Events(ids) => {
            if access.restriction.is_empty() {
                return Ok(());
            }
            let instances = store::instances_of(conn, access.app, ids).await?;
            if instances.iter().any(|i| !access.restriction.contains(i)) {
                return Err(forbidden());
            }
            Ok(())
        }
    }
}

pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let raw = match headers.get("idempotency-key") {
        None => None,
        Some(value) => Some(value.to_str().map_err(|_| {
            FieldError::invalid(
                "header.Idempotency-Key",
                "must be 1 to 200 printable characters",
            )
        })?),
    };
    Ok(parse_idempotency_key(raw)?)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::request_replay))
        .routes(routes!(handlers::request_app_replay))
}
