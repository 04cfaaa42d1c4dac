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
use motor_app::subscriptions::probe::{self, ProbeReport};
use serde::Serialize;
use utoipa::ToSchema;

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    auth::Caller,
    error::ApiError,
    extract::path_id,
    subscriptions::{manager, Access},
    AppState,
};

pub use motor_app::subscriptions::probe::TEST_EVENT_TYPE;
pub use motor_destinations::webhook::{MAX_RESPONSE_BYTES, USER_AGENT};

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

impl From<ProbeReport> for TestResult {
    fn from(r: ProbeReport) -> Self {
        Self {
            ok: r.ok,
            status: r.status,
            duration_ms: r.duration.as_millis() as u64,
            error: r.error,
        }
    }
}

pub async fn test_subscription(
    state: &AppState,
    access: &Access,
    id: motor_domain::subscription::SubscriptionId,
) -> Result<TestResult, ApiError> {
    let report = probe::test(&state.pool, &state.sealing, &state.destinations, access, id).await?;
    Ok(report.into())
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
