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

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(deliveries::get_deliveries))
        .routes(routes!(deliveries::get_delivery))
        .routes(routes!(dlq::get_dlq))
        .routes(routes!(dlq::post_retry))
        .routes(routes!(subscriptions::post_pause))
        .routes(routes!(subscriptions::post_reactivate))
        .routes(routes!(reconcile::get_report))
}
