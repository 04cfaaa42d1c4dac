//! `GET /v1/admin/deliveries` and `GET /v1/admin/deliveries/{id}`: every
//! app's deliveries for the operator, filtered and paginated by cursor.

use std::collections::HashMap;

use axum::extract::{rejection::QueryRejection, Path, Query, State};
use axum::Json;
use motor_domain::{delivery::DeliveryId, FieldError};
use motor_store::deliveries::read;

use super::{OperatorDeliveryDetail, OperatorDeliveryList};
use crate::{
    auth::Operator,
    deliveries::query::{encode_cursor, parse_search},
    error::ApiError,
    extract::path_id,
    AppState,
};

/// The search, shared with the console.
pub async fn search(
    state: &AppState,
    params: &HashMap<String, String>,
) -> Result<OperatorDeliveryList, ApiError> {
    let filter = parse_search(params)?;
    let mut rows = read::search(&state.pool, &filter).await?;
    let more = rows.len() as i64 >= filter.limit;
    if more {
        rows.truncate((filter.limit - 1) as usize);
    }
    let siguiente_cursor = more
        .then(|| rows.last().map(|d| encode_cursor(d.id)))
        .flatten();
    Ok(OperatorDeliveryList {
        entregas: rows.into_iter().map(Into::into).collect(),
        siguiente_cursor,
    })
}

/// One delivery with its attempts, shared with the console.
pub async fn detail(state: &AppState, id: uuid::Uuid) -> Result<OperatorDeliveryDetail, ApiError> {
    let id = DeliveryId::from_uuid(id);
    let delivery = read::get(&state.pool, None, id)
        .await?
        .ok_or(ApiError::NotFound("delivery"))?;
    let attempts = read::attempts(&state.pool, id).await?;
    Ok(OperatorDeliveryDetail {
        entrega: delivery.into(),
        intentos_detalle: attempts.into_iter().map(Into::into).collect(),
    })
}

/// Every app's deliveries, newest first.
#[utoipa::path(get, path = "/v1/admin/deliveries", tag = "admin",
    security(("admin_token" = [])),
    params(
        ("estado" = Option<String>, Query, pattern = "^(pendiente|entregada|fallida)(,(pendiente|entregada|fallida))*$", description = "Comma list of pendiente, entregada, fallida"),
        ("app_id" = Option<String>, Query, format = Uuid),
        ("suscripcion_id" = Option<String>, Query, format = Uuid),
        ("instancia_id" = Option<String>, Query, format = Uuid),
        ("ultimo_error" = inline(Option<crate::openapi::LastErrorCodeList>), Query, description = "Comma list of error codes (http_503, timeout_agotada, …)"),
        ("desde" = Option<String>, Query, format = DateTime, description = "Created at or after"),
        ("hasta" = Option<String>, Query, format = DateTime, description = "Created before"),
        ("cursor" = Option<String>, Query, pattern = "^d_[0-9a-fA-F]{32}$", description = "siguiente_cursor of the previous page"),
        ("limite" = Option<i64>, Query, minimum = 1, maximum = 200, description = "1–200, default 50"),
    ),
    responses(
        (status = 200, body = OperatorDeliveryList),
        (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn list_all_deliveries(
    _: Operator,
    State(state): State<AppState>,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<OperatorDeliveryList>, ApiError> {
    let Query(params) = params.map_err(|e| FieldError::invalid("query", e.body_text()))?;
    Ok(Json(search(&state, &params).await?))
}

/// One delivery of any app, with every attempt.
#[utoipa::path(get, path = "/v1/admin/deliveries/{id}", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = OperatorDeliveryDetail),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn get_any_delivery(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<OperatorDeliveryDetail>, ApiError> {
    let id = path_id(&id, "delivery")?;
    Ok(Json(detail(&state, id).await?))
}
