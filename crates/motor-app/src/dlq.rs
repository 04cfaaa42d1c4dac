//! The DLQ for the operator: a summary by subscription and error code,
//! and a selection of failed deliveries sent again through the replay
//! machinery — one replay per subscription, recorded with its motivo and
//! `solicitado_por` = `operador`. The failed deliveries stay `fallida` as
//! history, but leave the DLQ once sent again (`operator_view::dlq`).

use std::collections::BTreeMap;

use motor_domain::{
    delivery::LastError, replay::MAX_REASON_CHARS, subscription::SubscriptionId, AppId, EventId,
    FieldError,
};
use motor_store::{
    operator_view::{self, DlqGroup, DlqSelection},
    replays::StoredReplay,
    Pool,
};
use uuid::Uuid;

use crate::{
    access::OPERATOR,
    replays::{self, ReplayInput},
    Access, AppError, Result,
};

/// Most failed deliveries one retry sends again.
pub const MAX_RETRY: i64 = 500;

/// Which failed deliveries to send again, as a caller sends it; at least
/// one of subscription, app or ids (the whole DLQ is never retried at once).
#[derive(Debug, Clone, Default)]
pub struct RetrySelection {
    pub subscription_id: Option<String>,
    pub app_id: Option<String>,
    pub last_errors: Option<Vec<String>>,
    pub delivery_ids: Option<Vec<String>>,
    pub reason: String,
}

/// The DLQ's groups, largest first; `app` narrows it to one app (a raw
/// app id, checked here).
pub async fn summary(pool: &Pool, app: Option<&str>) -> Result<Vec<DlqGroup>> {
    let app = uuid_field(app, "app_id")?;
    Ok(operator_view::dlq(pool, app).await?)
}

fn uuid_field(raw: Option<&str>, field: &'static str) -> Result<Option<Uuid>, FieldError> {
    raw.map(|r| {
        r.trim()
            .parse()
            .map_err(|_| FieldError::invalid(field, "must be a uuid"))
    })
    .transpose()
}

/// Checks a retry request; nothing is read or written before it passes.
pub fn parse_retry(input: &RetrySelection) -> Result<(DlqSelection, String), FieldError> {
    motor_domain::operator::refuse_nul(&input.reason, "motivo")?;
    let reason = input.reason.trim();
    let chars = reason.chars().count();
    if chars == 0 || chars > MAX_REASON_CHARS {
        return Err(FieldError::invalid(
            "motivo",
            format!("must be 1 to {MAX_REASON_CHARS} characters"),
        ));
    }
    let subscription = uuid_field(input.subscription_id.as_deref(), "suscripcion_id")?;
    let app = uuid_field(input.app_id.as_deref(), "app_id")?;
    let last_errors = input
        .last_errors
        .iter()
        .flatten()
        .map(|raw| {
            LastError::parse(raw.trim())
                .map(|e| e.to_string())
                .ok_or_else(|| FieldError::invalid("ultimo_error", "unknown error code"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let ids = input.delivery_ids.as_deref().unwrap_or_default();
    if input.delivery_ids.is_some() && (ids.is_empty() || ids.len() > MAX_RETRY as usize) {
        return Err(FieldError::invalid(
            "delivery_ids",
            format!("must list 1 to {MAX_RETRY} delivery ids"),
        ));
    }
    let delivery_ids = ids
        .iter()
        .map(|raw| {
            raw.trim()
                .parse()
                .map_err(|_| FieldError::invalid("delivery_ids", "must be uuids"))
        })
        .collect::<Result<Vec<Uuid>, _>>()?;
    if subscription.is_none() && app.is_none() && delivery_ids.is_empty() {
        return Err(FieldError::invalid(
            "suscripcion_id",
            "name a subscription, an app or delivery_ids (the whole DLQ is never retried at once)",
        ));
    }
    Ok((
        DlqSelection {
            subscription,
            app,
            last_errors,
            delivery_ids,
            limit: MAX_RETRY,
        },
        reason.to_owned(),
    ))
}

/// Sends a DLQ selection again: one replay (of the selected events) per
/// subscription, under `key`, the selection's fingerprint and the
/// subscription id, so a repeat answers the same replays and the same key
/// with another selection is a conflict.
pub async fn retry(pool: &Pool, key: &str, input: &RetrySelection) -> Result<Vec<StoredReplay>> {
    let (selection, reason) = parse_retry(input)?;
    let request = format!("{key}:{}:", fingerprint(&selection, &reason));
    // A repeat answers the replays it made (the deliveries it sent again
    // have left the DLQ, so the selection would now be empty); the key
    // used before with another selection is refused, as a replay's is.
    let mut conn = pool.acquire().await?;
    let earlier = motor_store::replays::find_by_key_prefix(&mut conn, &request).await?;
    if !earlier.is_empty() {
        return Ok(earlier);
    }
    let other = motor_store::replays::find_by_key_prefix(&mut conn, &format!("{key}:")).await?;
    drop(conn);
    if !other.is_empty() {
        return Err(AppError::conflict(
            "this Idempotency-Key was used with a different request",
        ));
    }
    let selected = operator_view::failed_selection(pool, &selection).await?;
    let mut by_subscription: BTreeMap<Uuid, (AppId, Vec<EventId>)> = BTreeMap::new();
    for (app, sub, event) in selected {
        let entry = by_subscription
            .entry(*sub.as_uuid())
            .or_insert_with(|| (app, Vec::new()));
        if !entry.1.contains(&event) {
            entry.1.push(event);
        }
    }
    let mut done = Vec::new();
    for (sub, (app, events)) in by_subscription {
        let replay = replays::create(
            pool,
            &Access::whole_app(app),
            OPERATOR,
            SubscriptionId::from_uuid(sub),
            &format!("{request}{sub}"),
            ReplayInput {
                event_ids: Some(events.iter().map(|e| e.to_string()).collect()),
                reason: reason.clone(),
                ..Default::default()
            },
        )
        .await?;
        done.push(replay);
    }
    Ok(done)
}

/// A short digest of what a retry selects and why: the part of its
/// replays' keys that tells one request under a key from another.
fn fingerprint(selection: &DlqSelection, reason: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut errors = selection.last_errors.clone();
    errors.sort();
    let mut ids = selection.delivery_ids.clone();
    ids.sort();
    let canonical =
        serde_json::json!([selection.subscription, selection.app, errors, ids, reason,]);
    Sha256::digest(canonical.to_string().as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
