//! The manual retry of one `fallida` delivery (seed 001). It is a replay
//! of one delivery: a new delivery of the same event (same `event_id`, new
//! delivery id) in a lane of its own, with `replay_of` = the retried
//! delivery, recorded in the replays' audit and under the same
//! `Idempotency-Key` rules.
//!
//! Where the contract is silent: the `motivo` is optional (1–300
//! characters; default `reintento manual`); a delivery of an instance
//! outside a key's restriction is not found, as its detail is; retrying a
//! retry's delivery points `replay_of` at that delivery (the one retried),
//! not at the first of the chain.

use motor_domain::{
    delivery::{DeliveryId, DeliveryState},
    principal::Principal,
    replay::MAX_REASON_CHARS,
    FieldError,
};
use motor_store::{
    deliveries::read::{self, Delivery},
    replays::{self as store, NewRetry},
    subscriptions, Pool,
};
use sha2::{Digest, Sha256};

use crate::{access::refuse_deleted, AppError, Result};

/// The `motivo` of a retry that gives none.
pub const DEFAULT_REASON: &str = "reintento manual";

/// A retry's reason: absent = [`DEFAULT_REASON`], else 1 to
/// [`MAX_REASON_CHARS`] characters once trimmed.
pub fn parse_reason(raw: Option<&str>) -> Result<String, FieldError> {
    let Some(raw) = raw else {
        return Ok(DEFAULT_REASON.to_owned());
    };
    motor_domain::operator::refuse_nul(raw, "motivo")?;
    let reason = raw.trim();
    let chars = reason.chars().count();
    if chars == 0 || chars > MAX_REASON_CHARS {
        return Err(FieldError::invalid(
            "motivo",
            format!("must be 1 to {MAX_REASON_CHARS} characters"),
        ));
    }
    Ok(reason.to_owned())
}

/// Sends a `fallida` delivery of the caller's again as a new delivery of
/// the same event; answers the new delivery. The same key with the same
/// request answers the first retry's delivery; with another, a conflict.
pub async fn retry(
    pool: &Pool,
    caller: &Principal,
    id: DeliveryId,
    idempotency_key: &str,
    reason: Option<&str>,
) -> Result<Delivery> {
    let reason = parse_reason(reason)?;
    let app = caller.app_id;
    let request_hash = Sha256::digest(format!("retry\n{id}\n{reason}").as_bytes()).to_vec();

    let mut tx = pool.begin().await?;
    let original = read::get(&mut *tx, Some(app), id)
        .await?
        .filter(|d| caller.may_access(d.instance_id))
        .ok_or(AppError::NotFound("delivery"))?;
    let sub = subscriptions::lock(&mut tx, app, original.subscription_id).await?;
    let created = match store::find(&mut tx, app, idempotency_key).await? {
        Some(first) if first.request_hash != request_hash => {
            return Err(AppError::conflict(
                "this Idempotency-Key was used with a different request",
            ))
        }
        Some(first) => store::retry_delivery(&mut tx, first.id)
            .await?
            .ok_or(AppError::NotFound("delivery"))?,
        None => {
            refuse_deleted(&sub)?;
            if original.state != DeliveryState::Failed {
                return Err(AppError::Conflict(format!(
                    "only a fallida delivery can be retried; this one is {}",
                    original.state.as_str()
                )));
            }
            let new = NewRetry {
                app,
                subscription: original.subscription_id,
                delivery: id,
                idempotency_key,
                request_hash: &request_hash,
                requested_by: &caller.key_id,
                reason: &reason,
            };
            store::create_retry(&mut tx, &new).await?.1
        }
    };
    let delivery = read::get(&mut *tx, Some(app), created)
        .await?
        .ok_or(AppError::NotFound("delivery"))?;
    tx.commit().await?;
    Ok(delivery)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_is_optional_and_bounded() {
        assert_eq!(parse_reason(None).unwrap(), DEFAULT_REASON);
        assert_eq!(parse_reason(Some("  arreglado ")).unwrap(), "arreglado");
        for bad in ["", "   ", &"x".repeat(301)] {
            assert_eq!(parse_reason(Some(bad)).unwrap_err().field, "motivo");
        }
    }
}
