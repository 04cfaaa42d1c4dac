//! `POST /v1/subscriptions/{id}/replays` (scope `deliveries:replay`) and
//! the operator's `POST /v1/admin/apps/{id}/subscriptions/{sid}/replays`:
//! send events already in the ledger again, as new deliveries in the
//! replay's own ordered lane, through `motor_app::replays`.

mod dto;
mod handlers;

use axum::http::HeaderMap;
use motor_app::replays::{self, ReplayInput};
pub use motor_app::{access::OPERATOR, Access};
use motor_domain::{replay::parse_idempotency_key, subscription::SubscriptionId, FieldError};
use motor_store::Pool;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{error::ApiError, AppState};

/// Replays events to a subscription of `access.app`
/// (`motor_app::replays::create` says in what order it checks).
pub async fn create_replay(
    pool: &Pool,
    access: &Access,
    requested_by: &str,
    id: SubscriptionId,
    idempotency_key: &str,
    input: CreateReplay,
) -> Result<Replay, ApiError> {
    let input = ReplayInput {
        instance_id: input.instancia_id,
        from_seq: input.desde_seq,
        to_seq: input.hasta_seq,
        event_ids: input.event_ids,
        reason: input.motivo,
    };
    let stored = replays::create(pool, access, requested_by, id, idempotency_key, input)
        .await
        .map_err(ApiError::in_body)?;
    Ok(stored.into())
}

pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let raw = match headers.get("idempotency-key") {
        None => None,
        Some(value) => Some(value.to_str().map_err(|_| {
            ApiError::in_header(FieldError::invalid(
                "Idempotency-Key",
                "must be 1 to 200 printable characters",
            ))
        })?),
    };
    parse_idempotency_key(raw).map_err(ApiError::in_header)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::request_replay))
        .routes(routes!(handlers::request_app_replay))
        .routes(routes!(handlers::get_replay))
}
