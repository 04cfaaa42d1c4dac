//! Benchmark of broker delivery next to webhooks, on the same run: one
//! app, 10 instances, three ordered subscriptions (a webhook receiver on
//! loopback, a RabbitMQ queue, a JetStream stream), every role in this
//! process. Prints numbers; asserts nothing about speed.
//!
//!   scripts/services && cargo bench -p motor --bench brokers
//!
//! Phases:
//! 1. throughput: a backlog of MOTOR_BENCH_BACKLOG_PER_INSTANCE events per
//!    instance appended at once; delivered events/s per destination (all
//!    three deliver the same events at the same time, sharing the machine);
//! 2. latency: MOTOR_BENCH_RATE single-event commits/s for
//!    MOTOR_BENCH_SECONDS; commit → consumer p50/p99 per destination (the
//!    webhook's request arrives, a RabbitMQ consumer gets the message, a
//!    JetStream ordered consumer gets it).

mod common;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{body::Bytes, extract::State, http::StatusCode, routing::post, Router};
use common::{env_or, percentile, start, tenant, BenchDb};
use futures::StreamExt;
use lapin::{
    options::{
        BasicConsumeOptions, ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions,
        QueueDeclareOptions, QueueDeleteOptions,
    },
    types::FieldTable,
    Connection, ConnectionProperties, ExchangeKind,
};
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
const KINDS: [&str; 3] = ["webhook", "rabbitmq", "nats"];

/// (destination kind, instance, seq).
type Key = (&'static str, String, i64);

/// First arrival of each (instance, seq), per destination kind.
#[derive(Clone, Default)]
struct Arrivals(Arc<Mutex<HashMap<Key, Instant>>>);

impl Arrivals {
    fn record(&self, kind: &'static str, body: &[u8]) {
        let envelope: Value = serde_json::from_slice(body).unwrap_or_default();
        let instance = envelope["instance_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let seq = envelope["seq"].as_i64().unwrap_or(-1);
        self.0
            .lock()
            .unwrap()
            .entry((kind, instance, seq))
            .or_insert_with(Instant::now);
    }

    fn get(&self, kind: &'static str, instance: &str, seq: i64) -> Option<Instant> {
        self.0
            .lock()
            .unwrap()
            .get(&(kind, instance.to_owned(), seq))
            .copied()
    }
}

async fn receive(State(a): State<Arrivals>, body: Bytes) -> StatusCode {
    a.record("webhook", &body);
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
            let seq = serde_json::from_str::<Value>(e).unwrap()["seq"]
                .as_i64()
                .unwrap();
            out.push((seq, at));
        }
    }
    out
}

/// Waits until every committed (instance, seq, commit instant) reached
/// every kind; per kind, the instant of its last arrival and the sorted
/// commit → arrival latencies (ms).
async fn wait_all(
    a: &Arrivals,
    committed: &[(String, i64, Instant)],
) -> HashMap<&'static str, (Instant, Vec<f64>)> {
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let done = KINDS.iter().all(|kind| {
            committed
                .iter()
                .all(|(i, seq, _)| a.get(kind, i, *seq).is_some())
        });
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "not all delivered in 15 min");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    KINDS
        .iter()
        .map(|kind| {
            let arrivals: Vec<(Instant, f64)> = committed
                .iter()
                .map(|(i, seq, at)| {
                    let got = a.get(kind, i, *seq).unwrap();
                    (
                        got,
                        got.saturating_duration_since(*at).as_secs_f64() * 1000.0,
                    )
                })
                .collect();
            let last = arrivals.iter().map(|(t, _)| *t).max().unwrap();
            let mut latencies: Vec<f64> = arrivals.into_iter().map(|(_, l)| l).collect();
            latencies.sort_by(|x, y| x.partial_cmp(y).unwrap());
            (*kind, (last, latencies))
        })
        .collect()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for the list of benchmarks.
    }
    let seconds: u64 = env_or("MOTOR_BENCH_SECONDS", "10").parse().unwrap();
    let rate: u64 = env_or("MOTOR_BENCH_RATE", "50").parse().unwrap();
    let per_instance: usize = env_or("MOTOR_BENCH_BACKLOG_PER_INSTANCE", "500")
        .parse()
        .unwrap();
    let rabbit_url = env_or("MOTOR_BENCH_RABBITMQ", "127.0.0.1:5672");
    let nats_url = env_or("MOTOR_BENCH_NATS", "127.0.0.1:4222");
    let db = BenchDb::create().await;
    let motor = start(db.config(&format!("bench{}b", db.run_id)), &ALL_ROLES).await;
    let pool = motor_store::connect(&db.url, 32).await.unwrap();
    let arrivals = Arrivals::default();
    let name = format!("motor-bench-{}", db.run_id);

    // The webhook receiver.
    let router = Router::new()
        .route("/hook", post(receive))
        .with_state(arrivals.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let receiver = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    // RabbitMQ: a topic exchange, a queue bound with `#`, a consumer.
    let props = ConnectionProperties::default()
        .with_executor(tokio_executor_trait::Tokio::current())
        .with_reactor(tokio_reactor_trait::Tokio::current());
    let rabbit = Connection::connect(&format!("amqp://guest:guest@{rabbit_url}/%2f"), props)
        .await
        .expect("RabbitMQ");
    let ch = rabbit.create_channel().await.unwrap();
    ch.exchange_declare(
        &name,
        ExchangeKind::Topic,
        ExchangeDeclareOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    ch.queue_declare(&name, QueueDeclareOptions::default(), FieldTable::default())
        .await
        .unwrap();
    ch.queue_bind(
        &name,
        &name,
        "#",
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    let mut consumer = ch
        .basic_consume(
            &name,
            "bench",
            BasicConsumeOptions {
                no_ack: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .unwrap();
    let a = arrivals.clone();
    tokio::spawn(async move {
        while let Some(Ok(delivery)) = consumer.next().await {
            a.record("rabbitmq", &delivery.data);
        }
    });

    // NATS: a stream on `{name}.>` and an ordered consumer.
    let nats = async_nats::connect(&nats_url).await.expect("NATS");
    let js = async_nats::jetstream::new(nats);
    let stream = js
        .create_stream(async_nats::jetstream::stream::Config {
            name: name.clone(),
            subjects: vec![format!("{name}.>")],
            ..Default::default()
        })
        .await
        .unwrap();
    let ordered = stream
        .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig::default())
        .await
        .unwrap();
    let mut messages = ordered.messages().await.unwrap();
    let a = arrivals.clone();
    tokio::spawn(async move {
        while let Some(Ok(m)) = messages.next().await {
            a.record("nats", &m.payload);
        }
    });

    let (many, token) = tenant(&pool, &["127.0.0.1"], 10, &["subscriptions:manage"]).await;
    let http = reqwest::Client::new();
    for url in [
        format!("http://{receiver}/hook"),
        format!("amqp://{rabbit_url}/?exchange={name}"),
        format!("nats://{nats_url}/{name}.{{type}}"),
    ] {
        let created = http
            .post(format!("http://{}/v1/subscriptions", motor.addr.unwrap()))
            .bearer_auth(&token)
            .json(&json!({"nombre": "bench", "url": url}))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201, "{url}");
    }

    // Warm up: the consumer groups join, the broker connections open.
    let warm: Vec<(String, i64, Instant)> = append(&pool, many[0], 1)
        .await
        .into_iter()
        .map(|(seq, at)| (many[0].to_string(), seq, at))
        .collect();
    wait_all(&arrivals, &warm).await;

    println!("motor broker benchmark (10 instances, three ordered subscriptions — webhook, RabbitMQ, NATS JetStream — every role in one process)");
    let started = Instant::now();
    let mut committed = Vec::new();
    for instance in &many {
        for (seq, at) in append(&pool, *instance, per_instance).await {
            committed.push((instance.to_string(), seq, at));
        }
    }
    let done = wait_all(&arrivals, &committed).await;
    for kind in KINDS {
        let (last, _) = done[kind];
        println!(
            "throughput, backlog of {per_instance} per instance, {kind:>8}: {:>6.0} delivered events/s",
            committed.len() as f64 / (last - started).as_secs_f64()
        );
    }

    let total = (rate * seconds) as usize;
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut committed = Vec::with_capacity(total);
    let started = Instant::now();
    for n in 0..total {
        ticker.tick().await;
        let instance = many[n % many.len()];
        for (seq, at) in append(&pool, instance, 1).await {
            committed.push((instance.to_string(), seq, at));
        }
    }
    let achieved = total as f64 / started.elapsed().as_secs_f64();
    let done = wait_all(&arrivals, &committed).await;
    for kind in KINDS {
        let (_, latencies) = &done[kind];
        println!(
            "commit -> consumer at {rate} events/s (achieved {achieved:.0}/s), {kind:>8}: p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms  ({} events)",
            percentile(latencies, 0.5),
            percentile(latencies, 0.99),
            latencies.last().copied().unwrap_or(f64::NAN),
            latencies.len()
        );
    }

    motor.stop().await;
    let _ = ch.queue_delete(&name, QueueDeleteOptions::default()).await;
    let _ = ch
        .exchange_delete(&name, ExchangeDeleteOptions::default())
        .await;
    let _ = rabbit.close(200, "done").await;
    let _ = js.delete_stream(&name).await;
    pool.close().await;
    db.drop_db().await;
}
