//! Benchmark of the spine: ingest throughput through the HTTP API at batch
//! size 1 and 100, and latency from commit to the record on
//! `{prefix}.events` at a steady 1,000 events/s. Prints numbers; asserts
//! nothing about speed.
//!
//!   scripts/services && cargo bench -p motor --bench spine
//!
//! Knobs (environment): MOTOR_BENCH_SECONDS (default 10),
//! MOTOR_BENCH_DATABASE_URL (server, default postgres://postgres@127.0.0.1:5432),
//! MOTOR_BENCH_KAFKA_BROKERS (default 127.0.0.1:9092).

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use motor::serve::Role;
use motor_domain::{InstanceId, NewEvent};
use rdkafka::{
    consumer::{BaseConsumer, Consumer},
    message::{Headers, Message},
    ClientConfig, Offset, TopicPartitionList,
};
use serde_json::json;

mod common;

use common::{env_or, percentile, start, tenant, BenchDb};

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for the list of benchmarks.
    }
    let seconds: u64 = env_or("MOTOR_BENCH_SECONDS", "10").parse().unwrap();
    let db = BenchDb::create().await;
    let (url, brokers, run_id) = (db.url.clone(), db.brokers.clone(), db.run_id.clone());
    let config = |prefix: &str| db.config(prefix);

    let motor = start(
        config(&format!("bench{run_id}a")),
        &[Role::Api, Role::Relay],
    )
    .await;
    let pool = motor_store::connect(&url, 32).await.unwrap();
    let (instances, token) = tenant(&pool, &[], 16, &["events:write"]).await;
    let base = format!("http://{}", motor.addr.unwrap());

    println!(
        "motor spine benchmark ({seconds} s per phase, 16 instances, api + relay in one process)"
    );
    for (batch, clients) in [(1usize, 32usize), (100, 8)] {
        let (events_per_s, p50, p99) = ingest(
            &base,
            &token,
            &instances,
            batch,
            clients,
            Duration::from_secs(seconds),
        )
        .await;
        println!(
            "ingest batch={batch:<3} clients={clients:<2}: {events_per_s:>8.0} events/s   request p50 {p50:>6.1} ms  p99 {p99:>6.1} ms"
        );
    }
    let drained = Instant::now();
    while motor_store::outbox::pending(&pool).await.unwrap() > 0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "relay drained the ingest backlog {:.1} s after the last request",
        drained.elapsed().as_secs_f64()
    );
    motor.stop().await;

    // Latency: a relay alone, a fresh topic, 1,000 single-event commits/s.
    let prefix = format!("bench{run_id}b");
    let relay = start(config(&prefix), &[Role::Relay]).await;
    let (p50, p99, max, n) =
        commit_to_topic(&pool, &instances, &brokers, &prefix, 1000, seconds).await;
    println!(
        "commit -> record on {prefix}.events at 1000 events/s: p50 {p50:.1} ms  p99 {p99:.1} ms  max {max:.1} ms  ({n} events)"
    );
    relay.stop().await;
    pool.close().await;
    db.drop_db().await;
}

/// `clients` concurrent HTTP clients post batches of `batch` for `length`.
async fn ingest(
    base: &str,
    token: &str,
    instances: &[InstanceId],
    batch: usize,
    clients: usize,
    length: Duration,
) -> (f64, f64, f64) {
    let http = reqwest::Client::new();
    let stop = Arc::new(AtomicBool::new(false));
    let events = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (http, stop, events) = (http.clone(), stop.clone(), events.clone());
        let (base, token, instances) = (base.to_owned(), token.to_owned(), instances.to_vec());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let instance = instances[(c + n) % instances.len()];
                let body: serde_json::Value = if batch == 1 {
                    json!({"type": "message.sent", "data": {"texto": "hola", "n": n}})
                } else {
                    (0..batch).map(|i| json!({"type": "message.sent", "data": {"texto": "hola", "n": n, "i": i}})).collect()
                };
                let t = Instant::now();
                let res = http
                    .post(format!("{base}/v1/instances/{instance}/events"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), 201);
                latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                events.fetch_add(batch as u64, Ordering::Relaxed);
                n += 1;
            }
            latencies
        }));
    }
    tokio::time::sleep(length).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (
        events.load(Ordering::Relaxed) as f64 / elapsed,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
    )
}

/// Commits `rate` single-event transactions per second through the library
/// call and measures when each record shows up on the topic.
async fn commit_to_topic(
    pool: &motor_store::Pool,
    instances: &[InstanceId],
    brokers: &str,
    prefix: &str,
    rate: u64,
    seconds: u64,
) -> (f64, f64, f64, usize) {
    let committed: Arc<Mutex<HashMap<(String, String), Instant>>> = Arc::default();
    let topic = format!("{prefix}.events");
    let total = (rate * seconds) as usize;

    // Wait for the relay to create the topic, then read it from the start.
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("{prefix}-latency"))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "5")
        .set("fetch.min.bytes", "1")
        .create()
        .unwrap();
    let partitions = loop {
        if let Ok(md) = consumer.fetch_metadata(Some(&topic), Duration::from_secs(5)) {
            let n = md.topics()[0].partitions().len();
            if n > 0 {
                break n as i32;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut assignment = TopicPartitionList::new();
    for p in 0..partitions {
        assignment
            .add_partition_offset(&topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let seen = committed.clone();
    let reader = std::thread::spawn(move || {
        let mut latencies = Vec::with_capacity(total);
        let deadline = Instant::now() + Duration::from_secs(seconds + 60);
        while latencies.len() < total && Instant::now() < deadline {
            let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) else {
                continue;
            };
            let arrived = Instant::now();
            let key = String::from_utf8_lossy(message.key().unwrap_or_default()).into_owned();
            let seq = message
                .headers()
                .and_then(|h| h.iter().find(|h| h.key == "seq"))
                .and_then(|h| h.value)
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default();
            // The commit instant is stored right after commit returns; the
            // record can be read before that store happens, so wait for it.
            let at = loop {
                if let Some(at) = seen.lock().unwrap().remove(&(key.clone(), seq.clone())) {
                    break Some(at);
                }
                if arrived.elapsed() > Duration::from_secs(1) {
                    break None;
                }
                std::thread::yield_now();
            };
            if let Some(at) = at {
                latencies.push(arrived.saturating_duration_since(at).as_secs_f64() * 1000.0);
            }
        }
        latencies
    });

    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut inflight = tokio::task::JoinSet::new();
    for n in 0..total {
        ticker.tick().await;
        let instance = instances[n % instances.len()];
        let (pool, committed) = (pool.clone(), committed.clone());
        inflight.spawn(async move {
            let event =
                NewEvent::parse(&json!({"type": "latency", "data": {"n": n}}), "e").unwrap();
            let mut tx = pool.begin().await.unwrap();
            let appended = motor_store::ledger::append(&mut tx, instance, &[event])
                .await
                .unwrap();
            tx.commit().await.unwrap();
            let at = Instant::now();
            let envelope: serde_json::Value = serde_json::from_str(&appended.envelopes[0]).unwrap();
            committed
                .lock()
                .unwrap()
                .insert((instance.to_string(), envelope["seq"].to_string()), at);
        });
    }
    while inflight.join_next().await.is_some() {}
    let mut latencies = tokio::task::spawn_blocking(move || reader.join().unwrap())
        .await
        .unwrap();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or(f64::NAN),
        latencies.len(),
    )
}
