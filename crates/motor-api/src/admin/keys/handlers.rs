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

#[utoipa::path(post, path = "/v1/admin/apps/{id}/keys", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")), request_body = CreateKey,
    responses((status = 201, body = CreatedKeyOut), (status = 401, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub(super) async fn create_key(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let app = path_id(&id, "app")?;
    let input = parse_json(&read_body(body).await?)?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedKeyOut::from(
            super::create_key(&state.pool, app, input).await?,
        )),
    ))
}

#[utoipa::path(get, path = "/v1/admin/apps/{id}/keys", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")),
    responses((status = 200, body = KeyList), (status = 401, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody)))]
pub(super) async fn list_keys(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<KeyList>, ApiError> {
    Ok(Json(
        super::list_keys(&state.pool, path_id(&id, "app")?).await?,
    ))
}

#[utoipa::path(delete, path = "/v1/admin/apps/{id}/keys/{key_id}", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid, description = "App id"), ("key_id" = String, Path)),
    responses((status = 204), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub(super) async fn revoke_key(
    _: Operator,
    State(state): State<AppState>,
    Path((id, key_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    super::revoke_key(&state.pool, path_id(&id, "app")?, &key_id).await?;
    state.api_keys.forget();
    Ok(StatusCode::NO_CONTENT)
}
