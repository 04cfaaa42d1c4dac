//! The HTTP handlers of the settings, named like the operations they
//! answer with.

use axum::{body::Body, extract::State, Json};
use serde_json::Value;

use super::{SettingsOut, SettingsPatch};
use crate::{
    auth::Operator,
    error::ApiError,
    extract::{parse_json, read_body},
    AppState,
};

/// The settings in force, defaults included.
#[utoipa::path(get, path = "/v1/admin/settings", tag = "admin",
    security(("admin_token" = [])),
    responses((status = 200, body = crate::admin::settings::SettingsOut), (status = 401, body = crate::error::ErrorBody)))]
pub(super) async fn get_settings(
    _: Operator,
    State(state): State<AppState>,
) -> Result<Json<SettingsOut>, ApiError> {
    Ok(Json(super::get_settings(&state.pool).await?))
}

/// Changes any of the settings; every key is checked against its range
/// before anything is stored.
#[utoipa::path(patch, path = "/v1/admin/settings", tag = "admin",
    security(("admin_token" = [])),
    request_body = SettingsPatch,
    responses(
        (status = 200, body = crate::admin::settings::SettingsOut),
        (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn update_settings(
    _: Operator,
    State(state): State<AppState>,
    body: Body,
) -> Result<Json<SettingsOut>, ApiError> {
    let value: Value = parse_json(&read_body(body).await?)?;
    Ok(Json(super::update_settings(&state.pool, &value).await?))
}
