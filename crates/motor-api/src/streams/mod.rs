//! `GET /v1/instances/{id}/events/stream`: an instance's events as
//! Server-Sent Events or, with an upgrade, WebSocket text frames, resumable
//! by cursor. `hub` is the one live tail of the process, `follow` one
//! client's catch-up and hand-over, `sse` and `ws` the two framings.

pub mod follow;
pub mod hub;
pub mod sse;
pub mod tokens;
pub mod ws;

use std::collections::HashMap;

use axum::{
    extract::{
        rejection::QueryRejection,
        ws::{rejection::WebSocketUpgradeRejection, WebSocketUpgrade},
        Path, Query, State,
    },
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use motor_app::{
    streams::{self, Opening},
    AppError,
};
use motor_domain::{
    stream::{StreamQuery, CURSOR_PARAMETER, LAST_EVENT_ID},
    FieldError, Scope,
};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

pub use hub::{Hub, StreamsConfig};

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{error::ApiError, AppState};
use tokens::StreamCaller;

/// Seconds a client refused for lack of slots is told to wait.
const RETRY_AFTER_SECS: u32 = 5;

/// One Server-Sent Events message as a client parses it (OpenAPI 3.1 has
/// a `text/event-stream` schema describe each message): the opening `id: N`
/// with no data and the comments are not messages.
#[derive(ToSchema)]
#[allow(dead_code)] // documentation only: sse.rs writes the frames
pub struct SseMessage {
    /// The event's `seq`: the cursor to resume after it.
    #[schema(pattern = "^[0-9]+$")]
    id: String,
    /// The event's `type`.
    event: String,
    /// The event's envelope, JSON on one line.
    data: String,
}

/// 410: the cursor is older than the resumption window.
#[derive(Serialize, ToSchema)]
pub struct CursorExpired {
    /// `code` is `cursor_vencido`.
    pub error: crate::error::ErrorDetail,
    /// The first cursor that can be resumed (`?desde=` it, or restart
    /// with `desde=0`).
    pub primer_cursor: i64,
}

/// Follows an instance's events: Server-Sent Events by default, WebSocket
/// with an upgrade.
///
/// **Server-Sent Events** (`text/event-stream`): the stream opens with
/// `: motor stream cursor=N` and `id: N` (no data: it only sets the
/// client's last event id to the start position). Then one message per
/// event — `id: <seq>`, `event: <type>`, `data: <envelope>` (the ledger's
/// bytes, one line) — and a `: ping` comment after 15 s without events.
/// When the server ends the stream it sends a last comment
/// `: fin motivo=<lento|apagado|error> cursor=N`: resume with
/// `Last-Event-ID: N` (or `?desde=N`), on this process or another.
/// `lento`: the client fell more than the buffer behind the live events.
///
/// **WebSocket** (`Upgrade: websocket`): one text frame per envelope, a
/// ping every 15 s. The server ends with a close frame whose reason is
/// `motivo=<…> cursor=N` (1001 at shutdown, 1013 for a slow reader, 1011
/// on error); the client's close is answered.
///
/// **Browsers**: `EventSource` and `WebSocket` cannot send an
/// `Authorization` header; open the stream with `?token=` and a stream
/// token (`POST /v1/instances/{id}/stream-tokens`, 60 s, this instance
/// only). Without an `Authorization` header the token is what
/// authenticates; with one, the header does.
///
/// **Cursor**: the `seq` of the last event received. `desde=N` or
/// `Last-Event-ID: N` (the header wins) resumes with the event after N;
/// `desde=0` starts at the first event still resumable; neither starts
/// with events committed after the request. Catch-up from the ledger then
/// live, with no gap and no duplicate. A cursor whose next event is older
/// than `streams.retencion_horas` is a 410 with `primer_cursor`.
#[utoipa::path(get, path = "/v1/instances/{id}/events/stream", tag = "events",
    security(("api_key" = ["events:read"])),
    params(("id" = String, Path, format = Uuid, description = "Instance id"),
           ("desde" = Option<i64>, Query, minimum = 0, description = "Resume after this cursor (the seq of the last event received); 0 = from the first resumable event"),
           ("Last-Event-ID" = Option<i64>, Header, minimum = 0, description = "As `desde`, and wins over it (what EventSource sends on reconnect)"),
           ("token" = Option<String>, Query, description = "A stream token (`mst_…`, from `POST /v1/instances/{id}/stream-tokens`) instead of the Authorization header, for browsers; it opens this instance's stream only"),
           ("types" = Option<String>, Query, pattern = "^[^,\\s\\x00-\\x1f\\x7f-\\x9f](?:[^,\\x00-\\x1f\\x7f-\\x9f]{0,198}[^,\\s\\x00-\\x1f\\x7f-\\x9f])?(?:,[^,\\s\\x00-\\x1f\\x7f-\\x9f](?:[^,\\x00-\\x1f\\x7f-\\x9f]{0,198}[^,\\s\\x00-\\x1f\\x7f-\\x9f])?){0,19}$", description = "Comma list of up to 20 event types")),
    responses(
        (status = 200, content_type = "text/event-stream", body = SseMessage,
         description = "Server-Sent Events: `id: <seq>`, `event: <type>`, `data: <envelope>` per event; `: ping` heartbeats; a last `: fin motivo=… cursor=N` comment"),
        (status = 101, description = "WebSocket: one text frame per envelope; pings every 15 s; close reason `motivo=… cursor=N`"),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 410, body = CursorExpired, description = "The cursor is older than the resumption window (`cursor_vencido`)"),
        (status = 422, body = crate::error::ErrorBody, description = "Bad cursor (`campo` `query.desde` or `header.Last-Event-ID`) or types"),
        (status = 503, body = crate::error::ErrorBody, description = "Every stream slot of this process is taken; see `Retry-After`"),
    ))]
async fn get_stream(
    State(state): State<AppState>,
    StreamCaller(caller): StreamCaller,
    Path(id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    caller.require(Scope::EventsRead)?;
    let instance = caller.instance(&state, &id).await?;
    let Query(params) = query.map_err(crate::extract::rejected_query)?;
    let last_event_id = match headers.get("last-event-id") {
        None => None,
        Some(raw) => Some(raw.to_str().map_err(|_| {
            ApiError::in_header(FieldError::invalid(
                LAST_EVENT_ID,
                "must be a cursor (an integer >= 0)",
            ))
        })?),
    };
    let query = StreamQuery::parse(
        params.get(CURSOR_PARAMETER).map(String::as_str),
        last_event_id,
        params.get("types").map(String::as_str),
    )
    .map_err(cursor_error)?;
    let wants_socket = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let upgrade = match (wants_socket, upgrade) {
        (false, _) => None,
        (true, Ok(upgrade)) => Some(upgrade),
        (true, Err(rejection)) => return Ok(rejection.into_response()),
    };

    let hub = &state.streams;
    let Some(slot) = hub.admit() else {
        return Ok(unavailable());
    };
    // Subscribe first, then read where the ledger ends: every later event
    // comes live, every earlier one from the catch-up.
    let live = hub.follow(instance).await?;
    let (position, last) = match streams::open(&state.pool, instance, query.start, last_event_id)
        .await
        .map_err(cursor_error)?
    {
        Opening::From { position, last } => (position, last),
        Opening::Expired {
            cursor,
            first_resumable,
        } => return Ok(expired(cursor, first_resumable)),
    };
    let types = query.types.iter().map(|t| t.as_str().to_owned()).collect();
    let follower = follow::Follower::new(hub.clone(), instance, types, position, last, live, slot);
    Ok(match upgrade {
        Some(upgrade) => {
            let hub = hub.clone();
            upgrade.on_upgrade(move |socket| async move {
                hub.spawn_socket(ws::serve(socket, follower));
            })
        }
        None => sse::response(follower),
    })
}

/// A bad stream request: the `Last-Event-ID` header's cursor, or one of
/// the query's parameters (`desde`, `types`).
fn cursor_error(e: impl Into<AppError>) -> ApiError {
    match e.into() {
        AppError::Invalid(e) if e.field == LAST_EVENT_ID => ApiError::in_header(e),
        e => ApiError::in_query(e),
    }
}

fn expired(cursor: i64, primer: i64) -> Response {
    let body = json!({
        "error": {
            "code": "cursor_vencido",
            "message": format!(
                "cursor {cursor} is older than the resumption window \
                 (streams.retencion_horas); resume from primer_cursor"
            ),
        },
        "primer_cursor": primer,
    });
    (StatusCode::GONE, Json(body)).into_response()
}

fn unavailable() -> Response {
    let body = json!({
        "error": {
            "code": "no_disponible",
            "message": "this process has no stream slot free; retry later or on another process",
        },
    });
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, RETRY_AFTER_SECS.to_string())],
        Json(body),
    )
        .into_response()
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_stream))
        .merge(tokens::router())
}
