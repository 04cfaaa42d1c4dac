//! The HTTP handlers of the replays resource, named by what they do.

use axum::{
    body::Body,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
    Json,
};
use motor_domain::{AppId, Scope};

use super::{
    create_replay, idempotency_key, Access, CreateReplayBody, Replay, ReplayStatus, OPERATOR,
};
use crate::{
    auth::{Caller, Operator},
    error::ApiError,
    extract::{parse_json, path_id, read_body},
    AppState,
};

/// Sends events already in the ledger again: new delivery ids, the same
/// envelope (event_id, occurred_at), in the replay's own lane, only what
/// the subscription covers.
#[utoipa::path(post, path = "/v1/subscriptions/{id}/replays", tag = "subscriptions",
    security(("api_key" = ["deliveries:replay"])),
    params(("id" = String, Path, format = Uuid),
           ("Idempotency-Key" = String, Header, min_length = 1, max_length = 200, description = "Required, 1–200 characters; the same key with another request is a 409, with the same one the first answer")),
    request_body = CreateReplayBody,
    responses(
        (status = 202, body = Replay),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn request_replay(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Scope::DeliveriesReplay)?;
    let access = Access::from(&caller.0);
    let id = path_id(&id, "subscription")?;
    let key = idempotency_key(&headers)?;
    let input = parse_json(&read_body(body).await?)?;
    let replay = create_replay(&state.pool, &access, &caller.0.key_id, id, &key, input).await?;
    Ok((StatusCode::ACCEPTED, Json(replay)))
}

/// The same replay, asked for by the operator for one of the app's
/// subscriptions.
#[utoipa::path(post, path = "/v1/admin/apps/{id}/subscriptions/{sid}/replays", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid, description = "App id"), ("sid" = String, Path, format = Uuid, description = "Subscription id"),
           ("Idempotency-Key" = String, Header, min_length = 1, max_length = 200, description = "Required, 1–200 characters")),
    request_body = CreateReplayBody,
    responses(
        (status = 202, body = Replay),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn request_app_replay(
    _: Operator,
    State(state): State<AppState>,
    Path((app, id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let app: AppId = path_id(&app, "app")?;
    let access = Access::operator(&state.pool, app).await?;
    let id = path_id(&id, "subscription")?;
    let key = idempotency_key(&headers)?;
    let input = parse_json(&read_body(body).await?)?;
    let replay = create_replay(&state.pool, &access, OPERATOR, id, &key, input).await?;
    Ok((StatusCode::ACCEPTED, Json(replay)))
}

/// How far a replay has gone: its deliveries delivered, failed and still
/// pending. `motor replay` polls it for its progress bar; poll it to
/// follow a replay from anywhere.
#[utoipa::path(get, path = "/v1/subscriptions/{id}/replays/{replay_id}", tag = "subscriptions",
    security(("api_key" = ["deliveries:replay"]), ("api_key" = ["events:read"])),
    params(("id" = String, Path, format = Uuid), ("replay_id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = ReplayStatus),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
    ))]
pub(super) async fn get_replay(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, replay)): Path<(String, String)>,
) -> Result<Json<ReplayStatus>, ApiError> {
    if !caller.0.has(Scope::DeliveriesReplay) {
        caller.require(Scope::EventsRead)?;
    }
    let access = Access::from(&caller.0);
    let id = path_id(&id, "subscription")?;
    let replay = path_id(&replay, "replay")?;
    let progress = motor_app::replays::progress(&state.pool, &access, id, replay).await?;
    Ok(Json(progress.into()))
}
