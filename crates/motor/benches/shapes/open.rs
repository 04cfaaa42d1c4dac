//! An open loop over many apps: single events at a fixed rate, each to the
//! next (instance, key) of a list, whatever body the phase posts (~175
//! bytes, or 64 KB), sent on schedule whether or not the earlier ones were
//! answered — the http bench's `Load::open`, with a key per instance.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use serde::Deserialize;
use tokio::{sync::Semaphore, task::JoinSet};
use uuid::Uuid;

use crate::{load::Posted, receiver::now_ms};

/// Requests in flight at most, as in the http bench's open loop.
const IN_FLIGHT: usize = 512;

/// Where an event goes: its instance and the key of the instance's app.
#[derive(Clone)]
pub struct Target {
    pub instance: Uuid,
    pub token: Arc<str>,
}

#[derive(Deserialize)]
struct Stored {
    seq: i64,
}

/// `rate` events per second of `body` for `seconds`, over `targets` in
/// turn.
pub async fn run(base: &str, targets: &[Target], body: Bytes, rate: f64, seconds: f64) -> Posted {
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(IN_FLIGHT)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let requests = (rate * seconds).round() as usize;
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
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
        let target = targets[n % targets.len()].clone();
        let (client, body) = (client.clone(), body.clone());
        let url = format!("{base}/v1/instances/{}/events", target.instance);
        tasks.spawn(async move {
            let sent = Instant::now();
            let answer = async {
                let response = client
                    .post(url)
                    .bearer_auth(&*target.token)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                let status = response.status();
                let answer = response.bytes().await.map_err(|e| e.to_string())?;
                if status != reqwest::StatusCode::CREATED {
                    return Err(format!("{status}: {}", String::from_utf8_lossy(&answer)));
                }
                let stored: Stored = serde_json::from_slice(&answer).map_err(|e| e.to_string())?;
                Ok(stored.seq)
            }
            .await;
            drop(permit);
            (
                target.instance,
                answer,
                sent.elapsed().as_secs_f64() * 1000.0,
            )
        });
        while let Some(done) = tasks.try_join_next() {
            add(&mut posted, done.unwrap());
        }
    }
    while let Some(done) = tasks.join_next().await {
        add(&mut posted, done.unwrap());
    }
    posted.seconds = started.elapsed().as_secs_f64();
    posted.requests_ms.sort_by(f64::total_cmp);
    posted
}

fn add(posted: &mut Posted, (instance, answer, ms): (Uuid, Result<i64, String>, f64)) {
    match answer {
        Ok(seq) => {
            posted.committed.push((instance, seq));
            posted.requests_ms.push(ms);
        }
        Err(e) => {
            posted.errors += 1;
            posted.first_error.get_or_insert(e);
        }
    }
}
