//! The HTTP handlers of `/v1/deliveries`, named by what they do.

use std::collections::HashMap;

use axum::{
    extract::{rejection::QueryRejection, Path, Query, State},
    Json,
};
use motor_app::deliveries;
use motor_domain::{delivery::DeliveryId, Scope};

use super::{AttemptView, DeliveryDetail, DeliveryList, DeliveryView};
use crate::{auth::Caller, error::ApiError, extract::path_id, AppState};

/// Lists the app's deliveries, newest first.
#[utoipa::path(get, path = "/v1/deliveries", tag = "deliveries",
    security(("api_key" = ["events:read"])),
    params(("estado" = Option<String>, Query, pattern = "^(pendiente|entregada|fallida|cancelada)(,(pendiente|entregada|fallida|cancelada))*$", description = "Comma list of pendiente, entregada, fallida, cancelada"),
           ("suscripcion_id" = Option<String>, Query, format = Uuid),
           ("instancia_id" = Option<String>, Query, format = Uuid),
           ("pagina" = Option<i64>, Query, minimum = 1, maximum = 1000000, description = "From 1, default 1"),
           ("por_pagina" = Option<i64>, Query, minimum = 1, maximum = 200, description = "1–200, default 50")),
    responses(
        (status = 200, body = DeliveryList),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn list_deliveries(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<DeliveryList>, ApiError> {
    caller.require(Scope::EventsRead)?;
    let Query(params) = query.map_err(crate::extract::rejected_query)?;
    let page = deliveries::list(&state.pool, &caller.0, &params)
        .await
        .map_err(ApiError::in_query)?;
    Ok(Json(DeliveryList {
        entregas: page
            .deliveries
            .into_iter()
            .map(DeliveryView::from)
            .collect(),
        pagina: page.page,
        por_pagina: page.per_page,
        hay_mas: page.has_more,
    }))
}

/// One delivery with `intentos_detalle`, every attempt in order.
#[utoipa::path(get, path = "/v1/deliveries/{id}", tag = "deliveries",
    security(("api_key" = ["events:read"])),
    params(("id" = String, Path, format = Uuid, description = "Delivery id")),
    responses(
        (status = 200, body = DeliveryDetail),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
    ))]
pub(super) async fn get_delivery(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<DeliveryDetail>, ApiError> {
    caller.require(Scope::EventsRead)?;
    let id: DeliveryId = path_id(&id, "delivery")?;
    let found = deliveries::get(&state.pool, &caller.0, id).await?;
    Ok(Json(DeliveryDetail {
        entrega: found.delivery.into(),
        intentos_detalle: found.attempts.into_iter().map(AttemptView::from).collect(),
    }))
}
