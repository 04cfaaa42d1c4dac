//! `POST /v1/deliveries/{id}/retry` (scope `deliveries:replay`): send one
//! `fallida` delivery again (seed 001's manual retry). It is a replay of
//! one delivery: a new delivery of the same event (same `event_id`, new
//! delivery id) in a lane of its own, with `replay_of` = the retried
//! delivery, recorded in the replays' audit and under the same
//! `Idempotency-Key` rules.
//!
//! Where the contract is silent: the body is optional — nothing, `{}` or
//! `{"motivo": "…"}` (1–300 characters; default `reintento manual`); the
//! answer is the new delivery as `GET /v1/deliveries/{id}` lists it; a
//! delivery of an instance outside a key's restriction is a 404, as its
//! detail is; retrying a retry's delivery points `replay_of` at that
//! delivery (the one retried), not at the first of the chain.

use axum::{
    body::Body,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
    Json,
};
use motor_domain::{
    delivery::{DeliveryId, DeliveryState},
    replay::MAX_REASON_CHARS,
    FieldError, Scope,
};
use motor_store::{
    deliveries::read,
    replays::{self as store, NewRetry},
    subscriptions,
};
use sha2::{Digest, Sha256};

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    auth::Caller,
    deliveries::{CreateRetry, DeliveryView},
    error::ApiError,
    extract::{parse_json, path_id, read_body},
    replays::idempotency_key,
    subscriptions::rules::refuse_deleted,
    AppState,
};

/// The `motivo` of a retry that gives none.
pub const DEFAULT_REASON: &str = "reintento manual";

fn parse_reason(raw: Option<&str>) -> Result<String, FieldError> {
    let Some(raw) = raw else {
        return Ok(DEFAULT_REASON.to_owned());
    };
    motor_domain::operator::refuse_nul(raw, "body.motivo")?;
    let motivo = raw.trim();
    let chars = motivo.chars().count();
    if chars == 0 || chars > MAX_REASON_CHARS {
        return Err(FieldError::invalid(
            "body.motivo",
            format!("must be 1 to {MAX_REASON_CHARS} characters"),
        ));
    }
    Ok(motivo.to_owned())
}

/// Sends a `fallida` delivery again as a new delivery of the same event, in
/// its own lane; `replay_of` is the retried delivery.
#[utoipa::path(post, path = "/v1/deliveries/{id}/retry", tag = "deliveries",
    security(("api_key" = ["deliveries:replay"])),
    params(("id" = String, Path, format = Uuid, description = "The `fallida` delivery"),
           ("Idempotency-Key" = String, Header, min_length = 1, max_length = 200, description = "Required, 1–200 characters; the same key with another request is a 409, with the same one the first answer")),
    request_body(content = CreateRetry, description = "Optional: no body is the default `motivo`"),
    responses(
        (status = 202, body = DeliveryView, description = "The new delivery"),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody, description = "The delivery is not `fallida`, its subscription was deleted, or the key was used with another request"),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn retry_delivery(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Scope::DeliveriesReplay)?;
    let id: DeliveryId = path_id(&id, "delivery")?;
    let key = idempotency_key(&headers)?;
    let bytes = read_body(body).await?;
    let input: CreateRetry = if bytes.iter().all(u8::is_ascii_whitespace) {
        CreateRetry::default()
    } else {
        parse_json(&bytes)?
    };
    let motivo = parse_reason(input.motivo.as_deref())?;
    let app = caller.0.app_id;
    let request_hash = Sha256::digest(format!("retry\n{id}\n{motivo}").as_bytes()).to_vec();

    let mut tx = state.pool.begin().await?;
    let original = read::get(&mut *tx, Some(app), id)
        .await?
        .filter(|d| caller.0.may_access(d.instance_id))
        .ok_or(ApiError::NotFound("delivery"))?;
    let sub = subscriptions::lock(&mut tx, app, original.subscription_id).await?;
    let created = match store::find(&mut tx, app, &key).await? {
        Some(first) if first.request_hash != request_hash => {
            return Err(ApiError::Conflict(
                "this Idempotency-Key was used with a different request".into(),
            ))
        }
        Some(first) => store::retry_delivery(&mut tx, first.id)
            .await?
            .ok_or(ApiError::NotFound("delivery"))?,
        None => {
            refuse_deleted(&sub)?;
            if original.state != DeliveryState::Failed {
                return Err(ApiError::Conflict(format!(
                    "only a fallida delivery can be retried; this one is {}",
                    original.state.as_str()
                )));
            }
            let new = NewRetry {
                app,
                subscription: original.subscription_id,
                delivery: id,
                idempotency_key: &key,
                request_hash: &request_hash,
                requested_by: &caller.0.key_id,
                reason: &motivo,
            };
            store::create_retry(&mut tx, &new).await?.1
        }
    };
    let delivery = read::get(&mut *tx, Some(app), created)
        .await?
        .ok_or(ApiError::NotFound("delivery"))?;
    tx.commit().await?;
    Ok((StatusCode::ACCEPTED, Json(DeliveryView::from(delivery))))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(retry_delivery))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_is_optional_and_bounded() {
        assert_eq!(parse_reason(None).unwrap(), DEFAULT_REASON);
        assert_eq!(parse_reason(Some("  arreglado ")).unwrap(), "arreglado");
        for bad in ["", "   ", &"x".repeat(301)] {
            assert_eq!(parse_reason(Some(bad)).unwrap_err().field, "body.motivo");
        }
    }
}
