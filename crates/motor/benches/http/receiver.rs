//! The webhook receiver: answers 204 at once and remembers, per
//! (subscription, instance, seq), when the first copy arrived and the
//! envelope's `received_at`. It verifies no signature (that costs CPU the
//! benchmark would count as the receiver's, and the tests check signing).
//! For the bad-receivers phase it can answer some instances badly: half of
//! their requests 503 (no `Retry-After`), or one instance after 2 s; for
//! the shapes bench's slow receivers, every request after a delay.

use std::{
    collections::{hash_map::Entry, HashMap, HashSet},
    net::SocketAddr,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::StatusCode,
    routing::post,
    Router,
};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

/// A subscription's path on the receiver: `/hook/{name}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hook {
    Ordered,
    Unordered,
    /// The `orden: clave` subscription.
    Keyed,
}

impl Hook {
    pub fn path(self) -> &'static str {
        match self {
            Hook::Ordered => "ordered",
            Hook::Unordered => "unordered",
            Hook::Keyed => "keyed",
        }
    }
}

/// One event the load generator saw committed, to be delivered to `hook`.
pub type Key = (Hook, Uuid, i64);

/// The first arrival of a delivery: the receiver's wall clock and the
/// envelope's `received_at`, both in ms since the epoch.
#[derive(Clone, Copy)]
pub struct Arrival {
    pub at_ms: f64,
    pub received_at_ms: f64,
}

#[derive(Default)]
pub struct Receiver {
    arrivals: Mutex<HashMap<Key, Arrival>>,
    first_copies: AtomicUsize,
    duplicates: AtomicUsize,
    misbehaving: Mutex<Misbehaviour>,
    /// Requests to failing instances so far: every other one fails.
    failing_requests: AtomicUsize,
    /// Every request is answered after this many ms (0: at once).
    answer_after_ms: AtomicU64,
}

/// Instances the receiver answers badly.
#[derive(Default, Clone)]
pub struct Misbehaviour {
    /// Half of their requests are answered 503 (without `Retry-After`, which
    /// would hold the whole subscription by design).
    pub failing: HashSet<Uuid>,
    /// Answered 204 after [`SLOW_ANSWER`].
    pub slow: Option<Uuid>,
}

/// How long the slow instance's requests wait for their answer.
pub const SLOW_ANSWER: Duration = Duration::from_secs(2);

/// What a phase's deliveries came to: every expected key's arrival, or
/// the keys still missing when the wait gave up.
pub struct Delivered {
    pub arrivals: Vec<Arrival>,
    /// The key of each arrival, in the same order.
    pub keys: Vec<Key>,
    pub missing: Vec<Key>,
    pub duplicates: usize,
}

impl Delivered {
    /// The wall clock of the last arrival (ms since the epoch).
    pub fn last_ms(&self) -> f64 {
        self.arrivals.iter().map(|a| a.at_ms).fold(0.0, f64::max)
    }

    /// The wall clock of the first arrival (ms since the epoch).
    pub fn first_ms(&self) -> f64 {
        self.arrivals
            .iter()
            .map(|a| a.at_ms)
            .fold(f64::INFINITY, f64::min)
    }

    /// Deliveries per second of the instances in `of`, from `started_ms`
    /// (the first POST) to their last arrival.
    pub fn rate_of(&self, of: &HashSet<Uuid>, started_ms: f64) -> f64 {
        let (mut n, mut last) = (0usize, 0.0f64);
        for (arrival, (_, instance, _)) in self.arrivals.iter().zip(&self.keys) {
            if of.contains(instance) {
                n += 1;
                last = last.max(arrival.at_ms);
            }
        }
        n as f64 * 1000.0 / (last - started_ms)
    }

    /// Commit → receiver per delivery (ms), sorted.
    pub fn latencies(&self) -> Vec<f64> {
        let mut ms: Vec<f64> = self
            .arrivals
            .iter()
            .map(|a| a.at_ms - a.received_at_ms)
            .collect();
        ms.sort_by(f64::total_cmp);
        ms
    }
}

#[derive(Deserialize)]
struct Envelope {
    instance_id: Uuid,
    seq: i64,
    received_at: DateTime<Utc>,
}

/// The wall clock in ms since the epoch (the receiver's and `received_at`'s
/// clock: the same machine).
pub fn now_ms() -> f64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    since.as_secs_f64() * 1000.0
}

impl Receiver {
    /// Serves `/hook/{name}` on a free loopback port.
    pub async fn start() -> (Arc<Self>, SocketAddr) {
        let (receiver, router) = Self::router();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        (receiver, addr)
    }

    /// A receiver and its routes, to serve on a listener of the caller's
    /// (e.g. behind TLS).
    pub fn router() -> (Arc<Self>, Router) {
        let receiver = Arc::new(Self::default());
        let router = Router::new()
            .route("/hook/{hook}", post(receive))
            .with_state(receiver.clone());
        (receiver, router)
    }

    /// Answers every request `after` it arrived from now on (zero: at once).
    #[allow(dead_code)] // Only the shapes bench's slow receivers.
    pub fn answer_after(&self, after: Duration) {
        self.answer_after_ms
            .store(after.as_millis() as u64, Ordering::Relaxed);
    }

    /// Answers the given instances badly from now on (see [`Misbehaviour`]).
    pub fn misbehave(&self, misbehaviour: Misbehaviour) {
        *self.misbehaving.lock().unwrap() = misbehaviour;
    }

    /// Forgets every arrival (a phase starts with an empty receiver).
    pub fn clear(&self) {
        self.arrivals.lock().unwrap().clear();
        self.first_copies.store(0, Ordering::Relaxed);
        self.duplicates.store(0, Ordering::Relaxed);
    }

    /// Waits until every key in `expected` arrived, or `patience` passed
    /// without a new arrival; what arrived and what is missing.
    pub async fn wait_for(&self, expected: &[Key], patience: Duration) -> Delivered {
        let mut seen = 0;
        let mut progress = Instant::now();
        loop {
            let arrived = self.first_copies.load(Ordering::Relaxed);
            if arrived >= expected.len() || progress.elapsed() > patience {
                let delivered = self.collect(expected);
                if delivered.missing.is_empty() || progress.elapsed() > patience {
                    return delivered;
                }
            }
            if arrived != seen {
                (seen, progress) = (arrived, Instant::now());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn collect(&self, expected: &[Key]) -> Delivered {
        let arrivals = self.arrivals.lock().unwrap();
        let mut delivered = Delivered {
            arrivals: Vec::with_capacity(expected.len()),
            keys: Vec::with_capacity(expected.len()),
            missing: Vec::new(),
            duplicates: self.duplicates.load(Ordering::Relaxed),
        };
        for key in expected {
            match arrivals.get(key) {
                Some(arrival) => {
                    delivered.arrivals.push(*arrival);
                    delivered.keys.push(*key);
                }
                None => delivered.missing.push(*key),
            }
        }
        delivered
    }
}

async fn receive(
    State(receiver): State<Arc<Receiver>>,
    Path(hook): Path<String>,
    body: Bytes,
) -> StatusCode {
    let at_ms = now_ms();
    let hook = match hook.as_str() {
        "ordered" => Hook::Ordered,
        "unordered" => Hook::Unordered,
        "keyed" => Hook::Keyed,
        _ => return StatusCode::NOT_FOUND,
    };
    let Ok(envelope) = serde_json::from_slice::<Envelope>(&body) else {
        return StatusCode::BAD_REQUEST;
    };
    let (failing, slow) = {
        let misbehaving = receiver.misbehaving.lock().unwrap();
        (
            misbehaving.failing.contains(&envelope.instance_id),
            misbehaving.slow == Some(envelope.instance_id),
        )
    };
    if failing && receiver.failing_requests.fetch_add(1, Ordering::Relaxed) % 2 == 0 {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    if slow {
        tokio::time::sleep(SLOW_ANSWER).await;
    }
    let after = receiver.answer_after_ms.load(Ordering::Relaxed);
    if after > 0 {
        tokio::time::sleep(Duration::from_millis(after)).await;
    }
    let arrival = Arrival {
        at_ms,
        received_at_ms: envelope.received_at.timestamp_millis() as f64,
    };
    let key = (hook, envelope.instance_id, envelope.seq);
    let counter = match receiver.arrivals.lock().unwrap().entry(key) {
        Entry::Vacant(first) => {
            first.insert(arrival);
            &receiver.first_copies
        }
        Entry::Occupied(_) => &receiver.duplicates,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    StatusCode::NO_CONTENT
}
