//! Benchmark of delivery, end to end: events committed to the ledger until
//! a webhook receiver on loopback answered them. Prints numbers; asserts
//! nothing about speed.
//!
//!   scripts/services && cargo bench -p motor --bench delivery
//!
//! Phases (one ordered subscription, 10 instances, every role in this
//! process, a receiver answering 204 at once):
//! 1. throughput: a backlog of events appended at once, delivered events/s;
//! 2. a slow lane: the same backlog while the receiver answers instance 0
//!    after 2 s; the nine healthy lanes' throughput against theirs in
//!    phase 1;
//! 3. latency: 100 and 1,000 single-event commits/s for
//!    MOTOR_BENCH_SECONDS, commit → receiver p50/p99; then 1,000/s spread
//!    over 100 instances.

mod common;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{body::Bytes, extract::State, http::StatusCode, routing::post, Router};
use common::{env_or, percentile, start, tenant, BenchDb, Running};
use motor::serve::Role;
use motor_domain::{InstanceId, NewEvent};
use serde_json::{json, Value};

const ALL_ROLES: [Role; 5] = [
    Role::Api,
    Role::Relay,
    Role::Dispatch,
    Role::Retry,
    Role::Sweeper,
];

/// Arrivals by (instance, seq), and which instance answers slowly.
#[derive(Clone, Default)]
struct Receiver {
    arrived: Arc<Mutex<HashMap<(String, i64), Instant>>>,
    slow: Arc<Mutex<Option<String>>>,
}

async fn receive(State(r): State<Receiver>, body: Bytes) -> StatusCode {
    let envelope: Value = serde_json::from_slice(&body).unwrap_or_default();
    let instance = envelope["instance_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let slow = r.slow.lock().unwrap().as_deref() == Some(instance.as_str());
    if slow {
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let seq = envelope["seq"].as_i64().unwrap_or(-1);
    r.arrived
        .lock()
        .unwrap()
        .entry((instance, seq))
        .or_insert_with(Instant::now);
    StatusCode::NO_CONTENT
}

async fn append(pool: &motor_store::Pool, instance: InstanceId, n: usize) -> Vec<(i64, Instant)> {
    let events: Vec<NewEvent> = (0..n)
        .map(|i| NewEvent::parse(&json!({"type": "bench", "data": {"i": i}}), "e").unwrap())
        .collect();
    let mut out = Vec::new();
    for chunk in events.chunks(500) {
        let mut tx = pool.begin().await.unwrap();
        let appended = motor_store::ledger::append(&mut tx, instance, chunk)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let at = Instant::now();
        for e in &appended.envelopes {
            out.push((
                serde_json::from_str::<Value>(e).unwrap()["seq"]
                    .as_i64()
                    .unwrap(),
                at,
            ));
        }
    }
    out
}

/// Appends `per_instance` events to each instance at once and waits until
/// the instances in `wait_for` have all theirs at the receiver; delivered
/// events/s of those instances and of the instances in `measure` (a subset),
/// and every `(instance, seq)` appended.
async fn backlog(
    pool: &motor_store::Pool,
    r: &Receiver,
    instances: &[InstanceId],
    per_instance: usize,
    wait_for: &[InstanceId],
    measure: &[InstanceId],
) -> (f64, f64, Vec<(String, i64)>) {
    r.arrived.lock().unwrap().clear();
    let started = Instant::now();
    let mut committed = Vec::new();
    for instance in instances {
        for (seq, _) in append(pool, *instance, per_instance).await {
            committed.push((instance.to_string(), seq));
        }
    }
    let of = |set: &[InstanceId]| -> Vec<(String, i64)> {
        let names: Vec<String> = set.iter().map(ToString::to_string).collect();
        committed
            .iter()
            .filter(|(i, _)| names.contains(i))
            .cloned()
            .collect()
    };
    let (waited, measured) = (of(wait_for), of(measure));
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let rates = {
            let arrived = r.arrived.lock().unwrap();
            let rate = |keys: &[(String, i64)]| {
                let last = keys.iter().map(|k| arrived[k]).max().unwrap();
                keys.len() as f64 / (last - started).as_secs_f64()
            };
            waited
                .iter()
                .all(|k| arrived.contains_key(k))
                .then(|| (rate(&waited), rate(&measured)))
        };
        if let Some((waited, measured)) = rates {
            return (waited, measured, committed);
        }
        assert!(Instant::now() < deadline, "lanes not delivered in 10 min");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Commits single events at `rate` per second for `seconds` and waits for
/// each at the receiver; the achieved commit rate and sorted latencies (ms).
async fn steady(
    pool: &motor_store::Pool,
    r: &Receiver,
    instances: &[InstanceId],
    rate: u64,
    seconds: u64,
) -> (f64, Vec<f64>) {
    r.arrived.lock().unwrap().clear();
    let total = (rate * seconds) as usize;
    let slots = Arc::new(tokio::sync::Semaphore::new(32));
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut inflight = tokio::task::JoinSet::new();
    let started = Instant::now();
    for n in 0..total {
        ticker.tick().await;
        let permit = slots.clone().acquire_owned().await.unwrap();
        let (pool, instance) = (pool.clone(), instances[n % instances.len()]);
        inflight.spawn(async move {
            let _permit = permit;
            (instance, append(&pool, instance, 1).await[0])
        });
    }
    let mut committed = Vec::with_capacity(total);
    while let Some(done) = inflight.join_next().await {
        committed.push(done.unwrap());
    }
    let achieved = total as f64 / started.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut latencies = loop {
        let done = {
            let arrived = r.arrived.lock().unwrap();
            committed
                .iter()
                .all(|(i, (seq, _))| arrived.contains_key(&(i.to_string(), *seq)))
                .then(|| {
                    committed
                        .iter()
                        .map(|(i, (seq, at))| {
                            arrived[&(i.to_string(), *seq)]
                                .saturating_duration_since(*at)
                                .as_secs_f64()
                                * 1000.0
                        })
                        .collect::<Vec<_>>()
                })
        };
        if let Some(latencies) = done {
            break latencies;
        }
        assert!(Instant::now() < deadline, "not all delivered in 5 min");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (achieved, latencies)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for the list of benchmarks.
    }
    let seconds: u64 = env_or("MOTOR_BENCH_SECONDS", "10").parse().unwrap();
    let per_instance: usize = env_or("MOTOR_BENCH_BACKLOG_PER_INSTANCE", "2000")
        .parse()
        .unwrap();
    let db = BenchDb::create().await;
    let motor: Running = start(db.config(&format!("bench{}d", db.run_id)), &ALL_ROLES).await;
    let pool = motor_store::connect(&db.url, 32).await.unwrap();

    let r = Receiver::default();
    let app_router = Router::new()
        .route("/hook", post(receive))
        .with_state(r.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let receiver_addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app_router).await.unwrap() });

    // Ten instances for every phase but the last, which spreads 1,000
    // events/s over a hundred (each instance's appends are serialised by its
    // row lock, so ten instances at 100/s each also measure that lock).
    let (many, token) = tenant(&pool, &["127.0.0.1"], 100, &["subscriptions:manage"]).await;
    let instances = many[..10].to_vec();
    let created = reqwest::Client::new()
        .post(format!("http://{}/v1/subscriptions", motor.addr.unwrap()))
        .bearer_auth(&token)
        .json(&json!({"nombre": "bench", "url": format!("http://{receiver_addr}/hook")}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);

    // Warm up: the consumer groups join (a few seconds on Tansu).
    append(&pool, instances[0], 1).await;
    while r.arrived.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    println!("motor delivery benchmark (10 instances, one ordered subscription, every role in one process)");
    let healthy = &instances[1..];
    let (rate, healthy_alone, _) =
        backlog(&pool, &r, &instances, per_instance, &instances, healthy).await;
    println!("throughput, backlog of {per_instance} per instance: {rate:>8.0} delivered events/s");

    // One slow lane among ten, right after (same table sizes): the nine
    // healthy lanes against their own throughput when all ten were healthy.
    *r.slow.lock().unwrap() = Some(instances[0].to_string());
    let (slowed, _, appended) =
        backlog(&pool, &r, &instances, per_instance, healthy, healthy).await;
    println!(
        "with instance 0 answering after 2 s: healthy lanes {slowed:>8.0} delivered events/s ({:+.1} % against {healthy_alone:.0} when all were healthy)",
        (slowed / healthy_alone - 1.0) * 100.0
    );
    // The slow lane's rest goes out fast before the latency phases.
    *r.slow.lock().unwrap() = None;
    while !appended
        .iter()
        .all(|k| r.arrived.lock().unwrap().contains_key(k))
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Latency at a steady commit rate (the achieved rate is printed too: at
    // most 32 commits are in flight, so a saturated machine shows it).
    for rate in [100u64, 1000] {
        let (achieved, latencies) = steady(&pool, &r, &instances, rate, seconds).await;
        println!(
            "commit -> receiver at {rate} events/s (achieved {achieved:.0}/s): p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms  ({} events)",
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99),
            latencies.last().copied().unwrap_or(f64::NAN),
            latencies.len()
        );
    }
    let (achieved, latencies) = steady(&pool, &r, &many, 1000, seconds).await;
    println!(
        "commit -> receiver at 1000 events/s over 100 instances (achieved {achieved:.0}/s): p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms  ({} events)",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or(f64::NAN),
        latencies.len()
    );

    motor.stop().await;
    pool.close().await;
    db.drop_db().await;
}
