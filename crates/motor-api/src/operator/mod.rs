//! The operator's view across apps (`MOTOR_ADMIN_TOKEN`, issue 15):
//! deliveries of every app with filters and cursor pagination, the DLQ
//! summarised and retried through the replay machinery, pause and
//! reactivate by subscription id, and the reconciliation report. The web
//! console (`crate::console`) calls the same functions.

pub mod deliveries;
pub mod dlq;
pub mod query;
pub mod reconcile;
pub mod subscriptions;

use axum::{
    routing::{get, post},
    Router,
};

use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/admin/deliveries", get(deliveries::get_deliveries))
        .route("/v1/admin/deliveries/{id}", get(deliveries::get_delivery))
        .route("/v1/admin/dlq", get(dlq::get_dlq))
        .route("/v1/admin/dlq/retry", post(dlq::post_retry))
        .route(
            "/v1/admin/subscriptions/{id}/pause",
            post(subscriptions::post_pause),
        )
        .route(
            "/v1/admin/subscriptions/{id}/reactivate",
            post(subscriptions::post_reactivate),
        )
        .route("/v1/admin/reconciliacion", get(reconcile::get_report))
}
