//! `GET/PATCH /v1/admin/settings`: the global settings (allowed
//! destinations, timeouts, retention, ...). Per-app allowed destinations
//! live on the app itself (`PATCH /v1/admin/apps/{id}`).

mod dto;
mod handlers;

use motor_app::settings;
use motor_store::Pool;
use serde_json::Value;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{error::ApiError, AppState};

pub async fn get_settings(pool: &Pool) -> Result<SettingsOut, ApiError> {
    Ok(settings::get(pool).await?.into())
}

/// Validates every key first, then stores them all in one transaction.
pub async fn update_settings(pool: &Pool, body: &Value) -> Result<SettingsOut, ApiError> {
    let settings = settings::update(pool, body)
        .await
        .map_err(ApiError::in_body)?;
    Ok(settings.into())
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(handlers::get_settings, handlers::update_settings))
}
