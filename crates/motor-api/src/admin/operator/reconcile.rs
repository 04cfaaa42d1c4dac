//! `GET /v1/admin/reconciliacion`: a reconciliation pass now, with the
//! default thresholds (the report `motor doctor` prints). It does not
//! touch alerts: the sweeper role's job keeps those.

use axum::{extract::State, Json};
use motor_app::reconcile;

use super::ReportOut;
use crate::{auth::Operator, error::ApiError, AppState};

/// What is stuck now.
#[utoipa::path(get, path = "/v1/admin/reconciliacion", tag = "admin",
    security(("admin_token" = [])),
    responses(
        (status = 200, body = ReportOut),
        (status = 401, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn get_report(
    _: Operator,
    State(state): State<AppState>,
) -> Result<Json<ReportOut>, ApiError> {
    Ok(Json(reconcile::report(&state.pool).await?.into()))
}
