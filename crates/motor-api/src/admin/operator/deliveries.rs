//! `GET /v1/admin/deliveries` and `GET /v1/admin/deliveries/{id}`: every
//! app's deliveries for the operator, filtered and paginated by cursor.

use std::collections::HashMap;

use axum::extract::{rejection::QueryRejection, Path, Query, State};
use axum::Json;
use motor_domain::{delivery::DeliveryId, time, FieldError};
use motor_store::{
    deliveries::read,
    operator_view::{self, OpDelivery},
};
use serde::Serialize;
use utoipa::ToSchema;

use super::query;
use crate::{auth::Operator, deliveries::AttemptView, error::ApiError, extract::path_id, AppState};

/// One delivery as the operator sees it (any app).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaOperador)]
pub struct OperatorDelivery {
    #[schema(format = Uuid)]
    pub delivery_id: String,
    #[schema(format = Uuid)]
    pub app_id: String,
    #[schema(format = Uuid)]
    pub suscripcion_id: String,
    pub suscripcion: String,
    #[schema(format = Uuid)]
    pub instance_id: String,
    pub instancia: String,
    #[schema(format = Uuid)]
    pub event_id: String,
    pub seq: i64,
    #[serde(rename = "type")]
    pub event_type: String,
    /// `live` or the replay's id.
    pub carril: String,
    /// `pendiente`, `entregada` or `fallida`.
    pub estado: String,
    pub intentos: i32,
    #[schema(format = DateTime)]
    pub proximo_intento_en: Option<String>,
    pub ultimo_status: Option<i32>,
    pub ultimo_error: Option<String>,
    #[schema(format = DateTime)]
    pub creada_en: String,
    #[schema(format = DateTime)]
    pub entregada_en: Option<String>,
}

impl From<OpDelivery> for OperatorDelivery {
    fn from(d: OpDelivery) -> Self {
        Self {
            delivery_id: d.id.to_string(),
            app_id: d.app_id.to_string(),
            suscripcion_id: d.subscription_id.to_string(),
            suscripcion: d.suscripcion,
            instance_id: d.instance_id.to_string(),
            instancia: d.instancia,
            event_id: d.event_id.to_string(),
            seq: d.seq,
            event_type: d.event_type,
            carril: d.lane,
            estado: d.estado,
            intentos: d.intentos,
            proximo_intento_en: d.proximo_intento.as_ref().map(time::format),
            ultimo_status: d.ultimo_status,
            ultimo_error: d.ultimo_error,
            creada_en: time::format(&d.creada_en),
            entregada_en: d.entregada_en.as_ref().map(time::format),
        }
    }
}

/// A page of deliveries, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaOperadorList)]
pub struct OperatorDeliveryList {
    pub entregas: Vec<OperatorDelivery>,
    /// Pass it as `cursor` for the next page; `null` on the last one.
    pub siguiente_cursor: Option<String>,
}

/// One delivery with its attempts.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaOperadorDetalle)]
pub struct OperatorDeliveryDetail {
    #[serde(flatten)]
    pub entrega: OperatorDelivery,
    pub intentos_detalle: Vec<AttemptView>,
}

/// The search, shared with the console.
pub async fn search(
    state: &AppState,
    params: &HashMap<String, String>,
) -> Result<OperatorDeliveryList, ApiError> {
    let filter = query::parse(params)?;
    let mut rows = operator_view::deliveries(&state.pool, &filter).await?;
    let more = rows.len() as i64 >= filter.limit;
    if more {
        rows.truncate((filter.limit - 1) as usize);
    }
    let siguiente_cursor = more
        .then(|| rows.last().map(|d| query::encode_cursor(d.id)))
        .flatten();
    Ok(OperatorDeliveryList {
        entregas: rows.into_iter().map(Into::into).collect(),
        siguiente_cursor,
    })
}

/// One delivery with its attempts, shared with the console.
pub async fn detail(state: &AppState, id: uuid::Uuid) -> Result<OperatorDeliveryDetail, ApiError> {
    let delivery = operator_view::delivery(&state.pool, id)
        .await?
        .ok_or(ApiError::NotFound("delivery"))?;
    let attempts = read::attempts(&state.pool, DeliveryId::from_uuid(id)).await?;
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
