//! `POST /v1/deliveries/{id}/retry` (scope `deliveries:replay`): send one
//! `fallida` delivery again (seed 001's manual retry) through
//! `motor_app::deliveries::retry`, which says what a retry is.
//!
//! Where the contract is silent: the body is optional — nothing, `{}` or
//! `{"motivo": "…"}` (1–300 characters; default `reintento manual`); the
//! answer is the new delivery as `GET /v1/deliveries/{id}` lists it.

use axum::{
    body::Body,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
    Json,
};
use motor_app::deliveries::retry;
use motor_domain::{delivery::DeliveryId, Scope};

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    auth::Caller,
    deliveries::{CreateRetry, DeliveryView},
    error::ApiError,
    extract::{parse_json, path_id, read_body},
    replays::idempotency_key,
    AppState,
};

pub use motor_app::deliveries::retry::DEFAULT_REASON;

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
    let delivery = retry::retry(&state.pool, &caller.0, id, &key, input.motivo.as_deref())
        .await
        .map_err(ApiError::in_body)?;
    Ok((StatusCode::ACCEPTED, Json(DeliveryView::from(delivery))))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(retry_delivery))
}
