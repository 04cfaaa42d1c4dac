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

#[utoipa::path(post, path = "/v1/admin/apps/{id}/instances", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")), request_body = CreateInstance,
    responses((status = 201, body = InstanceOut), (status = 401, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub(super) async fn create_instance(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let app = path_id(&id, "app")?;
    let input = parse_json(&read_body(body).await?)?;
    Ok((
        StatusCode::CREATED,
        Json(InstanceOut::from(
            super::create_instance(&state.pool, app, input).await?,
        )),
    ))
}

#[utoipa::path(get, path = "/v1/admin/apps/{id}/instances", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")),
    responses((status = 200, body = InstanceList), (status = 401, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody)))]
pub(super) async fn list_instances(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<InstanceList>, ApiError> {
    Ok(Json(
        super::list_instances(&state.pool, path_id(&id, "app")?).await?,
    ))
}
