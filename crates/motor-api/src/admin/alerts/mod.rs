//! `GET /v1/admin/alerts` and `POST /v1/admin/alerts/{id}/close`: what
//! the engine opened when it suspended a subscription.

mod dto;
mod handlers;

use motor_app::alerts;
use motor_store::Pool;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{error::ApiError, AppState};

pub use motor_app::alerts::MAX_ALERTS;

pub async fn list_alerts(pool: &Pool, query: &AlertQuery) -> Result<AlertList, ApiError> {
    let listed = alerts::list(pool, query.estado.as_deref(), query.app_id.as_deref())
        .await
        .map_err(ApiError::in_query)?;
    Ok(AlertList {
        alerts: listed.into_iter().map(Into::into).collect(),
    })
}

pub async fn close_alert(pool: &Pool, id: uuid::Uuid) -> Result<AlertOut, ApiError> {
    Ok(alerts::close(pool, id).await?.into())
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_alerts))
        .routes(routes!(handlers::close_alert))
}
