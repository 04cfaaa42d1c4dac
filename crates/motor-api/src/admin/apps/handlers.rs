//! The HTTP handlers of this resource, named by what they do.

use axum::{
    body::Body,
    extract::{Path, State},
    http::StatusCode,
    response::IntoResponse,
    Json,
};

use super::*;
use crate::{
    auth::Operator,
    error::ApiError,
    extract::{parse_json, path_id, read_body},
    AppState,
};

// ---- HTTP handlers --------------------------------------------------------

#[utoipa::path(post, path = "/v1/admin/apps", tag = "admin",
    security(("admin_token" = [])), request_body = CreateApp,
    responses((status = 201, body = AppOut),
              (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub(super) async fn create_app(
    _: Operator,
    State(state): State<AppState>,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let input = parse_json(&read_body(body).await?)?;
    Ok((
        StatusCode::CREATED,
        Json(AppOut::from(super::create_app(&state.pool, input).await?)),
    ))
}

#[utoipa::path(get, path = "/v1/admin/apps", tag = "admin",
    security(("admin_token" = [])),
    responses((status = 200, body = AppList), (status = 401, body = crate::error::ErrorBody)))]
pub(super) async fn list_apps(
    _: Operator,
    State(state): State<AppState>,
) -> Result<Json<AppList>, ApiError> {
    Ok(Json(super::list_apps(&state.pool).await?))
}

#[utoipa::path(get, path = "/v1/admin/apps/{id}", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")),
    responses((status = 200, body = AppOut),
              (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub(super) async fn get_app(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<AppOut>, ApiError> {
    Ok(Json(
        super::get_app(&state.pool, path_id(&id, "app")?)
            .await?
            .into(),
    ))
}

#[utoipa::path(patch, path = "/v1/admin/apps/{id}", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")), request_body = UpdateApp,
    responses((status = 200, body = AppOut), (status = 401, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub(super) async fn update_app(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<AppOut>, ApiError> {
    let app = path_id(&id, "app")?;
    let input = parse_json(&read_body(body).await?)?;
    Ok(Json(
        super::update_app(&state.pool, app, input).await?.into(),
    ))
}
