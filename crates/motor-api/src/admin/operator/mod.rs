//! The operator's view across apps (`MOTOR_ADMIN_TOKEN`, issue 15):
//! deliveries of every app with filters and cursor pagination, the DLQ
//! summarised and retried through the replay machinery, pause and
//! reactivate by subscription id, and the reconciliation report. The web
//! console (`crate::console`) calls the same functions.

pub mod deliveries;
pub mod dlq;
mod dto;
pub mod reconcile;
pub mod subscriptions;

use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(deliveries::list_all_deliveries))
        .routes(routes!(deliveries::get_any_delivery))
        .routes(routes!(dlq::get_dlq))
        .routes(routes!(dlq::retry_dlq))
        .routes(routes!(subscriptions::pause_subscription))
        .routes(routes!(subscriptions::reactivate_subscription))
        .routes(routes!(reconcile::get_report))
}
