//! `GET /v1/admin/reconciliacion`: a reconciliation pass now, with the
//! default thresholds (the report `motor doctor` prints). It does not
//! touch alerts: the sweeper role's job keeps those.

use motor_domain::time::Timestamp;
use serde::Serialize;
use utoipa::ToSchema;

use axum::{extract::State, Json};
use motor_domain::reconcile::{Report, Thresholds};
use motor_store::reconcile;

use crate::{auth::Operator, error::ApiError, AppState};

/// What is stuck now.
#[utoipa::path(get, path = "/v1/admin/reconciliacion", tag = "admin",
    security(("admin_token" = [])),
    responses(
        (status = 200, body = crate::admin::operator::reconcile::ReportSchema),
        (status = 401, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn get_report(
    _: Operator,
    State(state): State<AppState>,
) -> Result<Json<Report>, ApiError> {
    Ok(Json(
        reconcile::find(&state.pool, Thresholds::default()).await?,
    ))
}

// ---- OpenAPI schemas of the domain types this resource answers with -----
//
// The domain crate knows no OpenAPI: these mirror its types field for
// field (the snapshot and drift tests compare them with real answers).

/// Thresholds past which work counts as stuck.
#[derive(Serialize, ToSchema)]
#[schema(as = Umbrales)]
pub struct ThresholdsSchema {
    /// A due `pendiente` delivery with no live job (no lease) for this long.
    pub pendiente_segundos: u64,
    /// An ordered lane whose head has been the same delivery for this long.
    pub carril_segundos: u64,
    /// An outbox row not published for this long.
    pub outbox_segundos: u64,
}

/// A due `pendiente` delivery nothing is working on.
#[derive(Serialize, ToSchema)]
#[schema(as = EntregaSinTrabajo)]
pub struct StrandedDeliverySchema {
    #[schema(format = Uuid)]
    pub delivery_id: String,
    #[schema(format = Uuid)]
    pub suscripcion_id: String,
    #[schema(format = Uuid)]
    pub app_id: String,
    #[schema(format = Uuid)]
    pub instancia_id: String,
    pub seq: i64,
    /// When it was due.
    #[schema(value_type = String, format = DateTime)]
    pub vencida_en: Timestamp,
}

/// An ordered lane whose head has not moved.
#[derive(Serialize, ToSchema)]
#[schema(as = CarrilDetenido)]
pub struct StalledLaneSchema {
    #[schema(format = Uuid)]
    pub suscripcion_id: String,
    #[schema(format = Uuid)]
    pub app_id: String,
    #[schema(format = Uuid)]
    pub instancia_id: String,
    /// `live` or the replay's id.
    pub carril: String,
    /// The head: the lowest open seq of the lane.
    #[schema(format = Uuid)]
    pub delivery_id: String,
    pub seq: i64,
    pub intentos: i32,
    pub ultimo_error: Option<String>,
    /// Since when this delivery has been the lane's head (as reconciliation
    /// observed it).
    #[schema(value_type = String, format = DateTime)]
    pub cabeza_desde: Timestamp,
}

/// The outbox is behind: rows older than the threshold.
#[derive(Serialize, ToSchema)]
#[schema(as = OutboxAtrasado)]
pub struct OutboxBacklogSchema {
    /// Rows older than the threshold (counted up to 100 000).
    pub filas: i64,
    pub antiguedad_segundos: f64,
}

/// One reconciliation pass.
#[derive(Serialize, ToSchema)]
#[schema(as = Report)]
pub struct ReportSchema {
    /// `true` when nothing is stuck.
    pub ok: bool,
    pub umbrales: ThresholdsSchema,
    pub pendientes_sin_trabajo: Vec<StrandedDeliverySchema>,
    pub carriles_detenidos: Vec<StalledLaneSchema>,
    pub outbox_atrasado: Option<OutboxBacklogSchema>,
}
