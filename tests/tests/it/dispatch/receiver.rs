//! A webhook receiver on loopback, written from the contract alone: it
//! verifies every request's signature with its own HMAC (constant-time),
//! records what arrived, and answers what the test's script says.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::post,
    Router,
};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub delivery_id: String,
    pub event_id: String,
    pub instance_id: String,
    pub seq: i64,
    pub body: Vec<u8>,
    pub key_ids: Vec<String>,
    /// Every signature verified with one of the receiver's secrets.
    pub verified: bool,
    pub at: Instant,
    /// How many earlier requests carried this delivery id.
    pub previous: usize,
    /// `X-MW-Replay-Of`, when the request carried it.
    pub replay_of: Option<String>,
}

/// The answer to one request.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub delay: Duration,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Self {
            status,
            headers: vec![],
            delay: Duration::ZERO,
        }
    }

    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// Answered after `delay`.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

type Script = dyn Fn(&Seen) -> Reply + Send + Sync;

#[derive(Clone)]
struct Shared {
    secrets: Arc<Mutex<HashMap<String, String>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<Arc<Script>>>,
    /// Requests being answered now, and the most there ever were.
    open: Arc<Mutex<(usize, usize)>>,
}

pub struct Receiver {
    pub addr: SocketAddr,
    shared: Shared,
}

impl Receiver {
    /// Starts a receiver answering 204 to everything.
    pub async fn start() -> Self {
        Self::start_on("127.0.0.1").await
    }

    /// [`start`](Self::start) listening on `ip`.
    pub async fn start_on(ip: &str) -> Self {
        let shared = Shared {
            secrets: Arc::default(),
            seen: Arc::default(),
            script: Arc::new(Mutex::new(Arc::new(|_: &Seen| Reply::status(204)))),
            open: Arc::default(),
        };
        let app = Router::new()
            .route("/hook", post(receive))
            .with_state(shared.clone());
        let addr = crate::util::serve(ip, app).await;
        Self { addr, shared }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// Trusts a signing secret (key id → `whsec_…` value).
    pub fn trust(&self, key_id: &str, secret: &str) {
        self.shared
            .secrets
            .lock()
            .unwrap()
            .insert(key_id.to_owned(), secret.to_owned());
    }

    pub fn script(&self, script: impl Fn(&Seen) -> Reply + Send + Sync + 'static) {
        *self.shared.script.lock().unwrap() = Arc::new(script);
    }

    /// The most requests that were ever open at once.
    pub fn most_at_once(&self) -> usize {
        self.shared.open.lock().unwrap().1
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// Waits until `check` holds for what arrived.
    pub async fn wait_for(&self, what: &str, within: Duration, check: impl Fn(&[Seen]) -> bool) {
        let deadline = Instant::now() + within;
        loop {
            if check(&self.seen()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what} ({} requests seen)",
                self.seen().len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// Verifies `X-MW-Signature` as a receiver written from the docs would:
/// `hex(HMAC-SHA256(secret, timestamp + "." + delivery_id + "." + body))`,
/// one `v1=` per key id, in the same order, compared in constant time.
fn verify(
    secrets: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &[u8],
) -> (bool, Vec<String>) {
    let timestamp = header(headers, "x-mw-timestamp");
    let delivery = header(headers, "x-mw-delivery-id");
    let key_ids: Vec<String> = header(headers, "x-mw-key-id")
        .split(',')
        .map(|s| s.trim().to_owned())
        .collect();
    let signatures: Vec<&str> = header(headers, "x-mw-signature")
        .split(',')
        .map(str::trim)
        .collect();
    if key_ids.len() != signatures.len() || key_ids.is_empty() {
        return (false, key_ids);
    }
    let all = key_ids.iter().zip(&signatures).all(|(key_id, signature)| {
        let Some(secret) = secrets.get(key_id) else {
            return false;
        };
        let Some(hex_sig) = signature.strip_prefix("v1=") else {
            return false;
        };
        let Ok(expected) = hex::decode(hex_sig) else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{timestamp}.{delivery}.").as_bytes());
        mac.update(body);
        mac.verify_slice(&expected).is_ok()
    });
    (all, key_ids)
}

async fn receive(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let (verified, key_ids) = verify(&shared.secrets.lock().unwrap(), &headers, &body);
    let envelope: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let delivery_id = header(&headers, "x-mw-delivery-id").to_owned();
    let reply = {
        let mut seen = shared.seen.lock().unwrap();
        let previous = seen.iter().filter(|s| s.delivery_id == delivery_id).count();
        let entry = Seen {
            delivery_id,
            event_id: header(&headers, "x-mw-event-id").to_owned(),
            instance_id: envelope["instance_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            seq: envelope["seq"].as_i64().unwrap_or(-1),
            body: body.to_vec(),
            key_ids,
            verified,
            at: Instant::now(),
            previous,
            replay_of: headers
                .get("x-mw-replay-of")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        };
        let script = shared.script.lock().unwrap().clone();
        let reply = script(&entry);
        seen.push(entry);
        reply
    };
    if !reply.delay.is_zero() {
        {
            let mut open = shared.open.lock().unwrap();
            open.0 += 1;
            open.1 = open.1.max(open.0);
        }
        tokio::time::sleep(reply.delay).await;
        shared.open.lock().unwrap().0 -= 1;
    }
    let mut response = StatusCode::from_u16(reply.status).unwrap().into_response();
    for (name, value) in reply.headers {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    response
}
