//! The HTTP handlers of the events resource, named by what they do.

use std::collections::HashMap;

use axum::{
    body::Body,
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use motor_app::events;
use motor_domain::{FieldError, Scope};
use motor_store::ledger::Appended;
use serde_json::Value;

use super::dto::{EventsInput, EventsOutput, LedgerPage};
use crate::{auth::Caller, error::ApiError, extract::read_body, AppState};

const IDEMPOTENCY_HEADER: &str = "idempotency-key";
const MAX_IDEMPOTENCY_KEY_CHARS: usize = 200;

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [("content-type", "application/json")], body).into_response()
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(raw) = headers.get(IDEMPOTENCY_HEADER) else {
        return Ok(None);
    };
    let invalid = || {
        ApiError::in_header(FieldError::invalid(
            "Idempotency-Key",
            format!("must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} printable characters"),
        ))
    };
    let key = raw.to_str().map_err(|_| invalid())?;
    let chars = key.chars().count();
    if chars == 0 || chars > MAX_IDEMPOTENCY_KEY_CHARS {
        return Err(invalid());
    }
    Ok(Some(key.to_owned()))
}

/// Appends one event or a batch of up to 500, in one transaction.
#[utoipa::path(post, path = "/v1/instances/{id}/events", tag = "events",
    security(("api_key" = ["events:write"])),
    params(("id" = String, Path, format = Uuid, description = "Instance id"),
           ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 200, description = "1–200 characters; the same key with another body is a 409")),
    request_body = EventsInput,
    responses(
        (status = 201, body = EventsOutput, description = "Stored (object in, object out; array in, array out)"),
        (status = 200, body = EventsOutput, description = "Nothing new: every source_id was already stored"),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody), (status = 413, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody, description = "The database is out of reach or every connection busy; retry after `Retry-After` seconds"),
    ))]
pub(super) async fn append_events(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let started = std::time::Instant::now();
    caller.require(Scope::EventsWrite)?;
    let instance = caller.writable_instance(&state, &id).await?;
    let key = idempotency_key(&headers)?;
    let bytes = read_body(body).await?;
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|e| ApiError::MalformedJson(e.to_string()))?;
    let answer = state
        .ledger
        .append(caller.0.app_id, instance, key.as_deref(), &value)
        .await
        .map_err(ApiError::in_body)?;
    if let Some(appended) = &answer.appended {
        count(&state, caller.0.app_id, instance, appended, started);
    }
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    Ok(json_response(status, answer.body))
}

fn count(
    state: &AppState,
    app: motor_domain::AppId,
    instance: motor_domain::InstanceId,
    appended: &Appended,
    started: std::time::Instant,
) {
    let m = &state.metrics;
    m.pipeline
        .ack_seconds
        .observe(started.elapsed().as_secs_f64());
    let duplicate = (appended.envelopes.len() - appended.stored) as u64;
    m.ingest_requests.inc();
    m.events_stored.inc_by(appended.stored as u64);
    m.events_duplicate.inc_by(duplicate);
    m.pipeline
        .accepted(app.to_string(), appended.stored as u64, duplicate);
    let instance = instance.to_string();
    for event_type in &appended.new_types {
        m.breakdown.accepted(&instance, event_type);
    }
    if tracing::enabled!(tracing::Level::DEBUG) {
        // The ids an attempt's span carries, so a trace joins ingest to
        // delivery (read back from the stored envelopes only when wanted).
        for envelope in &appended.envelopes {
            if let Ok(e) = serde_json::from_str::<Value>(envelope) {
                tracing::debug!(
                    app_id = %app,
                    event_id = e["event_id"].as_str(),
                    instance_id = e["instance_id"].as_str(),
                    seq = e["seq"].as_i64(),
                    "event accepted"
                );
            }
        }
    }
}

/// Pages through an instance's ledger in `seq` order.
#[utoipa::path(get, path = "/v1/instances/{id}/events", tag = "events",
    security(("api_key" = ["events:read"])),
    params(("id" = String, Path, format = Uuid, description = "Instance id"),
           ("after_seq" = Option<i64>, Query, minimum = 0, description = "Events after this seq (default 0)"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "1–500, default 100"),
           ("types" = Option<String>, Query, pattern = "^[^,\\s\\x00-\\x1f\\x7f-\\x9f](?:[^,\\x00-\\x1f\\x7f-\\x9f]{0,198}[^,\\s\\x00-\\x1f\\x7f-\\x9f])?(?:,[^,\\s\\x00-\\x1f\\x7f-\\x9f](?:[^,\\x00-\\x1f\\x7f-\\x9f]{0,198}[^,\\s\\x00-\\x1f\\x7f-\\x9f])?){0,19}$", description = "Comma list of up to 20 event types")),
    responses(
        (status = 200, body = LedgerPage),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn list_events(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    caller.require(Scope::EventsRead)?;
    let instance = caller.instance(&state, &id).await?;
    let Query(params) = query.map_err(crate::extract::rejected_query)?;
    let page = events::read_page(
        &state.pool,
        instance,
        params.get("after_seq").map(String::as_str),
        params.get("limit").map(String::as_str),
        params.get("types").map(String::as_str),
    )
    .await
    .map_err(ApiError::in_query)?;
    Ok(json_response(
        StatusCode::OK,
        format!(
            r#"{{"events":[{}],"next_after_seq":{},"has_more":{}}}"#,
            page.events.join(","),
            page.next_after_seq,
            page.has_more
        ),
    ))
}
