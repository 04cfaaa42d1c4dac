//! The DLQ for the operator: `GET /v1/admin/dlq` (summary by subscription
//! and error code) and `POST /v1/admin/dlq/retry` (a selection of failed
//! deliveries sent again through the replay machinery: one replay per
//! subscription, recorded with its motivo and `solicitado_por` =
//! `operador`; the failed deliveries stay in the DLQ as history).

use axum::{
    body::Body,
    extract::{rejection::QueryRejection, Query, State},
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
    Json,
};
use motor_app::dlq::{self, RetrySelection};

use super::{DlqQuery, DlqSummary, RetryDlq, RetryDlqBody, RetryDlqResult};
use crate::{
    auth::Operator,
    error::ApiError,
    extract::{parse_json, read_body},
    replays::idempotency_key,
    AppState,
};

pub use motor_app::dlq::MAX_RETRY;

/// The DLQ by subscription and error code.
#[utoipa::path(get, path = "/v1/admin/dlq", tag = "admin",
    security(("admin_token" = [])),
    params(DlqQuery),
    responses(
        (status = 200, body = DlqSummary),
        (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn get_dlq(
    _: Operator,
    State(state): State<AppState>,
    query: Result<Query<DlqQuery>, QueryRejection>,
) -> Result<Json<DlqSummary>, ApiError> {
    let Query(query) = query.map_err(crate::extract::rejected_query)?;
    let groups = dlq::summary(&state.pool, query.app_id.as_deref())
        .await
        .map_err(ApiError::in_query)?;
    Ok(Json(groups.into()))
}

/// Sends failed deliveries again, as replays (new delivery ids, the same
/// events), with the motivo audited.
#[utoipa::path(post, path = "/v1/admin/dlq/retry", tag = "admin",
    security(("admin_token" = [])),
    params(("Idempotency-Key" = String, Header, min_length = 1, max_length = 200, description = "Required, 1–200 characters; a repeat answers the same replays")),
    request_body = RetryDlqBody,
    responses(
        (status = 202, body = RetryDlqResult),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn retry_dlq(
    _: Operator,
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let key = idempotency_key(&headers)?;
    let input: RetryDlq = parse_json(&read_body(body).await?)?;
    let replays = dlq::retry(&state.pool, &key, &RetrySelection::from(&input))
        .await
        .map_err(ApiError::in_body)?;
    Ok((StatusCode::ACCEPTED, Json(RetryDlqResult::from(replays))))
}
