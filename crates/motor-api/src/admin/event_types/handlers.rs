//! The HTTP handlers of the event catalogue, named by what they do.

use axum::{
    body::Body,
    extract::{Path, State},
    Json,
};

use super::{get_catalogue, set_catalogue, EventCatalogue};
use crate::{
    auth::Operator,
    error::ApiError,
    extract::{parse_json, path_id, read_body},
    AppState,
};

/// The app's closed catalogue of event types (`null`: open).
#[utoipa::path(get, path = "/v1/admin/apps/{id}/event-types", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = EventCatalogue),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
    ))]
pub(super) async fn get_event_types(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<EventCatalogue>, ApiError> {
    Ok(Json(
        get_catalogue(&state.pool, path_id(&id, "app")?).await?,
    ))
}

/// Sets the app's closed catalogue; `{"tipos": null}` opens it again.
#[utoipa::path(put, path = "/v1/admin/apps/{id}/event-types", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid)),
    request_body = EventCatalogue,
    responses(
        (status = 200, body = EventCatalogue),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn set_event_types(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<EventCatalogue>, ApiError> {
    let app = path_id(&id, "app")?;
    let input = parse_json(&read_body(body).await?)?;
    Ok(Json(set_catalogue(&state.pool, app, input).await?))
}
