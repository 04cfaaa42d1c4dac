//! Benchmark of the sweeper's and the claim path's statements on a large
//! backlog: no statement may cost more as the backlog grows. Prints the
//! median time of each store call; asserts nothing.
//!
//!   cargo bench -p motor --bench backlog
//!   (MOTOR_BENCH_BACKLOG=1000000 open deliveries per subscription,
//!   MOTOR_BENCH_RUNS=7 runs per call, MOTOR_BENCH_STATEMENT_TIMEOUT_S=60)
//!
//! A fresh database, no Motor running: the calls are the store's own
//! (`motor_store::deliveries`), as the sweeper and the dispatcher make
//! them. The backlog is built with set-based inserts in 10 lanes, `deliveries`
//! with autovacuum off so it stays never analysed (the table the sweeper
//! stalled on) until the benchmark analyses it:
//! 1. ordered: MOTOR_BENCH_BACKLOG open deliveries in one ordered
//!    subscription, due an hour ago, all but each lane's head parked;
//! 2. unordered: as many in one unordered subscription, all stale (the
//!    sweeper finds its batch, 250, a pass), the ordered ones still there;
//! 3. parked behind suspended subscriptions: both suspended, while a small
//!    ordered subscription (1,000 open) keeps working;
//!
//! then the same three after `ANALYZE`; last, many tenants: MOTOR_BENCH_LANES
//! (10,000) ordered subscriptions of an instance each, each lane with its
//! head waiting for a retry, and a sweeper's pass once it knows every lane:
//! probing them all, and probing its slice (`LaneHints`, about
//! `deliveries::LANES_PER_PASS` lanes). A call that runs longer than the
//! statement timeout prints as `timeout`.
//!
//! Each build ends with a `CHECKPOINT`: a build writes about 500 MB of
//! WAL, and the checkpoint that starts would otherwise still be writing
//! while the calls are timed. The calls are timed on a settled database:
//! what a statement costs with the backlog, not what the bulk load costs.
//! A run's time is the call's, from the client, commit included: a slow
//! disk's commit shows in it (docs/BENCHMARKS.md, 2026-12-01 22:10).

mod common;

use std::time::{Duration, Instant};

use chrono::Utc;
use common::{env_or, BenchDb};
use motor_domain::{
    delivery::{Decision, DeliveryId},
    subscription::SubscriptionId,
};
use motor_store::{
    deliveries::{self, Attempt, Claim, LaneHints, Next},
    Pool,
};
use sqlx::Executor;
use uuid::Uuid;

const APP: &str = "00000000-0000-0000-0000-00000000000a";
const INSTANCES: i64 = 10;
const DELIVERED: i64 = 100;
const ORDERED: i64 = 1;
const UNORDERED: i64 = 2;
const SMALL: i64 = 3;
const LEASE: Duration = Duration::from_secs(30);

fn subscription(n: i64) -> Uuid {
    format!("00000000-0000-0000-0002-{n:012}").parse().unwrap()
}

/// The store call's time, or why there is none.
type Timed = Result<Duration, String>;

async fn timed<T, E: std::fmt::Display>(
    call: impl std::future::Future<Output = Result<T, E>>,
) -> (Timed, Option<T>) {
    let started = Instant::now();
    match call.await {
        Ok(v) => (Ok(started.elapsed()), Some(v)),
        Err(e) if e.to_string().contains("statement timeout") => (Err("timeout".into()), None),
        Err(e) => (Err(e.to_string()), None),
    }
}

/// Median (and min–max) of the runs, in ms.
fn summary(runs: &[Timed]) -> String {
    let mut ok: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|d| d.as_secs_f64() * 1000.0)
        .collect();
    let failed: Vec<&String> = runs.iter().filter_map(|r| r.as_ref().err()).collect();
    if ok.is_empty() {
        return failed.first().map_or("no run".into(), |e| e.to_string());
    }
    ok.sort_by(f64::total_cmp);
    let median = ok[ok.len() / 2];
    let mut line = format!(
        "{median:9.2} ms  ({:.2}–{:.2}, {} runs)",
        ok[0],
        ok[ok.len() - 1],
        ok.len()
    );
    if !failed.is_empty() {
        line.push_str(&format!(", {} failed: {}", failed.len(), failed[0]));
    }
    line
}

fn report(section: &str, call: &str, runs: &[Timed]) {
    println!("{section:<44} {call:<46} {}", summary(runs));
    let mut worst = WORST.lock().unwrap();
    for run in runs {
        match run {
            Ok(took) if worst.slowest.as_ref().is_none_or(|(t, _)| took > t) => {
                worst.slowest = Some((*took, format!("{call}, {section}")));
            }
            Ok(_) => {}
            Err(_) => worst.failed += 1,
        }
    }
}

/// Every call's slowest run, for target 7's row.
struct Worst {
    slowest: Option<(Duration, String)>,
    failed: usize,
}

static WORST: std::sync::Mutex<Worst> = std::sync::Mutex::new(Worst {
    slowest: None,
    failed: 0,
});

/// Issue 9's target 7 as a row of the table `scripts/bench` prints.
fn print_target(backlog: i64) {
    let worst = WORST.lock().unwrap();
    let (slowest, which) = worst.slowest.as_ref().map_or((f64::NAN, "none"), |(t, w)| {
        (t.as_secs_f64() * 1000.0, w.as_str())
    });
    let met = worst.failed == 0 && slowest < 50.0;
    println!();
    println!("| measurement | target | measured | met |");
    println!("| --- | --- | --- | --- |");
    println!(
        "| sweeper and claim statements, {backlog} open deliveries per subscription | every run < 50 ms | slowest run {slowest:.1} ms ({which}); {} failed | {} |",
        worst.failed,
        if met { "yes" } else { "**no**" }
    );
}

async fn exec(pool: &Pool, sql: &str) {
    pool.execute(sql).await.unwrap();
}

async fn build_base(pool: &Pool, backlog: i64) {
    exec(
        pool,
        "ALTER TABLE deliveries SET (autovacuum_enabled = off);
         ALTER TABLE events SET (autovacuum_enabled = off);",
    )
    .await;
    let script = format!(
        "INSERT INTO apps (id, nombre) VALUES ('{APP}', 'backlog');
         INSERT INTO instances (id, app_id, nombre)
             SELECT ('00000000-0000-0000-0001-' || lpad(i::text, 12, '0'))::uuid, '{APP}', 'i' || i
             FROM generate_series(1, {INSTANCES}) i;
         INSERT INTO subscriptions (id, app_id, nombre, url, ordenado)
         VALUES ('{o}', '{APP}', 'ordered', 'http://127.0.0.1/', true),
                ('{u}', '{APP}', 'unordered', 'http://127.0.0.1/', false),
                ('{s}', '{APP}', 'small', 'http://127.0.0.1/', true);
         INSERT INTO events (instance_id, seq, event_id, type, recibido_en, envelope)
             SELECT ('00000000-0000-0000-0001-' || lpad((1 + g % {INSTANCES})::text, 12, '0'))::uuid,
                    1 + g / {INSTANCES}, gen_random_uuid(), 'bench', now(), '{{}}'
             FROM generate_series(0, {events} - 1) g;",
        o = subscription(ORDERED),
        u = subscription(UNORDERED),
        s = subscription(SMALL),
        events = backlog + DELIVERED * INSTANCES,
    );
    exec(pool, &script).await;
}

/// `open` open deliveries of `sub` over the lanes after DELIVERED delivered
/// ones per lane (40 days ago: retention's), due an hour ago; parked
/// behind each lane's head when `parked`.
async fn build_deliveries(pool: &Pool, sub: i64, open: i64, parked: bool) {
    let up_to = open / INSTANCES + DELIVERED;
    exec(
        pool,
        &format!(
            "INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq,
                                     estado, proximo_intento, entregado_en, aparcado_en, creado_en)
             SELECT motor_uuid_v7(), '{sub}', '{APP}', e.instance_id, e.event_id, e.seq,
                    CASE WHEN e.seq <= {DELIVERED} THEN 'entregada' ELSE 'pendiente' END,
                    CASE WHEN e.seq > {DELIVERED}
                         THEN now() - interval '1 hour' + e.seq * interval '1 ms' END,
                    CASE WHEN e.seq <= {DELIVERED} THEN now() - interval '40 days' END,
                    CASE WHEN {parked} AND e.seq > {DELIVERED} + 1 THEN now() END,
                    now() - interval '41 days'
             FROM events e WHERE e.seq <= {up_to}",
            sub = subscription(sub),
        ),
    )
    .await;
}

async fn set_state(pool: &Pool, subs: &[i64], estado: &str) {
    for sub in subs {
        let motivo = if estado == "suspendida" {
            "'rechazo_401', now()"
        } else {
            "NULL, NULL"
        };
        exec(
            pool,
            &format!(
                "UPDATE subscriptions SET estado = '{estado}', (motivo, suspendido_en) = ({motivo})
                 WHERE id = '{}'",
                subscription(*sub)
            ),
        )
        .await;
    }
}

/// One sweeper pass as the sweeper makes it (`due_lane_heads` with the
/// sweeper's own staleness and batch, then `requeue` of what it found),
/// `runs` times.
async fn sweeper(pool: &Pool, section: &str, runs: usize) {
    let config = motor_engine::SweeperConfig::default();
    let (mut heads, mut requeued) = (Vec::new(), Vec::new());
    let mut found = 0;
    for _ in 0..runs {
        let pass = deliveries::due_lane_heads(pool, config.stale_after, config.batch);
        let (t, ids) = timed(pass).await;
        heads.push(t);
        let ids = ids.unwrap_or_default();
        found = ids.len();
        if !ids.is_empty() {
            requeued.push(timed(deliveries::requeue(pool, &ids)).await.0);
        }
    }
    report(section, &format!("due_lane_heads (found {found})"), &heads);
    report(section, "requeue (those ids)", &requeued);
}

/// Many tenants: `lanes` ordered subscriptions, each of an instance of its
/// own with one open delivery (a retry due in an hour, so no pass finds
/// it due), then a pass `runs` times with every lane known: over every
/// known lane (the reference, outside target 7's row), and over a slice
/// of them.
async fn many_lanes_section(pool: &Pool, lanes: i64, runs: usize) {
    let started = Instant::now();
    exec(
        pool,
        &format!(
            "INSERT INTO instances (id, app_id, nombre)
                 SELECT ('00000000-0000-0000-0003-' || lpad(n::text, 12, '0'))::uuid, '{APP}',
                        'tenant ' || n
                 FROM generate_series(1, {lanes}) n;
             INSERT INTO subscriptions (id, app_id, nombre, url, ordenado)
                 SELECT ('00000000-0000-0000-0004-' || lpad(n::text, 12, '0'))::uuid, '{APP}',
                        'tenant ' || n, 'http://127.0.0.1/', true
                 FROM generate_series(1, {lanes}) n;
             INSERT INTO events (instance_id, seq, event_id, type, recibido_en, envelope)
                 SELECT ('00000000-0000-0000-0003-' || lpad(n::text, 12, '0'))::uuid, 1,
                        gen_random_uuid(), 'bench', now(), '{{}}'
                 FROM generate_series(1, {lanes}) n;
             INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq,
                                     proximo_intento)
                 SELECT motor_uuid_v7(),
                        ('00000000-0000-0000-0004-' || substr(e.instance_id::text, 25))::uuid,
                        '{APP}', e.instance_id, e.event_id, 1, now() + interval '1 hour'
                 FROM events e WHERE e.instance_id::text LIKE '00000000-0000-0000-0003-%';
             ANALYZE subscriptions; ANALYZE instances; CHECKPOINT;"
        ),
    )
    .await;
    println!(
        "({lanes} tenants' lanes built in {:.0?})",
        started.elapsed()
    );
    let config = motor_engine::SweeperConfig::default();
    let section = format!("many tenants, {lanes} lanes known");
    for (call, reference, mut hints) in [
        (
            "a pass over every known lane",
            true,
            LaneHints::with_lanes_per_pass(usize::MAX),
        ),
        ("a pass over its slice", false, LaneHints::default()),
    ] {
        // The first pass knows no lane: it walks them all.
        hints
            .due_lane_heads(pool, config.stale_after, config.batch)
            .await
            .unwrap();
        let mut passes = Vec::new();
        for _ in 0..runs {
            let pass = hints.due_lane_heads(pool, config.stale_after, config.batch);
            passes.push(timed(pass).await.0);
        }
        let call = format!("{call} ({} known)", hints.len());
        if reference {
            // What the sweeper did before its passes took slices: printed
            // beside, outside target 7's row.
            println!("{section:<44} {call:<46} {}", summary(&passes));
        } else {
            report(&section, &call, &passes);
        }
    }
}

fn delivered() -> Attempt {
    Attempt {
        started_at: Utc::now(),
        duration: std::time::Duration::from_millis(3),
        status: Some(204),
        error: None,
        key_ids: vec!["whk_bench".into()],
    }
}

async fn lane_delivery(pool: &Pool, sub: i64, lane: i64, nth_open: i64) -> DeliveryId {
    let id: Uuid = sqlx::query_scalar(
        "SELECT id FROM deliveries WHERE subscription_id = $1 AND instance_id = $2
           AND estado = 'pendiente' ORDER BY seq OFFSET $3 LIMIT 1",
    )
    .bind(subscription(sub))
    .bind(
        format!("00000000-0000-0000-0001-{lane:012}")
            .parse::<Uuid>()
            .unwrap(),
    )
    .bind(nth_open)
    .fetch_one(pool)
    .await
    .unwrap();
    DeliveryId::from_uuid(id)
}

/// The claim path of an ordered subscription: a job for a parked delivery
/// (the claim fails and parks it), a job for a lane's head (claimed), its
/// finish claiming the next of the lane in one statement, and a finish
/// that releases instead; one lane per run.
async fn ordered_claims(pool: &Pool, section: &str, sub: i64, parked_at: i64, runs: usize) {
    let (mut parked, mut head, mut chained, mut released) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let lane = 1 + run as i64 % INSTANCES;
        let middle = lane_delivery(pool, sub, lane, parked_at).await;
        parked.push(timed(deliveries::claim(pool, middle, 1, LEASE)).await.0);
        let first = lane_delivery(pool, sub, lane, 0).await;
        let (t, claim) = timed(deliveries::claim(pool, first, 1, LEASE)).await;
        head.push(t);
        let Some(Claim::Claimed(c)) = claim else {
            continue;
        };
        let (t, recorded) = timed(deliveries::record_attempt(
            pool,
            &c,
            &delivered(),
            &Decision::Delivered,
            Next::Claim(LEASE),
        ))
        .await;
        chained.push(t);
        if let Some(deliveries::Recorded::Done { next: Some(n), .. }) = recorded {
            released.push(
                timed(deliveries::record_attempt(
                    pool,
                    &n,
                    &delivered(),
                    &Decision::Delivered,
                    Next::Release,
                ))
                .await
                .0,
            );
        }
    }
    report(section, "claim: job of a parked delivery", &parked);
    report(section, "claim: job of a lane's head", &head);
    report(section, "record_attempt, delivered + claim next", &chained);
    report(
        section,
        "record_attempt, delivered + release next",
        &released,
    );
}

/// The claim path of an unordered subscription: claim the oldest open
/// delivery, record it delivered.
async fn unordered_claims(pool: &Pool, section: &str, runs: usize) {
    let (mut claims, mut records) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let lane = 1 + run as i64 % INSTANCES;
        let id = lane_delivery(pool, UNORDERED, lane, 0).await;
        let (t, claim) = timed(deliveries::claim(pool, id, 1, LEASE)).await;
        claims.push(t);
        if let Some(Claim::Claimed(c)) = claim {
            records.push(
                timed(deliveries::record_attempt(
                    pool,
                    &c,
                    &delivered(),
                    &Decision::Delivered,
                    Next::Release,
                ))
                .await
                .0,
            );
        }
    }
    report(section, "claim", &claims);
    report(section, "record_attempt, delivered", &records);
}

/// Reactivation's release of every lane head, rolled back; and retention.
async fn release_and_purge(pool: &Pool, section: &str, sub: i64, runs: usize) {
    let mut release = Vec::new();
    for _ in 0..runs {
        let mut tx = pool.begin().await.unwrap();
        release.push(
            timed(deliveries::release_lane_heads(
                &mut tx,
                SubscriptionId::from_uuid(subscription(sub)),
            ))
            .await
            .0,
        );
        tx.rollback().await.unwrap();
    }
    report(section, "release_lane_heads (rolled back)", &release);
    let mut purge = Vec::new();
    for _ in 0..runs {
        purge.push(timed(deliveries::purge_delivered(pool, 30, 1000)).await.0);
    }
    report(section, "purge_delivered (1,000 due, then none)", &purge);
}

/// An open delivery in the middle of an ordered lane of the big backlog.
fn backlog_middle() -> i64 {
    env_or("MOTOR_BENCH_BACKLOG", "1000000")
        .parse::<i64>()
        .unwrap()
        / INSTANCES
        / 2
}

async fn ordered_section(pool: &Pool, label: &str, runs: usize) {
    let section = format!("ordered, {label}");
    sweeper(pool, &section, runs).await;
    ordered_claims(pool, &section, ORDERED, backlog_middle(), runs).await;
    release_and_purge(pool, &section, ORDERED, runs).await;
}

async fn unordered_section(pool: &Pool, label: &str, runs: usize) {
    let section = format!("unordered, {label}");
    sweeper(pool, &section, runs).await;
    unordered_claims(pool, &section, runs).await;
}

async fn suspended_section(pool: &Pool, label: &str, runs: usize) {
    set_state(pool, &[ORDERED, UNORDERED], "suspendida").await;
    let section = format!("parked behind suspended, {label}");
    sweeper(pool, &section, runs).await;
    ordered_claims(pool, &section, SMALL, 50, runs).await;
    set_state(pool, &[ORDERED, UNORDERED], "activa").await;
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for the list of benchmarks.
    }
    let backlog: i64 = env_or("MOTOR_BENCH_BACKLOG", "1000000").parse().unwrap();
    let runs: usize = env_or("MOTOR_BENCH_RUNS", "7").parse().unwrap();
    let timeout: u64 = env_or("MOTOR_BENCH_STATEMENT_TIMEOUT_S", "60")
        .parse()
        .unwrap();
    let db = BenchDb::create().await;
    motor_store::migrate(&db.url).await.unwrap();
    let url = format!(
        "{}?options=-c%20statement_timeout%3D{}",
        db.url,
        timeout * 1000
    );
    let pool = motor_store::connect(&url, 4).await.unwrap();
    // The backlog's inserts take longer than the timeout on a busy machine.
    let build = motor_store::connect(&db.url, 1).await.unwrap();
    println!("backlog: {backlog} open deliveries per subscription in {INSTANCES} lanes; {runs} runs per call; statement timeout {timeout} s");
    println!("{:<44} {:<46} median (min–max)", "section", "call");

    let started = Instant::now();
    build_base(&build, backlog).await;
    build_deliveries(&build, SMALL, 1000, true).await;
    build_deliveries(&build, ORDERED, backlog, true).await;
    exec(&build, "CHECKPOINT").await;
    println!("(ordered backlog built in {:.0?})", started.elapsed());
    ordered_section(&pool, "never analysed", runs).await;

    let started = Instant::now();
    build_deliveries(&build, UNORDERED, backlog, false).await;
    exec(&build, "CHECKPOINT").await;
    println!("(unordered backlog built in {:.0?})", started.elapsed());
    unordered_section(&pool, "never analysed", runs).await;
    suspended_section(&pool, "never analysed", runs).await;

    exec(
        &build,
        "ANALYZE deliveries; ANALYZE events; ANALYZE subscriptions; CHECKPOINT",
    )
    .await;
    build.close().await;
    ordered_section(&pool, "analysed", runs).await;
    unordered_section(&pool, "analysed", runs).await;
    suspended_section(&pool, "analysed", runs).await;

    let lanes: i64 = env_or("MOTOR_BENCH_LANES", "10000").parse().unwrap();
    many_lanes_section(&pool, lanes, runs).await;

    print_target(backlog);
    pool.close().await;
    db.drop_db().await;
}
