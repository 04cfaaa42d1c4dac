//! `POST /v1/subscriptions/{id}/test`: one signed `webhook.test` to the
//! subscription's URL, outside the ledger, answered as `{ok, status,
//! duracion_ms, error}` with the contract's sanitised error codes. It sends
//! exactly as a delivery does — same headers, signatures from the live keys,
//! no redirects, the `webhooks.timeout_segundos` timeout, at most 4 KB of
//! the answer read — and checks the address actually connected to: a name
//! that resolves to a blocked or loopback address is refused.
//!
//! The delivery engine's webhook destination should take this sender over.

use std::{
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use axum::{
    extract::{Path, State},
    routing::post,
    Json, Router,
};
use motor_domain::{
    destination::{canonical_ip, is_blocked_ip, WebhookUrl},
    envelope::{Envelope, SCHEMA_VERSION},
    signature::{self, SigningKey},
    subscription::{Estado, SubscriptionId},
    time, EventId, InstanceId, Origin,
};
use motor_store::{operator, settings, subscriptions as store};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{
    auth::Caller,
    error::ApiError,
    extract::path_id,
    subscriptions::{manager, Access},
    AppState,
};

pub const USER_AGENT: &str = "motor-whatsapp/webhooks";
/// Most bytes of a receiver's answer Motor reads (and discards).
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024;
pub const TEST_EVENT_TYPE: &str = "webhook.test";

/// The outcome of a test request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct TestResult {
    /// `true` with a 2xx.
    pub ok: bool,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    pub duracion_ms: u64,
    /// A sanitised code (`http_500`, `timeout`, `conexion_rechazada`, …);
    /// `null` when `ok`.
    #[schema(example = "http_503")]
    pub error: Option<String>,
}

/// A name resolved to an address Motor never connects to.
#[derive(Debug, thiserror::Error)]
#[error("destino_bloqueado")]
struct BlockedAddress;

#[derive(Debug, thiserror::Error)]
#[error("dns")]
struct DnsFailure;

/// Resolves with the system resolver and refuses the whole answer if any
/// address is blocked or loopback (a literal loopback IP in the URL never
/// reaches a resolver; it must be listed literally).
struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|_| Box::new(DnsFailure) as Box<dyn std::error::Error + Send + Sync>)?
                .collect();
            if addrs.is_empty() {
                return Err(Box::new(DnsFailure) as _);
            }
            if addrs.iter().any(|a| {
                let ip = canonical_ip(a.ip());
                is_blocked_ip(ip) || ip.is_loopback()
            }) {
                return Err(Box::new(BlockedAddress) as _);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The sanitised code of a failed request: never a URL or a body. Typed
/// causes are looked for first, along the whole chain; only then the causes'
/// messages (never the top one, which carries the URL).
fn error_code(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        return "timeout";
    }
    let is_connect = e.is_connect();
    let chain = || std::iter::successors(std::error::Error::source(e), |err| err.source());
    for err in chain() {
        if err.downcast_ref::<BlockedAddress>().is_some() {
            return "destino_bloqueado";
        }
        if err.downcast_ref::<DnsFailure>().is_some() {
            return "dns";
        }
        // An io::Error's source() skips its own payload: unwrap by hand.
        let mut io = err.downcast_ref::<std::io::Error>();
        while let Some(e) = io {
            use std::io::ErrorKind::*;
            match e.kind() {
                ConnectionRefused => return "conexion_rechazada",
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                    return "conexion_cortada"
                }
                TimedOut => return "timeout",
                // Bytes that are not TLS while connecting: rustls says so
                // with InvalidData.
                InvalidData if is_connect => return "tls",
                _ => {}
            }
            io = e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<std::io::Error>());
        }
    }
    for err in chain() {
        let text = err.to_string().to_ascii_lowercase();
        if text.contains("certificate") || text.contains("tls") || text.contains("handshake") {
            return "tls";
        }
        if text.contains("connection closed") || text.contains("incomplete message") {
            return "conexion_cortada";
        }
    }
    "red"
}

/// Sends one signed request and reads at most 4 KB of the answer.
async fn send(
    url: &str,
    timeout: Duration,
    headers: &[(&str, String)],
    body: String,
) -> Result<u16, &'static str> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .dns_resolver(Arc::new(GuardedResolver))
        .user_agent(USER_AGENT)
        .build()
        .map_err(|_| "red")?;
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let mut response = request.send().await.map_err(|e| error_code(&e))?;
    let status = response.status().as_u16();
    let mut read = 0;
    while read < MAX_RESPONSE_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => read += chunk.len(),
            Ok(None) => break,
            // The status is what counts; a body cut short changes nothing.
            Err(_) => break,
        }
    }
    Ok(status)
}

pub async fn test_subscription(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
) -> Result<TestResult, ApiError> {
    let mut conn = state.pool.acquire().await?;
    let sub = store::get(&mut conn, access.app, id).await?;
    access.check_visible(&sub)?;
    if sub.estado == Estado::Eliminada {
        return Err(ApiError::Conflict(
            "the subscription was deleted; create a new one".into(),
        ));
    }
    let config = settings::load(&mut *conn).await?;
    let app = operator::get_app(&mut *conn, access.app).await?;
    let sealed = store::live_keys(&mut *conn, id).await?;
    let instances = operator::list_instances(&mut *conn, access.app).await?;
    drop(conn);

    let started = Instant::now();
    let result = |outcome: Result<u16, &str>| {
        let duracion_ms = started.elapsed().as_millis() as u64;
        match outcome {
            Ok(status) if (200..300).contains(&status) => TestResult {
                ok: true,
                status: Some(status),
                duracion_ms,
                error: None,
            },
            Ok(status) => TestResult {
                ok: false,
                status: Some(status),
                duracion_ms,
                error: Some(if (300..400).contains(&status) {
                    "redireccion".into()
                } else {
                    format!("http_{status}")
                }),
            },
            Err(code) => TestResult {
                ok: false,
                status: None,
                duracion_ms,
                error: Some(code.to_owned()),
            },
        }
    };

    let Ok(url) = WebhookUrl::parse(&sub.url, "url") else {
        return Ok(result(Err("url")));
    };
    let allowed = config
        .destinos_permitidos
        .iter()
        .chain(&app.destinos_permitidos);
    if !url.is_allowed_by(allowed) {
        return Ok(result(Err("destino_no_permitido")));
    }
    let keys = sealed
        .iter()
        .map(|k| {
            SigningKey::open(
                &state.sealing,
                id.as_uuid(),
                &k.key_id,
                &k.sealed,
                k.creado_en,
                k.vence_en,
            )
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(ApiError::internal)?;

    // The test event: covered by the subscription, never in the ledger
    // (seq 0, a fresh event id).
    let instance = sub
        .instancias
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
    let body = envelope.to_json();
    let delivery_id = uuid::Uuid::now_v7().to_string();
    let Ok(signed) = signature::sign(&keys, chrono::Utc::now(), &delivery_id, body.as_bytes())
    else {
        return Ok(result(Err("sin_secreto")));
    };
    let mut headers = vec![
        ("X-MW-Event-Id", envelope.event_id.to_string()),
        ("X-MW-Delivery-Id", delivery_id),
    ];
    headers.extend(signed.pairs().map(|(k, v)| (k, v.to_owned())));
    let timeout = Duration::from_secs(config.timeout_segundos.max(1) as u64);
    Ok(result(send(url.as_str(), timeout, &headers, body).await))
}

/// Sends a signed `webhook.test` (not stored in the ledger) and answers how
/// the receiver took it.
#[utoipa::path(post, path = "/v1/subscriptions/{id}/test", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = TestResult),
        (status = 401, body = crate::openapi::ErrorBody), (status = 403, body = crate::openapi::ErrorBody),
        (status = 404, body = crate::openapi::ErrorBody), (status = 409, body = crate::openapi::ErrorBody),
    ))]
pub(crate) async fn post_test(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<TestResult>, ApiError> {
    let access = manager(&caller)?;
    let id = path_id(&id, "subscription")?;
    Ok(Json(test_subscription(&state, &access, id).await?))
}

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/subscriptions/{id}/test", post(post_test))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn names_resolving_to_loopback_are_refused() {
        let err = GuardedResolver
            .resolve("localhost".parse().unwrap())
            .await
            .err()
            .expect("localhost resolves to loopback");
        assert!(err.downcast_ref::<BlockedAddress>().is_some(), "{err}");
    }

    #[tokio::test]
    async fn a_refused_connection_is_named() {
        // A port nobody listens on: bind one, then free it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let outcome = send(
            &format!("http://127.0.0.1:{port}/"),
            Duration::from_secs(5),
            &[],
            "{}".into(),
        )
        .await;
        assert_eq!(outcome, Err("conexion_rechazada"));
        // A URL that happens to say "tls" is still a refused connection.
        let outcome = send(
            &format!("http://127.0.0.1:{port}/tls-certificate-handshake"),
            Duration::from_secs(5),
            &[],
            "{}".into(),
        )
        .await;
        assert_eq!(outcome, Err("conexion_rechazada"));
    }

    #[tokio::test]
    async fn a_plain_http_server_spoken_to_in_tls_is_a_tls_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            while let Ok((mut socket, _)) = listener.accept().await {
                let _ = socket
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                    .await;
            }
        });
        let outcome = send(
            &format!("https://127.0.0.1:{port}/"),
            Duration::from_secs(5),
            &[],
            "{}".into(),
        )
        .await;
        assert_eq!(outcome, Err("tls"));
    }
}
