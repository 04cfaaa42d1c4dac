//! The load generator: producers posting events to Motor's API over
//! keep-alive connections, either as fast as the answers come back (closed
//! loop, a number of concurrent senders) or at a fixed rate whatever the
//! answers do (open loop). Every 201 names the seqs committed, which is what
//! the receiver is then waited for.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::{sync::Semaphore, task::JoinSet};
use uuid::Uuid;

use crate::receiver::now_ms;

/// Bytes of one event as posted (the reference: ~175-byte payloads).
const EVENT_BYTES: usize = 175;

/// Open loop: requests in flight at most; past it sending falls behind,
/// which shows as an achieved rate below the one asked.
const OPEN_LOOP_IN_FLIGHT: usize = 512;

#[derive(Clone)]
pub struct Load {
    client: reqwest::Client,
    base: String,
    token: String,
    single: Bytes,
    batch: Bytes,
    batch_len: usize,
    /// Single events carrying `orden_clave` `k0` … `k{n-1}`.
    keyed: Arc<Vec<Bytes>>,
}

/// `orden_clave`s the keyed phase spreads each instance's events over.
pub const KEYS_PER_INSTANCE: usize = 10;

/// What a closed loop posts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Body {
    Single,
    Batch,
    Keyed,
}

/// What a load phase posted.
#[derive(Default)]
pub struct Posted {
    /// (instance, seq) of every event answered 201.
    pub committed: Vec<(Uuid, i64)>,
    /// Request latencies (ms), sorted.
    pub requests_ms: Vec<f64>,
    pub errors: usize,
    pub first_error: Option<String>,
    /// Wall clock of the first request (ms since the epoch).
    pub started_ms: f64,
    /// First request to last answer.
    pub seconds: f64,
}

impl Posted {
    pub fn requests_per_s(&self) -> f64 {
        self.requests_ms.len() as f64 / self.seconds
    }

    fn add(&mut self, instance: Uuid, answer: Result<(Vec<i64>, f64), String>) {
        match answer {
            Ok((seqs, ms)) => {
                self.committed
                    .extend(seqs.into_iter().map(|s| (instance, s)));
                self.requests_ms.push(ms);
            }
            Err(e) => {
                self.errors += 1;
                self.first_error.get_or_insert(e);
            }
        }
    }

    fn finish(mut self, started: Instant) -> Self {
        self.seconds = started.elapsed().as_secs_f64();
        self.requests_ms.sort_by(f64::total_cmp);
        self
    }
}

#[derive(Deserialize)]
struct Stored {
    seq: i64,
}

/// One event of about [`EVENT_BYTES`], shaped like a messaging webhook.
fn event() -> Value {
    let mut event = json!({"type": "message.received", "data": {
        "from": "+5491155550000", "to": "+5491144440000", "text": ""}});
    let padding = EVENT_BYTES.saturating_sub(event.to_string().len());
    event["data"]["text"] = "x".repeat(padding).into();
    event
}

impl Load {
    /// Posts to `base` with `token`; `batch` is the array size of batched
    /// requests.
    pub fn new(base: &str, token: &str, batch: usize) -> Self {
        let client = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(OPEN_LOOP_IN_FLIGHT)
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let events = Value::Array(vec![event(); batch]);
        let keyed = (0..KEYS_PER_INSTANCE)
            .map(|k| {
                let mut e = event();
                e["orden_clave"] = format!("k{k}").into();
                Bytes::from(e.to_string())
            })
            .collect();
        Self {
            keyed: Arc::new(keyed),
            client,
            base: base.to_owned(),
            token: token.to_owned(),
            single: event().to_string().into(),
            batch: events.to_string().into(),
            batch_len: batch,
        }
    }

    /// `senders` concurrent producers, each posting its next request as soon
    /// as the last was answered, until `events` events were posted (single
    /// events, or arrays when `batched`), spread over `instances` in turn.
    pub async fn closed(
        &self,
        instances: &[Uuid],
        events: usize,
        batched: bool,
        senders: usize,
    ) -> Posted {
        let body = if batched { Body::Batch } else { Body::Single };
        self.closed_with(instances, events, body, senders).await
    }

    /// [`Self::closed`] with single events, each with an `orden_clave`:
    /// the n-th request to an instance carries key `k{n %
    /// KEYS_PER_INSTANCE}`, so each instance's events spread over its keys.
    pub async fn closed_keyed(&self, instances: &[Uuid], events: usize, senders: usize) -> Posted {
        self.closed_with(instances, events, Body::Keyed, senders)
            .await
    }

    async fn closed_with(
        &self,
        instances: &[Uuid],
        events: usize,
        body: Body,
        senders: usize,
    ) -> Posted {
        let per_request = if body == Body::Batch {
            self.batch_len
        } else {
            1
        };
        let requests = events.div_ceil(per_request);
        let next = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let started_ms = now_ms();
        let mut tasks = JoinSet::new();
        for _ in 0..senders.min(requests) {
            let (load, next, instances) = (self.clone(), next.clone(), instances.to_vec());
            tasks.spawn(async move {
                let mut posted = Posted::default();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= requests {
                        return posted;
                    }
                    let instance = instances[n % instances.len()];
                    let body = match body {
                        Body::Single => load.single.clone(),
                        Body::Batch => load.batch.clone(),
                        Body::Keyed => {
                            let round = n / instances.len();
                            load.keyed[round % load.keyed.len()].clone()
                        }
                    };
                    posted.add(
                        instance,
                        load.post_body(instance, body, per_request > 1).await,
                    );
                }
            });
        }
        let mut all = Posted {
            started_ms,
            ..Posted::default()
        };
        while let Some(posted) = tasks.join_next().await {
            let posted = posted.unwrap();
            all.committed.extend(posted.committed);
            all.requests_ms.extend(posted.requests_ms);
            all.errors += posted.errors;
            all.first_error = all.first_error.or(posted.first_error);
        }
        all.finish(started)
    }

    /// Single events at `rate` per second for `seconds`, spread over
    /// `instances` in turn, each sent on schedule whether or not the earlier
    /// ones were answered (at most [`OPEN_LOOP_IN_FLIGHT`] in flight).
    pub async fn open(&self, instances: &[Uuid], rate: f64, seconds: f64) -> Posted {
        let requests = (rate * seconds).round() as usize;
        let slots = Arc::new(Semaphore::new(OPEN_LOOP_IN_FLIGHT));
        let started = Instant::now();
        let mut posted = Posted {
            started_ms: now_ms(),
            ..Posted::default()
        };
        let mut tasks = JoinSet::new();
        for n in 0..requests {
            let due = started + Duration::from_secs_f64(n as f64 / rate);
            tokio::time::sleep_until(due.into()).await;
            let permit = slots.clone().acquire_owned().await.unwrap();
            let (load, instance) = (self.clone(), instances[n % instances.len()]);
            tasks.spawn(async move {
                let answer = load.post(instance, false).await;
                drop(permit);
                (instance, answer)
            });
            while let Some(done) = tasks.try_join_next() {
                let (instance, answer) = done.unwrap();
                posted.add(instance, answer);
            }
        }
        while let Some(done) = tasks.join_next().await {
            let (instance, answer) = done.unwrap();
            posted.add(instance, answer);
        }
        posted.finish(started)
    }

    /// One POST; the seqs it committed and its latency (ms).
    async fn post(&self, instance: Uuid, batched: bool) -> Result<(Vec<i64>, f64), String> {
        let body = if batched { &self.batch } else { &self.single };
        self.post_body(instance, body.clone(), batched).await
    }

    /// One POST of `body` (an array when `batched`).
    async fn post_body(
        &self,
        instance: Uuid,
        body: Bytes,
        batched: bool,
    ) -> Result<(Vec<i64>, f64), String> {
        let sent = Instant::now();
        let response = self
            .client
            .post(format!("{}/v1/instances/{instance}/events", self.base))
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let answer = response.bytes().await.map_err(|e| e.to_string())?;
        let ms = sent.elapsed().as_secs_f64() * 1000.0;
        if status != reqwest::StatusCode::CREATED {
            return Err(format!("{status}: {}", String::from_utf8_lossy(&answer)));
        }
        let seqs = if batched {
            serde_json::from_slice::<Vec<Stored>>(&answer)
                .map(|s| s.iter().map(|s| s.seq).collect())
        } else {
            serde_json::from_slice::<Stored>(&answer).map(|s| vec![s.seq])
        };
        Ok((seqs.map_err(|e| e.to_string())?, ms))
    }
}
