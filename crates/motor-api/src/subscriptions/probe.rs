//! `POST /v1/subscriptions/{id}/test`: one signed `webhook.test` to the
//! subscription's URL (or broker: published like a delivery, `status` 200
//! for the broker's ack), outside the ledger, answered as `{ok, status,
//! duracion_ms, error}` with the contract's sanitised error codes. It sends
//! exactly as a delivery does — same headers, signed under the
//! subscription's profile (`firma`) with the live keys, no redirects, the
//! `webhooks.timeout_segundos` timeout, at most 4 KB of the answer read —
//! and checks the address actually connected to: a name
//! that resolves to a blocked or loopback address is refused. It is the
//! dispatcher's own attempt (`motor_destinations::attempt`), so `/test`
//! tests what production does.

use axum::{
    extract::{Path, State},
    Json,
};
use bytes::Bytes;
use motor_destinations::{attempt, Attempt};
use motor_domain::{
    credentials::{credentials_aad, BrokerCredentials},
    delivery::Outcome,
    destination::Destination,
    envelope::{Envelope, SCHEMA_VERSION},
    keyring,
    subscription::SubscriptionId,
    time, EventId, InstanceId, Origin,
};
use motor_store::{operator, settings, subscriptions as store};
use serde::Serialize;
use utoipa::ToSchema;

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    auth::Caller,
    error::ApiError,
    extract::path_id,
    subscriptions::rules::refuse_deleted,
    subscriptions::{manager, Access},
    AppState,
};

pub use motor_destinations::webhook::{MAX_RESPONSE_BYTES, USER_AGENT};
pub const TEST_EVENT_TYPE: &str = "webhook.test";

/// The outcome of a test request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct TestResult {
    /// `true` with a 2xx.
    pub ok: bool,
    /// The receiver's HTTP status, when it answered. For a broker
    /// destination: 200 when the broker confirmed the message (RabbitMQ
    /// publisher-confirm `Ack`, JetStream publish ack), 202 when core NATS
    /// took it (`brokers.nats_sin_jetstream`), `null` otherwise.
    pub status: Option<u16>,
    #[serde(rename = "duracion_ms")]
    pub duration_ms: u64,
    /// A sanitised code (`http_500`, `timeout`, `conexion_rechazada`, …);
    /// `null` when `ok`.
    #[schema(example = "http_503")]
    pub error: Option<String>,
}

pub async fn test_subscription(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
) -> Result<TestResult, ApiError> {
    let mut conn = state.pool.acquire().await?;
    let sub = store::get(&mut conn, access.app, id).await?;
    access.check_visible(&sub)?;
    refuse_deleted(&sub)?;
    let config = settings::load(&mut *conn).await?;
    let app = operator::get_app(&mut *conn, access.app).await?;
    let sealed = store::live_keys(&mut *conn, id).await?;
    let sealed_credentials = store::sealed_credentials(&mut *conn, id).await?;
    let instances = operator::list_instances(&mut *conn, access.app).await?;
    drop(conn);

    let destination = Destination::parse(&sub.url, "url").ok();
    let keys = keyring::open_live(&state.sealing, id, &sealed, chrono::Utc::now());
    let credentials = sealed_credentials.and_then(|sealed| {
        let plain = state
            .sealing
            .open(&sealed, &credentials_aad(id.as_uuid()))
            .ok()?;
        BrokerCredentials::from_plaintext(&plain)
    });
    for key in &keys.unopened {
        tracing::error!(key = %key, subscription = %id, "a signing key does not open");
    }

    // The test event: covered by the subscription, never in the ledger
    // (seq 0, a fresh event id).
    let instance = sub
        .instances
        .first()
        .and_then(|i| instances.iter().find(|x| x.id == *i))
        .or_else(|| instances.first());
    let now = time::now_millis();
    let envelope = Envelope {
        schema_version: SCHEMA_VERSION,
        event_id: EventId::new(),
        instance_id: instance.map_or(InstanceId::from_uuid(uuid::Uuid::nil()), |i| i.id),
        seq: 0,
        event_type: TEST_EVENT_TYPE.into(),
        occurred_at: now,
        received_at: now,
        generation: instance.map_or(1, |i| i.generation),
        origin: Origin::Operator,
        command_id: None,
        data: serde_json::json!({"prueba": true}),
    };
    let delivery_id = uuid::Uuid::now_v7().to_string();
    let report = attempt(
        &state.destinations,
        Attempt {
            destination: destination.as_ref(),
            allowed: &[&config.allowed_destinations, &app.allowed_destinations],
            policy: app.destination_policy,
            keys: &keys.keys,
            profile: sub.signature,
            event_id: envelope.event_id,
            delivery_id: &delivery_id,
            replay_of: None,
            envelope: Bytes::from(envelope.to_json()),
            timeout_seconds: config.timeout_seconds,
            credentials: credentials.as_ref(),
            nats_without_jetstream: config.nats_without_jetstream,
        },
    )
    .await;
    // Read as a delivery's attempt is: the same sanitised codes.
    let outcome = report.outcome(chrono::Utc::now());
    Ok(TestResult {
        ok: outcome == Outcome::Delivered,
        status: report.status(),
        duration_ms: report.duration.as_millis() as u64,
        error: outcome.error().map(|e| e.to_string()),
    })
}

/// Sends a signed `webhook.test` (not stored in the ledger) and answers how
/// the receiver took it.
#[utoipa::path(post, path = "/v1/subscriptions/{id}/test", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = TestResult),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn send_test(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<TestResult>, ApiError> {
    let access = manager(&caller)?;
    let id = path_id(&id, "subscription")?;
    Ok(Json(test_subscription(&state, &access, id).await?))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(send_test))
}
