//! Benchmark of issue 9's target 5: a million deliveries parked behind
//! suspended subscriptions, then drained. Prints numbers; asserts nothing.
//!
//!   scripts/bench     (runs it after the HTTP benchmark, on a fresh broker)
//!
//! The `motor` binary runs as its own process (every role) on a fresh
//! database, as in the HTTP benchmark (`benches/http.rs`), with the same
//! receiver (answers 204 at once, remembers the first arrival of each
//! delivery). Its app has 100 instances covered by one ordered
//! subscription and one instance covered by one unordered subscription.
//! Both are suspended (`suspendida`, `rechazo_401`, as the engine leaves
//! them), then the backlog is written with set-based inserts: half of
//! MOTOR_BENCH_PARKED deliveries in the ordered subscription's 100 lanes
//! (every lane's head due, the rest parked behind it), half in the
//! unordered one, each of an event of ~175 bytes in the ledger. Then:
//!
//! Motor runs while the backlog is written; its sweeper passes of that
//! time (on a never-analysed table growing by a lane at a time) are
//! printed apart, and the target's row counts the passes of 1 and 2:
//!
//! 1. parked: Motor runs with the backlog for MOTOR_BENCH_PARKED_SECONDS
//!    (30): its RSS (sampled every 250 ms), every sweeper pass
//!    (`motor_sweeper_pass_seconds` on `/metrics`) and the CPU of Motor
//!    and Postgres;
//! 2. reactivation: both subscriptions PATCHed `activa` through the API
//!    (each PATCH timed), and the whole backlog drained to the receiver:
//!    delivered events/s per subscription (from the first PATCH to the
//!    last arrival), Motor's RSS, the sweeper passes and CPU per event.
//!
//! Knobs: MOTOR_BENCH_PARKED (1000000), MOTOR_BENCH_PARKED_SECONDS (30),
//! MOTOR_BENCH_PATIENCE (seconds without a new arrival before the drain
//! reports what is missing; 60), MOTOR_BENCH_MOTOR_BIN,
//! MOTOR_BENCH_DATABASE_URL, MOTOR_BENCH_KAFKA_BROKERS.

// The HTTP benchmark's parts; this one uses some of each.
mod common;
#[allow(dead_code)]
#[path = "http/cpu.rs"]
mod cpu;
#[allow(dead_code)]
#[path = "http/receiver.rs"]
mod receiver;
#[allow(dead_code)]
#[path = "http/server.rs"]
mod server;

use std::{
    collections::HashSet,
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use common::{env_or, number, rss_mb, BenchDb};
use cpu::{Processes, Usage};
use receiver::{now_ms, Hook, Key, Receiver};
use serde_json::json;
use sqlx::Executor;
use uuid::Uuid;

/// A sweeper pass's budget (issue 9, target 5).
const PASS_BUDGET_S: f64 = 0.05;

/// Samples Motor's RSS every 250 ms until dropped; the largest seen.
struct RssWatch {
    max_kb: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl RssWatch {
    fn start(pid: u32) -> Self {
        let (max_kb, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (max, stopped) = (max_kb.clone(), stop.clone());
        tokio::spawn(async move {
            while !stopped.load(Ordering::Relaxed) {
                let kb = (rss_mb(pid) * 1024.0) as u64;
                max.fetch_max(kb, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        });
        Self { max_kb, stop }
    }

    fn max_mb(&self) -> f64 {
        self.max_kb.load(Ordering::Relaxed) as f64 / 1024.0
    }
}

impl Drop for RssWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The sweeper passes so far, from `/metrics`: how many, how many took
/// longer than [`PASS_BUDGET_S`], the total seconds, and the upper bound
/// of the slowest pass's bucket.
#[derive(Clone, Copy, Default, Debug)]
struct Passes {
    count: f64,
    over_budget: f64,
    sum: f64,
    slowest_bucket: f64,
}

impl Passes {
    async fn read(client: &reqwest::Client, base: &str) -> Self {
        let text = client
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let mut passes = Passes::default();
        let mut within_budget = 0.0;
        let mut buckets: Vec<(f64, f64)> = Vec::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("motor_sweeper_pass_seconds") else {
                continue;
            };
            let value: f64 = rest
                .rsplit(' ')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0);
            if rest.starts_with("_count") {
                passes.count = value;
            } else if rest.starts_with("_sum") {
                passes.sum = value;
            } else if let Some(le) = rest
                .strip_prefix("_bucket{le=\"")
                .and_then(|r| r.split('"').next())
            {
                let le: f64 = le.parse().unwrap_or(f64::INFINITY);
                if (le - PASS_BUDGET_S).abs() < 1e-9 {
                    within_budget = value;
                }
                buckets.push((le, value));
            }
        }
        passes.over_budget = passes.count - within_budget;
        passes.slowest_bucket = buckets
            .iter()
            .find(|(_, n)| *n >= passes.count)
            .map_or(f64::NAN, |(le, _)| *le);
        passes
    }

    /// The passes between `before` and `self` (the slowest bucket is of
    /// the whole run so far: histograms do not subtract).
    fn since(&self, before: &Passes) -> String {
        let count = self.count - before.count;
        if count == 0.0 {
            return "no pass".into();
        }
        format!(
            "{count:.0} passes, mean {:.1} ms, {:.0} over {:.0} ms; slowest so far ≤ {:.0} ms",
            (self.sum - before.sum) / count * 1000.0,
            self.over_budget - before.over_budget,
            PASS_BUDGET_S * 1000.0,
            self.slowest_bucket * 1000.0
        )
    }
}

/// Writes the backlog: `per_lane` events on each ordered instance and
/// `unordered` on the unordered one, each with a delivery to its
/// subscription, all `pendiente` and due since before the subscriptions
/// were suspended; the ordered lanes' deliveries after the head parked.
async fn build(
    db: &BenchDb,
    app: Uuid,
    ordered: (Uuid, &[Uuid]),
    unordered: (Uuid, Uuid),
    per_lane: i64,
    unordered_n: i64,
) {
    let pool = motor_store::connect(&db.url, 2).await.unwrap();
    pool.execute(
        format!(
            "UPDATE subscriptions SET estado = 'suspendida', motivo = 'rechazo_401',
                 suspendido_en = now() WHERE id IN ('{}', '{}')",
            ordered.0, unordered.0
        )
        .as_str(),
    )
    .await
    .unwrap();
    // ~175-byte envelopes of the shape the receiver reads.
    let events = |instance: Uuid, n: i64| {
        format!(
            "INSERT INTO events (instance_id, seq, event_id, type, recibido_en, envelope)
             SELECT '{instance}', e.g, e.id, 'message.received', now() - interval '1 hour',
                    json_build_object(
                        'event_id', e.id, 'instance_id', '{instance}'::uuid, 'seq', e.g,
                        'type', 'message.received',
                        'received_at', to_char((now() - interval '1 hour') AT TIME ZONE 'UTC',
                                               'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
                        'data', json_build_object('text', repeat('x', 40)))::text
             FROM (SELECT g, gen_random_uuid() AS id FROM generate_series(1, {n}) g) e;
             UPDATE instances SET last_seq = {n} WHERE id = '{instance}';"
        )
    };
    let deliveries = |subscription: Uuid, instance: Uuid, parked: bool| {
        format!(
            "INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq,
                                     estado, proximo_intento, aparcado_en, creado_en)
             SELECT motor_uuid_v7(), '{subscription}', '{app}', e.instance_id, e.event_id, e.seq,
                    'pendiente', now() - interval '1 hour' + e.seq * interval '1 ms',
                    CASE WHEN {parked} AND e.seq > 1 THEN now() END, now() - interval '1 hour'
             FROM events e WHERE e.instance_id = '{instance}'"
        )
    };
    for instance in ordered.1 {
        pool.execute(events(*instance, per_lane).as_str())
            .await
            .unwrap();
        pool.execute(deliveries(ordered.0, *instance, true).as_str())
            .await
            .unwrap();
    }
    pool.execute(events(unordered.1, unordered_n).as_str())
        .await
        .unwrap();
    pool.execute(deliveries(unordered.0, unordered.1, false).as_str())
        .await
        .unwrap();
    pool.close().await;
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for the list of benchmarks.
    }
    let parked = number("MOTOR_BENCH_PARKED", "1000000") as i64;
    let parked_seconds = number("MOTOR_BENCH_PARKED_SECONDS", "30");
    let patience = Duration::from_secs_f64(number("MOTOR_BENCH_PATIENCE", "60"));
    let binary = PathBuf::from(env_or("MOTOR_BENCH_MOTOR_BIN", env!("CARGO_BIN_EXE_motor")));
    let db = BenchDb::create().await;
    let (receiver, receiver_addr) = Receiver::start().await;
    let motor = server::Motor::start(&binary, &db).await;
    let tenant = motor.tenant(receiver_addr, 100).await;
    let client = reqwest::Client::new();
    let pool = motor_store::connect(&db.url, 2).await.unwrap();
    let subscription = |name: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query_as::<_, (Uuid, Uuid)>(
                "SELECT id, app_id FROM subscriptions WHERE nombre = $1",
            )
            .bind(name)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let (ordered_sub, app) = subscription(Hook::Ordered.path()).await;
    let (unordered_sub, _) = subscription(Hook::Unordered.path()).await;
    let per_lane = parked / 2 / tenant.ordered.len() as i64;
    let unordered_n = parked / 2;
    let total = per_lane * tenant.ordered.len() as i64 + unordered_n;
    // Sweeper passes while draining depend on it: dead index entries pile
    // up in front of the lane heads until a vacuum (docs/OPERATIONS.md).
    let autovacuum: String = sqlx::query_scalar("SHOW autovacuum")
        .fetch_one(&pool)
        .await
        .unwrap();
    println!(
        "motor parked benchmark: {} ({}), {total} parked deliveries ({per_lane} in each of {} \
         ordered lanes, {unordered_n} unordered); Postgres autovacuum {autovacuum}; Motor log {}",
        binary.display(),
        db.run_id,
        tenant.ordered.len(),
        motor.log.display()
    );

    let started = Instant::now();
    build(
        &db,
        app,
        (ordered_sub, &tenant.ordered),
        (unordered_sub, tenant.unordered[0]),
        per_lane,
        unordered_n,
    )
    .await;
    println!(
        "backlog written in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The sweeper ran while the backlog was written (a never-analysed
    // table growing a lane at a time, which no ingest makes): those
    // passes are shown apart and the target's row counts from here.
    let written_at = Passes::read(&client, &motor.base).await;
    println!(
        "sweeper while the backlog was written: {}",
        written_at.since(&Passes::default())
    );

    // 1. Parked: Motor with the backlog and nothing to send.
    let cpu = Processes::new(motor.pid());
    let rss = RssWatch::start(motor.pid());
    let cpu_before = cpu.sample();
    tokio::time::sleep(Duration::from_secs_f64(parked_seconds)).await;
    let used: Usage = cpu.since(&cpu_before);
    let passes = Passes::read(&client, &motor.base).await;
    println!(
        "parked, {parked_seconds:.0} s: Motor RSS max {:.0} MB (now {:.0}); sweeper: {}; CPU \
         Motor {:.1} %, Postgres {:.1} % of a core",
        rss.max_mb(),
        rss_mb(motor.pid()),
        passes.since(&written_at),
        used.seconds[0] / used.wall * 100.0,
        used.seconds[1] / used.wall * 100.0,
    );
    let parked_rss = rss.max_mb();
    drop(rss);

    // 2. Reactivation and the drain.
    let mut expected: Vec<Key> = Vec::with_capacity(total as usize);
    for instance in &tenant.ordered {
        expected.extend((1..=per_lane).map(|seq| (Hook::Ordered, *instance, seq)));
    }
    expected.extend((1..=unordered_n).map(|seq| (Hook::Unordered, tenant.unordered[0], seq)));
    let rss = RssWatch::start(motor.pid());
    let cpu_before = cpu.sample();
    let passes_before = passes;
    let reactivated_ms = now_ms();
    let mut patches = Vec::new();
    for sub in [ordered_sub, unordered_sub] {
        let at = Instant::now();
        let response = client
            .patch(format!("{}/v1/subscriptions/{sub}", motor.base))
            .bearer_auth(&tenant.token)
            .json(&json!({"estado": "activa"}))
            .send()
            .await
            .unwrap();
        assert!(
            response.status().is_success(),
            "PATCH {sub}: {}",
            response.status()
        );
        patches.push(at.elapsed().as_secs_f64() * 1000.0);
    }
    let delivered = receiver.wait_for(&expected, patience).await;
    let used = cpu.since(&cpu_before);
    let passes = Passes::read(&client, &motor.base).await;
    // Per subscription: its instances' arrivals and rate (the receiver's
    // own `rate_of`, from the first PATCH).
    let ordered_set: HashSet<Uuid> = tenant.ordered.iter().copied().collect();
    let unordered_set: HashSet<Uuid> = tenant.unordered.iter().copied().collect();
    let count = |hook: Hook| delivered.keys.iter().filter(|k| k.0 == hook).count();
    let (ordered_n, ordered_rate) = (
        count(Hook::Ordered),
        delivered.rate_of(&ordered_set, reactivated_ms),
    );
    let (unordered_done, unordered_rate) = (
        count(Hook::Unordered),
        delivered.rate_of(&unordered_set, reactivated_ms),
    );
    let all = delivered.arrivals.len();
    let all_rate = all as f64 * 1000.0 / (delivered.last_ms() - reactivated_ms);
    println!(
        "reactivation: PATCH ordered {:.0} ms, unordered {:.0} ms; drained {all} of {total} \
         ({} missing, {} duplicates) at {all_rate:.0}/s: ordered {ordered_n} at \
         {ordered_rate:.0}/s, unordered {unordered_done} at {unordered_rate:.0}/s; Motor RSS max \
         {:.0} MB; sweeper: {}; CPU per event: Motor {:.0} µs, Postgres {:.0} µs, broker {:.0} \
         µs, all {:.0} µs ({:.2} cores busy)",
        patches[0],
        patches[1],
        delivered.missing.len(),
        delivered.duplicates,
        rss.max_mb(),
        passes.since(&passes_before),
        used.seconds[0] / all as f64 * 1e6,
        used.seconds[1] / all as f64 * 1e6,
        used.seconds[2] / all as f64 * 1e6,
        used.total() / all as f64 * 1e6,
        used.total() / used.wall,
    );
    println!();
    println!("| measurement | target | measured |");
    println!("| --- | --- | --- |");
    println!(
        "| Motor RSS, {total} parked | < 300 MB | {parked_rss:.0} MB (max over {parked_seconds:.0} s) |"
    );
    println!(
        "| Motor RSS, draining | < 300 MB | {:.0} MB (max) |",
        rss.max_mb()
    );
    println!(
        "| sweeper passes, parked then draining | every one < 50 ms | {} |",
        passes.since(&written_at)
    );
    println!(
        "| drain after reactivation | the closed-loop rate (≥ 3,000/s) | {all_rate:.0}/s \
         (ordered {ordered_rate:.0}/s, unordered {unordered_rate:.0}/s){} |",
        if delivered.missing.is_empty() {
            String::new()
        } else {
            format!(", INCOMPLETE: {} missing", delivered.missing.len())
        }
    );
    drop(rss);
    pool.close().await;
    motor.stop().await;
    db.drop_db().await;
}
