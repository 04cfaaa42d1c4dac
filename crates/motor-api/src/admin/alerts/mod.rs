//! `GET /v1/admin/alerts` and `POST /v1/admin/alerts/{id}/close`: what
//! the engine opened when it suspended a subscription.

mod dto;
mod handlers;

use motor_domain::{AppId, FieldError};
use motor_store::{alerts, Pool};
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{error::ApiError, AppState};

/// Most alerts in one listing.
pub const MAX_ALERTS: i64 = 500;

pub async fn list_alerts(pool: &Pool, query: &AlertQuery) -> Result<AlertList, ApiError> {
    let open = match query.estado.as_deref() {
        None => None,
        Some("abierta") => Some(true),
        Some("cerrada") => Some(false),
        Some(_) => {
            return Err(FieldError::invalid("query.estado", "must be abierta or cerrada").into())
        }
    };
    let app = query
        .app_id
        .as_deref()
        .map(|raw| {
            raw.parse::<AppId>()
                .map_err(|_| FieldError::invalid("query.app_id", "must be an app id"))
        })
        .transpose()?;
    Ok(AlertList {
        alerts: alerts::list(pool, open, app, MAX_ALERTS)
            .await?
            .into_iter()
            .map(Into::into)
            .collect(),
    })
}

pub async fn close_alert(pool: &Pool, id: uuid::Uuid) -> Result<AlertSchema, ApiError> {
    Ok(alerts::close(pool, id).await?.into())
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_alerts))
        .routes(routes!(handlers::close_alert))
}
