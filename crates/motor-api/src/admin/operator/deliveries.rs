//! `GET /v1/admin/deliveries` and `GET /v1/admin/deliveries/{id}`: every
//! app's deliveries for the operator, filtered and paginated by cursor.

use std::collections::HashMap;

use axum::extract::{rejection::QueryRejection, Path, Query, State};
use axum::Json;
use motor_app::deliveries;
use motor_domain::delivery::DeliveryId;

use super::{OperatorDeliveryDetail, OperatorDeliveryList};
use crate::{auth::Operator, error::ApiError, extract::path_id, AppState};

/// Every app's deliveries, newest first.
#[utoipa::path(get, path = "/v1/admin/deliveries", tag = "admin",
    security(("admin_token" = [])),
    params(
        ("estado" = Option<String>, Query, pattern = "^(pendiente|entregada|fallida|cancelada)(,(pendiente|entregada|fallida|cancelada))*$", description = "Comma list of pendiente, entregada, fallida, cancelada"),
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
    let Query(params) = params.map_err(crate::extract::rejected_query)?;
    let page = deliveries::search(&state.pool, &params)
        .await
        .map_err(ApiError::in_query)?;
    Ok(Json(page.into()))
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
    let id: DeliveryId = path_id(&id, "delivery")?;
    Ok(Json(deliveries::detail(&state.pool, id).await?.into()))
}
