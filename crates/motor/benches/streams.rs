//! Benchmark of streams: latency from commit to a stream client at a
//! steady 1,000 events/s with 1 and with 200 SSE clients, and the resident
//! memory of 1,000 idle streams. Motor runs as its own `motor serve
//! --roles api` process (so its RSS is its own). Prints numbers; asserts
//! nothing about speed.
//!
//!   cargo bench -p motor --bench streams
//!
//! Knobs (environment): MOTOR_BENCH_SECONDS (default 10),
//! MOTOR_BENCH_DATABASE_URL (server, default postgres://postgres@127.0.0.1:5432).
//!
//! Two producers: the library call from this process (a commit of another
//! process: the serving process's tail finds it at its next poll, every
//! 25 ms) and `POST /v1/instances/{id}/events` to the serving process (its
//! own commit wakes the tail). Commit time is taken right after the
//! library call's commit returns; for the API, when the 201 arrives (after
//! the commit, so the measured latency is a lower bound there).

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::future::join_all;
use motor_domain::{InstanceId, NewEvent};
use serde_json::json;

mod common;

use common::{env_or, percentile, tenant, BenchDb};

struct Process {
    child: std::process::Child,
    base: String,
}

impl Process {
    async fn spawn(db: &BenchDb) -> Self {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .to_string();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_motor"))
            .args(["serve", "--roles", "api"])
            .env("MOTOR_DATABASE_URL", &db.url)
            .env("MOTOR_HTTP_ADDR", &addr)
            .env("MOTOR_MASTER_KEY", "bench-master-key-0123456789abcdef0123")
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let process = Self {
            child,
            base: format!("http://{addr}"),
        };
        for _ in 0..600 {
            if reqwest::get(format!("{}/healthz", process.base))
                .await
                .is_ok()
            {
                return process;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("motor never answered");
    }

    fn rss_mib(&self) -> f64 {
        common::rss_mb(self.child.id())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Opens an SSE stream; returns once the response head arrived.
async fn open(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    instance: InstanceId,
) -> reqwest::Response {
    let res = http
        .get(format!("{base}/v1/instances/{instance}/events/stream"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res
}

/// Reads a stream until `last`; when each seq arrived.
async fn read_until(
    mut res: reqwest::Response,
    last: Arc<tokio::sync::watch::Receiver<i64>>,
) -> Vec<(i64, Instant)> {
    let mut out = Vec::new();
    let mut buf = String::new();
    loop {
        let target = *last.borrow();
        if target > 0 && out.last().is_some_and(|(s, _)| *s >= target) {
            return out;
        }
        let chunk = match tokio::time::timeout(Duration::from_secs(2), res.chunk()).await {
            Ok(Ok(Some(chunk))) => chunk,
            Ok(_) => return out,
            Err(_) => continue,
        };
        let now = Instant::now();
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
        let mut used = 0;
        while let Some(end) = buf[used..].find("\n\n") {
            let block = &buf[used..used + end];
            if block.contains("\ndata: ") {
                if let Some(id) = block.lines().find_map(|l| l.strip_prefix("id: ")) {
                    out.push((id.parse().unwrap(), now));
                }
            }
            used += end + 2;
        }
        buf.drain(..used);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Via {
    Library,
    Api,
}

/// Commits single events at `rate`/s for `seconds`; when each seq committed.
async fn produce(
    pool: &motor_store::Pool,
    base: &str,
    token: &str,
    instance: InstanceId,
    via: Via,
    rate: u64,
    seconds: u64,
) -> HashMap<i64, Instant> {
    let producers = 20u64;
    let tasks = (0..producers).map(|_| {
        let (pool, base, token) = (pool.clone(), base.to_owned(), token.to_owned());
        async move {
            let http = reqwest::Client::new();
            let mut tick =
                tokio::time::interval(Duration::from_micros(1_000_000 * producers / rate));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let until = Instant::now() + Duration::from_secs(seconds);
            let mut out = Vec::new();
            while Instant::now() < until {
                tick.tick().await;
                let envelope = match via {
                    Via::Library => {
                        let event =
                            NewEvent::parse(&json!({"type": "bench", "data": {"x": 1}}), "e")
                                .unwrap();
                        let mut tx = pool.begin().await.unwrap();
                        let appended = motor_store::ledger::append(&mut tx, instance, &[event])
                            .await
                            .unwrap();
                        tx.commit().await.unwrap();
                        appended.envelopes[0].clone()
                    }
                    Via::Api => http
                        .post(format!("{base}/v1/instances/{instance}/events"))
                        .bearer_auth(&token)
                        .json(&json!({"type": "bench", "data": {"x": 1}}))
                        .send()
                        .await
                        .unwrap()
                        .text()
                        .await
                        .unwrap(),
                };
                let committed = Instant::now();
                let seq = serde_json::from_str::<serde_json::Value>(&envelope).unwrap()["seq"]
                    .as_i64()
                    .unwrap();
                out.push((seq, committed));
            }
            out
        }
    });
    join_all(tasks).await.into_iter().flatten().collect()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for the list of benchmarks.
    }
    let seconds: u64 = env_or("MOTOR_BENCH_SECONDS", "10").parse().unwrap();
    let db = BenchDb::create().await;
    let pool = motor_store::connect(&db.url, 16).await.unwrap();
    motor_store::migrate(&db.url).await.unwrap();
    let process = Process::spawn(&db).await;
    let (instances, token) = tenant(&pool, &[], 6, &["events:read", "events:write"]).await;
    let http = reqwest::Client::new();
    println!(
        "motor streams benchmark ({seconds} s per phase, 1,000 events/s, motor serve --roles api)"
    );

    let mut phase = 0;
    for via in [Via::Library, Via::Api] {
        for clients in [1usize, 200] {
            let instance = instances[phase];
            phase += 1;
            let streams =
                join_all((0..clients).map(|_| open(&http, &process.base, &token, instance))).await;
            let (last_tx, last_rx) = tokio::sync::watch::channel(0i64);
            let last_rx = Arc::new(last_rx);
            let readers: Vec<_> = streams
                .into_iter()
                .map(|res| tokio::spawn(read_until(res, last_rx.clone())))
                .collect();
            let committed =
                produce(&pool, &process.base, &token, instance, via, 1_000, seconds).await;
            let last = *committed.keys().max().unwrap();
            last_tx.send(last).unwrap();
            let mut latencies: Vec<f64> = Vec::new();
            let mut missing = 0;
            for reader in readers {
                let received = reader.await.unwrap();
                missing += committed.len() - received.len();
                for (seq, at) in received {
                    if let Some(c) = committed.get(&seq) {
                        latencies.push(at.saturating_duration_since(*c).as_secs_f64() * 1000.0);
                    }
                }
            }
            latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let rate = committed.len() as f64 / seconds as f64;
            println!(
                "{:<7} producer, {clients:>3} clients: {rate:>5.0} events/s  commit -> client p50 {:>6.1} ms  p99 {:>6.1} ms  max {:>6.1} ms  (missing {missing})",
                if via == Via::Library { "library" } else { "api" },
                percentile(&latencies, 0.5),
                percentile(&latencies, 0.99),
                latencies.last().copied().unwrap_or(f64::NAN),
            );
        }
    }

    // Idle streams: the RSS 1,000 more of them cost.
    let idle = Process::spawn(&db).await;
    let before = idle.rss_mib();
    let mut held = Vec::new();
    for chunk in instances
        .chunks(1)
        .cycle()
        .take(1_000)
        .collect::<Vec<_>>()
        .chunks(100)
    {
        held.extend(join_all(chunk.iter().map(|i| open(&http, &idle.base, &token, i[0]))).await);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let with = idle.rss_mib();
    println!(
        "idle streams: RSS {before:.1} MiB -> {with:.1} MiB with 1,000 open: {:.1} MiB per 1,000 idle streams",
        with - before
    );
    drop(held);
    drop(idle);
    drop(process);
    pool.close().await;
    db.drop_db().await;
}
