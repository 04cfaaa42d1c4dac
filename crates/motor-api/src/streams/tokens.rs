//! `POST /v1/instances/{id}/stream-tokens`: a short-lived token (at most
//! 60 s, one instance, read only) that opens that instance's stream as
//! `?token=` — for a browser, whose `EventSource` and `WebSocket` cannot
//! send an `Authorization` header. The grant itself is
//! `motor_domain::stream_token`; [`StreamCaller`] is the stream route's
//! extractor that takes either kind of credential. No other route reads
//! `?token=`, and a stream token is no API key: as a bearer anywhere it is
//! a 401.

use axum::{
    body::Body,
    extract::{FromRequestParts, Path, State},
    http::{header::AUTHORIZATION, request::Parts, StatusCode},
    response::IntoResponse,
    Json,
};
use motor_domain::{
    principal::Principal,
    stream_token::{StreamGrant, StreamTokenError, MAX_LIFETIME_SECS},
    time::{serde_ts, Timestamp},
    FieldError, InstanceId, Scope,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    auth::Caller,
    error::ApiError,
    extract::{parse_json, read_body},
    AppState,
};

/// The optional request body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateStreamToken {
    /// How long the token opens streams, 1–60 s (default 60).
    #[schema(minimum = 1, maximum = 60)]
    #[serde(rename = "segundos")]
    pub seconds: Option<i64>,
}

/// A stream token: pass it as `?token=` on the instance's stream URL.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StreamToken {
    /// `mst_…`; opens `GET /v1/instances/{id}/events/stream?token=…`
    /// (Server-Sent Events or WebSocket) of this instance only.
    pub token: String,
    #[schema(value_type = String, format = Uuid)]
    #[serde(rename = "instancia_id")]
    pub instance_id: InstanceId,
    /// After this instant the token opens nothing (a stream already open
    /// goes on).
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    #[serde(rename = "vence_en")]
    pub expires_at: Timestamp,
}

/// Issues a token that opens this instance's event stream for up to 60 s,
/// for a browser (`EventSource`, `WebSocket`) that cannot send an
/// `Authorization` header: `GET /v1/instances/{id}/events/stream?token=…`.
/// It reads that one instance's stream and nothing else — every other
/// route, and other instances' streams, refuse it. It is checked when a
/// stream opens: a stream already open goes on after it lapses, and a
/// client that reconnects later asks for a new one. Sealed with the master
/// key; when a stream opens with it, the issuing key must still be live:
/// once that key is revoked or expired the token opens nothing (401), and
/// a stream already open goes on.
#[utoipa::path(post, path = "/v1/instances/{id}/stream-tokens", tag = "events",
    security(("api_key" = ["events:read"])),
    params(("id" = String, Path, format = Uuid, description = "Instance id")),
    request_body(content = Option<CreateStreamToken>, description = "Optional; `{}` or no body gives 60 s"),
    responses(
        (status = 201, body = StreamToken),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn create_stream_token(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Scope::EventsRead)?;
    let instance = caller.instance(&state, &id).await?;
    let bytes = read_body(body).await?;
    let input: CreateStreamToken = if bytes.iter().all(u8::is_ascii_whitespace) {
        CreateStreamToken::default()
    } else {
        parse_json(&bytes)?
    };
    let seconds = input.seconds.unwrap_or(MAX_LIFETIME_SECS);
    if !(1..=MAX_LIFETIME_SECS).contains(&seconds) {
        return Err(FieldError::invalid(
            "body.segundos",
            format!("between 1 and {MAX_LIFETIME_SECS}"),
        )
        .into());
    }
    let expires = chrono::Utc::now() + chrono::TimeDelta::seconds(seconds);
    let grant = StreamGrant {
        app: caller.0.app_id,
        instance,
        key_id: caller.0.key_id.clone(),
        expires_at: expires.timestamp(),
    };
    let token = StreamToken {
        token: grant.issue(&state.sealing),
        instance_id: instance,
        expires_at: expires,
    };
    Ok((StatusCode::CREATED, Json(token)))
}

/// Who opens a stream: an API key (`Authorization: Bearer`), or, when the
/// request has none, a stream token (`?token=`) standing for a key that may
/// read only the token's instance.
pub struct StreamCaller(pub Caller);

impl FromRequestParts<AppState> for StreamCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if parts.headers.contains_key(AUTHORIZATION) {
            return Ok(Self(Caller::from_request_parts(parts, state).await?));
        }
        let Some(token) = query_token(parts) else {
            return Caller::from_request_parts(parts, state).await.map(Self);
        };
        let grant = StreamGrant::open(&state.sealing, &token, chrono::Utc::now().timestamp())
            .map_err(|e| match e {
                StreamTokenError::Invalid => {
                    ApiError::Unauthenticated("not a stream token Motor issued")
                }
                StreamTokenError::Expired => {
                    ApiError::Unauthenticated("the stream token expired; ask for a new one")
                }
            })?;
        // The token stands for its key: a key revoked or expired since it
        // was issued opens nothing (one probe of the key, at open only).
        if !motor_app::keys::is_live(&state.pool, grant.app, &grant.key_id).await? {
            return Err(ApiError::Unauthenticated(
                "the API key that issued this stream token is revoked or expired",
            ));
        }
        Ok(Self(Caller(Principal {
            key_id: format!("stream-token:{}", grant.key_id),
            app_id: grant.app,
            scopes: vec![Scope::EventsRead],
            instances: vec![grant.instance],
            read_scopes: vec![],
        })))
    }
}

/// The `token` query parameter, decoded.
fn query_token(parts: &Parts) -> Option<String> {
    let query = parts.uri.query()?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "token")
        .map(|(_, value)| value.into_owned())
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create_stream_token))
}
