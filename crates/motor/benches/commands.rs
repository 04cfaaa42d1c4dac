//! Benchmark of commands (issue 32, item 6) against a real `motor serve`
//! process (every role) on a fresh database and topic prefix, with the
//! producers and the executors in this process. Prints numbers and a
//! markdown table; asserts nothing about speed.
//!
//!   cargo bench -p motor --bench commands     (or scripts/bench)
//!
//! Phases (MOTOR_BENCH_PHASES, a comma list; unset or empty: all of them;
//! scripts/bench passes its MOTOR_BENCH_COMMAND_PHASES), run in this order:
//! - `commands-claim`: sends at a fixed MOTOR_BENCH_COMMAND_RATE over
//!   MOTOR_BENCH_COMMAND_INSTANCES instances; one executor loop per
//!   instance long-polls (`GET /v1/executor/commands?instance=&wait=1`)
//!   and claims what it is answered, one claim after the other. A second
//!   at the rate first is not measured (the first phase of a fresh
//!   process: pools open connections, statements are planned).
//! - `commands-topic`: the same rate over other instances; a Kafka consumer
//!   (rdkafka, assigned every partition of `{prefix}.commands` at its end)
//!   claims each record's command, concurrently.
//! - `commands-broker`: the broker's share of `commands-topic`, without
//!   Motor: the relay's producer (`motor_bus::Producer`, its settings)
//!   publishes records shaped like command records, at the same rate and
//!   keyed over as many instances, to `{prefix}.commands`, and the same
//!   consumer reads them: published → acknowledged and published →
//!   received. The difference from `commands-topic` is Motor's.
//! - `commands-accept`: MOTOR_BENCH_SENDERS concurrent clients POST single
//!   sends (`POST /v1/instances/{id}/messages`, a fresh `Idempotency-Key`
//!   each) over MOTOR_BENCH_INSTANCES instances for MOTOR_BENCH_SECONDS, as
//!   fast as the 202s come back: accepted/s, request latency. Last: its
//!   60,000-odd records on `{prefix}.commands` made the two phases that
//!   read that topic measure the development broker instead of Motor
//!   (Tansu's memory engine lists every batch a partition ever held at
//!   each fetch: 80–97 % of a core through those phases after it, 15 %
//!   before; docs/BENCHMARKS.md, commands, 2026-12-04 23:28–00:03).
//!
//! Accepted → claimed is this process's monotonic clock: the claim's 200
//! received minus the send's 202 received (both include a response's
//! trip). A claim can be answered before its send's 202 is (the executor
//! was woken by the commit, the producer's answer was still on its way):
//! those count as 0 ms and are reported.
//!
//! Knobs (environment): MOTOR_BENCH_SECONDS (10), MOTOR_BENCH_SENDERS (64),
//! MOTOR_BENCH_INSTANCES (100), MOTOR_BENCH_COMMAND_RATE (500),
//! MOTOR_BENCH_COMMAND_INSTANCES (10), MOTOR_BENCH_PATIENCE (60 s for the
//! last claims and for the outbox to drain), MOTOR_BENCH_FETCH_WAIT_MS (the
//! topic consumer's `fetch.wait.max.ms`, 5), MOTOR_BENCH_PHASES,
//! MOTOR_BENCH_MOTOR_BIN (default: the one cargo built),
//! MOTOR_BENCH_DATABASE_URL, MOTOR_BENCH_KAFKA_BROKERS.

mod common;
#[allow(dead_code)]
#[path = "http/receiver.rs"]
mod receiver;
#[allow(dead_code)]
#[path = "http/server.rs"]
mod server;

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use common::{env_or, number, percentile};
use rdkafka::{
    consumer::{BaseConsumer, Consumer},
    ClientConfig, Message, Offset, TopicPartitionList,
};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::task::JoinSet;
use uuid::Uuid;

/// The phases MOTOR_BENCH_PHASES may name, and its default.
const PHASES: &str = "commands-claim,commands-topic,commands-broker,commands-accept";

/// When each command's 202 (or claim's 200) was received.
type Times = Arc<Mutex<HashMap<Uuid, Instant>>>;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// The producer's and the executor's HTTP calls.
#[derive(Clone)]
struct Api {
    client: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    /// One send under a fresh key; the command's id on 202.
    async fn send(&self, instance: Uuid) -> Result<Uuid, String> {
        let response = self
            .client
            .post(format!("{}/v1/instances/{instance}/messages", self.base))
            .bearer_auth(&self.token)
            .header("Idempotency-Key", Uuid::new_v4().simple().to_string())
            .json(&json!({
                "chat": "5491100000000",
                "contenido": {"texto": "bench: a message of about the size of a short chat line"},
            }))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        if status != StatusCode::ACCEPTED {
            return Err(format!("{status}: {body}"));
        }
        body["id"]
            .as_str()
            .and_then(|id| id.parse().ok())
            .ok_or_else(|| format!("no id in {body}"))
    }

    /// The long-poll: ids of the instance's claimable commands.
    async fn poll(&self, instance: Uuid) -> Result<Vec<Uuid>, String> {
        let response = self
            .client
            .get(format!(
                "{}/v1/executor/commands?instance={instance}&wait=1&limit=100",
                self.base
            ))
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        if status != StatusCode::OK {
            return Err(format!("{status}: {body}"));
        }
        Ok(body["commands"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["command_id"].as_str()?.parse().ok())
            .collect())
    }

    /// Claims `id`; whether this claim won (200).
    async fn claim(&self, id: Uuid) -> Result<bool, String> {
        let response = self
            .client
            .post(format!("{}/v1/executor/commands/{id}/claim", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        match response.status() {
            StatusCode::OK => Ok(true),
            StatusCode::CONFLICT => Ok(false),
            status => Err(format!(
                "{status}: {}",
                response.text().await.unwrap_or_default()
            )),
        }
    }
}

/// Sends at `rate` per second over `instances` for `seconds` (open loop:
/// a send every 1/rate whatever the answers do), recording each 202 in
/// `accepted`. Answers (sent, errors, first error).
async fn open_loop(
    api: &Api,
    instances: &[Uuid],
    rate: f64,
    seconds: f64,
    accepted: &Times,
) -> (usize, usize, Option<String>) {
    let total = (rate * seconds).round() as usize;
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut sends = JoinSet::new();
    for i in 0..total {
        ticks.tick().await;
        let (api, accepted, instance) = (
            api.clone(),
            accepted.clone(),
            instances[i % instances.len()],
        );
        sends.spawn(async move {
            let id = api.send(instance).await?;
            accepted.lock().unwrap().insert(id, Instant::now());
            Ok::<_, String>(())
        });
    }
    let (mut errors, mut first_error) = (0, None);
    while let Some(done) = sends.join_next().await {
        if let Err(e) = done.unwrap() {
            errors += 1;
            first_error.get_or_insert(e);
        }
    }
    (total, errors, first_error)
}

/// Waits until every accepted command was claimed (or `patience` passed
/// without a new claim), then answers the accepted → claimed latencies
/// (ms, sorted), how many were claimed before their 202 arrived and how
/// many were never claimed.
async fn latencies(
    accepted: &Times,
    claimed: &Times,
    patience: Duration,
) -> (Vec<f64>, usize, usize) {
    let mut last = (usize::MAX, Instant::now());
    loop {
        let missing = {
            let (a, c) = (accepted.lock().unwrap(), claimed.lock().unwrap());
            a.keys().filter(|id| !c.contains_key(id)).count()
        };
        if missing == 0 {
            break;
        }
        if missing != last.0 {
            last = (missing, Instant::now());
        } else if last.1.elapsed() > patience {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (a, c) = (accepted.lock().unwrap(), claimed.lock().unwrap());
    let (mut early, mut missing) = (0, 0);
    let mut out: Vec<f64> = a
        .iter()
        .filter_map(|(id, at)| match c.get(id) {
            Some(claimed) if claimed < at => {
                early += 1;
                Some(0.0)
            }
            Some(claimed) => Some(ms(*claimed - *at)),
            None => {
                missing += 1;
                None
            }
        })
        .collect();
    out.sort_by(f64::total_cmp);
    (out, early, missing)
}

/// One executor loop per instance: long-poll, claim each answered command
/// in turn, record the won claims in `claimed`; until `stop`.
fn executors(
    api: &Api,
    instances: &[Uuid],
    claimed: &Times,
    stop: &Arc<AtomicBool>,
) -> JoinSet<usize> {
    let mut loops = JoinSet::new();
    for &instance in instances {
        let (api, claimed, stop) = (api.clone(), claimed.clone(), stop.clone());
        loops.spawn(async move {
            let mut errors = 0;
            while !stop.load(Ordering::Relaxed) {
                let ids = match api.poll(instance).await {
                    Ok(ids) => ids,
                    Err(e) => {
                        errors += 1;
                        eprintln!("  ! poll: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                for id in ids {
                    match api.claim(id).await {
                        Ok(true) => {
                            claimed.lock().unwrap().insert(id, Instant::now());
                        }
                        Ok(false) => {}
                        Err(e) => {
                            errors += 1;
                            eprintln!("  ! claim: {e}");
                        }
                    }
                }
            }
            errors
        });
    }
    loops
}

/// A consumer of `{prefix}.commands` assigned every partition at its end,
/// on its own thread: the records of `instances`, (command id, arrival),
/// into the channel; until `stop`.
fn topic_reader(
    brokers: &str,
    topic: &str,
    instances: &[Uuid],
    stop: &Arc<AtomicBool>,
) -> tokio::sync::mpsc::UnboundedReceiver<(Uuid, Instant)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("{topic}-bench"))
        .set("enable.auto.commit", "false")
        .set(
            "fetch.wait.max.ms",
            env_or("MOTOR_BENCH_FETCH_WAIT_MS", "5"),
        )
        .set("fetch.min.bytes", "1")
        .create()
        .unwrap();
    let partitions = loop {
        if let Ok(md) = consumer.fetch_metadata(Some(topic), Duration::from_secs(5)) {
            let n = md.topics()[0].partitions().len();
            if n > 0 {
                break n as i32;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut assignment = TopicPartitionList::new();
    for p in 0..partitions {
        assignment
            .add_partition_offset(topic, p, Offset::End)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (instances, stop) = (instances.to_vec(), stop.clone());
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) else {
                continue;
            };
            let arrived = Instant::now();
            let Some(record) = message
                .payload()
                .and_then(|p| serde_json::from_slice::<Value>(p).ok())
            else {
                continue;
            };
            let field = |name: &str| record[name].as_str().and_then(|v| v.parse::<Uuid>().ok());
            if let (Some(id), Some(instance)) = (field("command_id"), field("instance_id")) {
                if instances.contains(&instance) && tx.send((id, arrived)).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// Claims every command the topic reader hands over, each claim its own
/// task; records the arrivals and the won claims.
fn topic_claimer(
    api: &Api,
    mut records: tokio::sync::mpsc::UnboundedReceiver<(Uuid, Instant)>,
    arrived: &Times,
    claimed: &Times,
) -> tokio::task::JoinHandle<usize> {
    let (api, arrived, claimed) = (api.clone(), arrived.clone(), claimed.clone());
    tokio::spawn(async move {
        let mut claims = JoinSet::new();
        while let Some((id, at)) = records.recv().await {
            arrived.lock().unwrap().insert(id, at);
            let (api, claimed) = (api.clone(), claimed.clone());
            claims.spawn(async move {
                match api.claim(id).await {
                    Ok(true) => {
                        claimed.lock().unwrap().insert(id, Instant::now());
                        0
                    }
                    Ok(false) => 0,
                    Err(e) => {
                        eprintln!("  ! claim: {e}");
                        1
                    }
                }
            });
            while let Some(done) = claims.try_join_next() {
                done.unwrap();
            }
        }
        let mut errors = 0;
        while let Some(done) = claims.join_next().await {
            errors += done.unwrap();
        }
        errors
    })
}

/// `commands-broker`: records shaped like command records, published by
/// the relay's producer at `rate` for `seconds`, keyed over `keys`
/// instances of no command, read back by [`topic_reader`].
async fn broker_alone(
    bus: &motor_bus::BusConfig,
    topic: &str,
    rate: f64,
    seconds: f64,
    keys: usize,
    patience: Duration,
) -> Row {
    let instances: Vec<Uuid> = (0..keys).map(|_| Uuid::new_v4()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let mut records = topic_reader(&bus.brokers, topic, &instances, &stop);
    let producer = motor_bus::Producer::new(bus).unwrap();
    let (published, acknowledged, received): (Times, Times, Times) = Default::default();
    let publish = |instance: Uuid| {
        let (producer, published, acknowledged) =
            (producer.clone(), published.clone(), acknowledged.clone());
        let topic = topic.to_owned();
        async move {
            let id = Uuid::new_v4();
            let payload = json!({"command_id": id, "instance_id": instance, "tipo": "mensaje"});
            let (key, payload) = (instance.to_string(), payload.to_string());
            let record = motor_bus::Record {
                topic: &topic,
                key: &key,
                payload: payload.as_bytes(),
                headers: &[],
            };
            published.lock().unwrap().insert(id, Instant::now());
            let delivery = producer.enqueue(&[record]).await;
            tokio::spawn(async move {
                if delivery.reports().await.iter().all(Result::is_ok) {
                    acknowledged.lock().unwrap().insert(id, Instant::now());
                }
            });
            id
        }
    };
    // Warm-up: until a record published now comes back.
    let deadline = Instant::now() + patience;
    'warm: loop {
        let id = publish(instances[0]).await;
        let tried = Instant::now();
        while tried.elapsed() < Duration::from_secs(3) {
            if let Ok((got, _)) = records.try_recv() {
                if got == id {
                    break 'warm;
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            Instant::now() < deadline,
            "no record on {topic} within the patience"
        );
    }
    published.lock().unwrap().clear();
    acknowledged.lock().unwrap().clear();
    let reader = {
        let received = received.clone();
        tokio::spawn(async move {
            while let Some((id, at)) = records.recv().await {
                received.lock().unwrap().insert(id, at);
            }
        })
    };
    let total = (rate * seconds).round() as usize;
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    for i in 0..total {
        ticks.tick().await;
        publish(instances[i % instances.len()]).await;
    }
    let (lat, _, missing) = latencies(&published, &received, patience).await;
    let (acks, _, unacknowledged) = latencies(&published, &acknowledged, Duration::ZERO).await;
    stop.store(true, Ordering::Relaxed);
    reader.abort();
    println!(
        "  {total} published at {rate}/s: published → acknowledged p50 {:.1} ms, p99 {:.1} ms \
         ({unacknowledged} unacknowledged); published → received p50 {:.1} ms, p99 {:.1} ms, \
         max {:.1} ms ({missing} never received); load average after {}",
        percentile(&acks, 0.5),
        percentile(&acks, 0.99),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.last().copied().unwrap_or(f64::NAN),
        load_average()
    );
    Row {
        what: format!("commands-broker: the broker alone, {rate}/s over {keys} keys, the relay's producer → the same consumer, published → received"),
        measured: format!(
            "p50 {:.1} / p99 {:.1} / max {:.1} ms ({missing} unreceived); acknowledged p50 {:.1} / p99 {:.1} ms",
            percentile(&lat, 0.5),
            percentile(&lat, 0.99),
            lat.last().copied().unwrap_or(f64::NAN),
            percentile(&acks, 0.5),
            percentile(&acks, 0.99),
        ),
        target: "none: the broker's floor under commands-topic",
        met: None,
    }
}

async fn drain_outbox(pool: &motor_store::Pool, patience: Duration) {
    let deadline = Instant::now() + patience;
    loop {
        let pending = motor_store::outbox::pending(pool).await.unwrap();
        if pending == 0 {
            return;
        }
        if Instant::now() > deadline {
            println!("  ! the outbox still holds {pending} records");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

struct Row {
    what: String,
    measured: String,
    target: &'static str,
    /// `None`: a measurement with no target.
    met: Option<bool>,
}

fn latency_row(
    what: String,
    lat: &[f64],
    early: usize,
    missing: usize,
    target_p99: f64,
    target: &'static str,
) -> Row {
    let (p50, p99, max) = (
        percentile(lat, 0.5),
        percentile(lat, 0.99),
        lat.last().copied().unwrap_or(f64::NAN),
    );
    println!(
        "  accepted → claimed over {} commands: p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms; \
         {early} claimed before their 202 arrived (counted 0 ms), {missing} never claimed",
        lat.len()
    );
    Row {
        what,
        measured: format!("p50 {p50:.1} / p99 {p99:.1} / max {max:.1} ms ({missing} unclaimed)"),
        target,
        met: Some(p99 <= target_p99 && missing == 0),
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for the list of benchmarks.
    }
    let seconds = number("MOTOR_BENCH_SECONDS", "10");
    let senders = number("MOTOR_BENCH_SENDERS", "64") as usize;
    let n = number("MOTOR_BENCH_INSTANCES", "100") as usize;
    let rate = number("MOTOR_BENCH_COMMAND_RATE", "500");
    let executed = number("MOTOR_BENCH_COMMAND_INSTANCES", "10") as usize;
    let patience = Duration::from_secs_f64(number("MOTOR_BENCH_PATIENCE", "60"));
    let phases: Vec<String> = env_or("MOTOR_BENCH_PHASES", "")
        .split(',')
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    let phases = if phases.is_empty() {
        PHASES.split(',').map(str::to_owned).collect()
    } else {
        phases
    };
    for p in &phases {
        assert!(
            PHASES.split(',').any(|known| known == p),
            "MOTOR_BENCH_PHASES: {p:?} is not one of {PHASES}"
        );
    }
    let runs = |name: &str| phases.iter().any(|p| p == name);

    let binary = PathBuf::from(env_or("MOTOR_BENCH_MOTOR_BIN", env!("CARGO_BIN_EXE_motor")));
    let mut db = common::BenchDb::create().await;
    db.checkpoint().await;
    let motor = server::Motor::start(&binary, &db).await;
    let app = motor
        .post(
            "/v1/admin/apps",
            &motor.admin_token,
            json!({"nombre": "bench-commands"}),
        )
        .await;
    let app = app["id"].as_str().unwrap().to_owned();
    let accept_instances = motor.instances(&app, n, "accept").await;
    let claim_instances = motor.instances(&app, executed, "claim").await;
    let topic_instances = motor.instances(&app, executed, "topic").await;
    let key = motor
        .post(
            &format!("/v1/admin/apps/{app}/keys"),
            &motor.admin_token,
            json!({"nombre": "bench", "scopes": ["commands:write", "commands:execute"]}),
        )
        .await;
    let token = key["token"].as_str().unwrap().to_owned();
    let producer = Api {
        client: reqwest::Client::new(),
        base: motor.base.clone(),
        token: token.clone(),
    };
    let executor = Api {
        client: reqwest::Client::new(),
        ..producer.clone()
    };
    let pool = motor_store::connect(&db.url, 2).await.unwrap();
    println!(
        "motor commands benchmark: {} ({}), {seconds} s per phase, {senders} senders over {n} \
         instances, {rate}/s over {executed} instances; Motor log {}",
        binary.display(),
        db.run_id,
        motor.log.display()
    );
    let mut rows = Vec::new();

    if runs("commands-claim") {
        println!("commands-claim (load average {})", load_average());
        let (accepted, claimed): (Times, Times) = Default::default();
        let stop = Arc::new(AtomicBool::new(false));
        let mut loops = executors(&executor, &claim_instances, &claimed, &stop);
        // Warm-up, not measured: a second at the rate, every command
        // claimed (the pools' connections opened, the statements planned).
        let warm = Times::default();
        open_loop(&producer, &claim_instances, rate, 1.0, &warm).await;
        latencies(&warm, &claimed, patience).await;
        let (sent, errors, first_error) =
            open_loop(&producer, &claim_instances, rate, seconds, &accepted).await;
        let (lat, early, missing) = latencies(&accepted, &claimed, patience).await;
        stop.store(true, Ordering::Relaxed);
        let mut executor_errors = 0;
        while let Some(done) = loops.join_next().await {
            executor_errors += done.unwrap();
        }
        println!(
            "  {sent} sent at {rate}/s, {errors} send errors{}, {executor_errors} executor errors; load average after {}",
            first_error.map(|e| format!(" (first: {e})")).unwrap_or_default(),
            load_average()
        );
        rows.push(latency_row(
            format!("commands-claim: {rate}/s over {executed} instances, long-poll executor per instance, accepted → claimed"),
            &lat,
            early,
            missing,
            20.0,
            "p99 ≤ 20 ms",
        ));
        drain_outbox(&pool, patience).await;
    }

    if runs("commands-topic") {
        println!("commands-topic (load average {})", load_average());
        let (accepted, arrived, claimed): (Times, Times, Times) = Default::default();
        let stop = Arc::new(AtomicBool::new(false));
        let topic = format!("{}.commands", motor.prefix);
        let records = topic_reader(&db.brokers, &topic, &topic_instances, &stop);
        let claimer = topic_claimer(&executor, records, &arrived, &claimed);
        // Warm-up: until one command sent now comes back through the
        // topic (the assignment at the end has resolved).
        let deadline = Instant::now() + patience;
        'warm: loop {
            let id = producer.send(topic_instances[0]).await.unwrap();
            let tried = Instant::now();
            while tried.elapsed() < Duration::from_secs(3) {
                if claimed.lock().unwrap().contains_key(&id) {
                    break 'warm;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(
                Instant::now() < deadline,
                "no record on {topic} within the patience"
            );
        }
        let (sent, errors, first_error) =
            open_loop(&producer, &topic_instances, rate, seconds, &accepted).await;
        let (lat, early, missing) = latencies(&accepted, &claimed, patience).await;
        let (to_record, _, _) = latencies(&accepted, &arrived, Duration::ZERO).await;
        stop.store(true, Ordering::Relaxed);
        let claim_errors = claimer.await.unwrap();
        println!(
            "  {sent} sent at {rate}/s, {errors} send errors{}, {claim_errors} claim errors; \
             accepted → record received p50 {:.1} ms, p99 {:.1} ms; load average after {}",
            first_error
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default(),
            percentile(&to_record, 0.5),
            percentile(&to_record, 0.99),
            load_average()
        );
        rows.push(latency_row(
            format!("commands-topic: {rate}/s over {executed} instances, a consumer of {{prefix}}.commands claims each record, accepted → claimed"),
            &lat,
            early,
            missing,
            50.0,
            "p99 ≤ 50 ms",
        ));
    }

    if runs("commands-broker") {
        println!("commands-broker (load average {})", load_average());
        let topic = format!("{}.commands", motor.prefix);
        let bus = motor_bus::BusConfig {
            brokers: db.brokers.clone(),
            prefix: motor.prefix.clone(),
            partitions: 8,
            replication: 1,
        };
        rows.push(broker_alone(&bus, &topic, rate, seconds, executed, patience).await);
    }

    if runs("commands-accept") {
        println!("commands-accept (load average {})", load_average());
        let end = Instant::now() + Duration::from_secs_f64(seconds);
        let started = Instant::now();
        let mut clients = JoinSet::new();
        for s in 0..senders {
            let (api, instances) = (producer.clone(), accept_instances.clone());
            clients.spawn(async move {
                let (mut latencies, mut errors, mut first_error) = (Vec::new(), 0, None);
                let mut i = s;
                while Instant::now() < end {
                    let at = Instant::now();
                    match api.send(instances[i % instances.len()]).await {
                        Ok(_) => latencies.push(ms(at.elapsed())),
                        Err(e) => {
                            errors += 1;
                            first_error.get_or_insert(e);
                        }
                    }
                    i += senders;
                }
                (latencies, errors, first_error)
            });
        }
        let (mut latencies, mut errors, mut first_error) = (Vec::new(), 0, None);
        while let Some(done) = clients.join_next().await {
            let (l, e, f) = done.unwrap();
            latencies.extend(l);
            errors += e;
            if first_error.is_none() {
                first_error = f;
            }
        }
        let elapsed = started.elapsed().as_secs_f64();
        latencies.sort_by(f64::total_cmp);
        let per_s = latencies.len() as f64 / elapsed;
        let (p50, p99) = (percentile(&latencies, 0.5), percentile(&latencies, 0.99));
        println!(
            "  {} accepted in {elapsed:.1} s: {per_s:.0} accepted/s; request p50 {p50:.1} ms, \
             p99 {p99:.1} ms; {errors} errors{}; load average after {}",
            latencies.len(),
            first_error
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default(),
            load_average()
        );
        rows.push(Row {
            what: format!("commands-accept: {senders} clients, single sends, fresh Idempotency-Key, {n} instances"),
            measured: format!("{per_s:.0}/s (request p50 {p50:.1} / p99 {p99:.1} ms, {errors} errors)"),
            target: "≥ 3,000/s",
            met: Some(per_s >= 3000.0 && errors == 0),
        });
        drain_outbox(&pool, patience).await;
    }

    println!();
    println!("| phase | measured | target | met |");
    println!("|---|---|---|---|");
    for row in &rows {
        println!(
            "| {} | {} | {} | {} |",
            row.what,
            row.measured,
            row.target,
            match row.met {
                Some(true) => "yes",
                Some(false) => "no",
                None => "—",
            }
        );
    }
    println!();
    println!("load average at the end: {}", load_average());

    motor.stop().await;
    pool.close().await;
    db.drop_db().await;
}
