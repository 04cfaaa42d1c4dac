//! Benchmark of the traffic shapes real users run (issue 38, item 1),
//! beside the http bench's single subscription with one receiver answering
//! 204 over plain HTTP: the same `motor serve` process (every role), the
//! same receiver and load generator (crates/motor/benches/http/), and the
//! same numbers per phase — delivered/s, commit → receiver p50/p99/max,
//! and CPU per delivered event by process (motor, postgres, broker, load
//! generator, receivers). Prints; asserts nothing about speed.
//!
//!   cargo bench -p motor --bench shapes      (or scripts/bench)
//!
//! Phases (MOTOR_BENCH_PHASES, a comma list of these; all when unset),
//! each on instances of its own, run in this order:
//! - `fanout`: MOTOR_BENCH_FANOUT subscriptions (10), each to a receiver of
//!   its own, cover the same MOTOR_BENCH_INSTANCES (100) ordered instances;
//!   a closed loop of MOTOR_BENCH_EVENTS / MOTOR_BENCH_FANOUT events (so
//!   MOTOR_BENCH_EVENTS deliveries) from MOTOR_BENCH_SENDERS senders.
//! - `slow`: MOTOR_BENCH_SLOW_INSTANCES (1,000) instances on one ordered
//!   subscription whose receiver answers every request after
//!   MOTOR_BENCH_SLOW_ANSWER_MS (500); a closed loop posts
//!   MOTOR_BENCH_SLOW_EVENTS (10 per instance). An ordered lane has one
//!   request in flight: the ceiling printed is lanes / answer time. (A
//!   dispatch consumer's MOTOR_DISPATCH_IN_FLIGHT bounds only the jobs it
//!   reads from `{prefix}.deliveries`; the dispatcher in Motor's process
//!   is handed each lane instead, so it bounds nothing here.) What keeps
//!   the phase under its ceiling is read from the database at its end and
//!   printed: the ramp (the first lane's first request to the last
//!   lane's) and each lane's gap from an answer to its next request.
//! - `tls`: the 204 receiver behind HTTPS (shapes/tls.rs; Motor trusts the
//!   test CA through MOTOR_WEBHOOK_EXTRA_ROOTS, which this benchmark sets);
//!   a closed loop of MOTOR_BENCH_EVENTS over MOTOR_BENCH_INSTANCES ordered
//!   instances; prints the TLS handshakes the receiver completed.
//! - `large`: MOTOR_BENCH_LARGE_BYTES (65,536) events at a fixed
//!   MOTOR_BENCH_LARGE_RATE (500/s) for MOTOR_BENCH_SECONDS (10) over
//!   MOTOR_BENCH_INSTANCES ordered instances.
//! - `tenants`: MOTOR_BENCH_TENANTS apps (2,000) × MOTOR_BENCH_TENANT_INSTANCES
//!   (5) instances, each instance with an ordered subscription of its own
//!   (made through the API before the phase), single events at a fixed
//!   MOTOR_BENCH_TENANT_RATE (1,000/s) spread over every instance in a
//!   shuffled round, for MOTOR_BENCH_SECONDS; prints the sweeper passes
//!   (`motor_sweeper_pass_seconds`) of the phase. Last, since its
//!   subscriptions stay.
//!
//! A fixed-rate phase (`large`, `tenants`) also lists its deliveries later
//! than 50 ms by the 100 ms of their commit: a stall shows as one window.
//! It first runs MOTOR_BENCH_WARM_SECONDS (2) of its own load, not counted
//! and printed on a line of its own (0: one warm-up event, as the closed
//! loops).
//!
//! Every phase waits until each committed event reached its receiver(s)
//! (MOTOR_BENCH_PATIENCE, 60 s without a new arrival, then reports what is
//! missing) and the outbox drained. Also MOTOR_BENCH_MOTOR_BIN,
//! MOTOR_BENCH_DATABASE_URL, MOTOR_BENCH_KAFKA_BROKERS as the http bench.

mod common;
#[allow(dead_code)]
#[path = "http/cpu.rs"]
mod cpu;
#[allow(dead_code)]
#[path = "http/load.rs"]
mod load;
#[path = "shapes/meter.rs"]
mod meter;
#[path = "shapes/open.rs"]
mod open;
#[allow(dead_code)]
#[path = "http/receiver.rs"]
mod receiver;
#[allow(dead_code)]
#[path = "http/report.rs"]
mod report;
#[path = "shapes/result.rs"]
mod result;
#[allow(dead_code)]
#[path = "http/server.rs"]
mod server;
#[path = "shapes/setup.rs"]
mod setup;
#[path = "shapes/tls.rs"]
mod tls;

use std::{future::Future, path::PathBuf, sync::Arc, time::Duration};

use bytes::Bytes;
use common::{env_or, number, BenchDb};
use load::{Load, Posted};
use meter::Meter;
use rand::seq::SliceRandom;
use receiver::{Delivered, Hook, Key, Receiver};
use result::Outcome;
use serde_json::json;

/// The phases MOTOR_BENCH_PHASES may name, in the order they run.
const PHASES: [&str; 5] = ["fanout", "slow", "tls", "large", "tenants"];

struct Settings {
    phases: Vec<String>,
    seconds: f64,
    events: usize,
    senders: usize,
    instances: usize,
    fanout: usize,
    slow_instances: usize,
    slow_events: usize,
    slow_answer: Duration,
    large_bytes: usize,
    large_rate: f64,
    /// A fixed-rate phase's warm-up at its own rate and bodies, not
    /// counted (0: one event, as the closed loops).
    warm_seconds: f64,
    tenants: usize,
    tenant_instances: usize,
    tenant_rate: f64,
    patience: Duration,
}

impl Settings {
    fn from_env() -> Self {
        let slow_instances = number("MOTOR_BENCH_SLOW_INSTANCES", "1000") as usize;
        let phases: Vec<String> = match env_or("MOTOR_BENCH_PHASES", "").trim() {
            "" => PHASES.map(str::to_owned).to_vec(),
            list => list.split(',').map(|p| p.trim().to_owned()).collect(),
        };
        for p in &phases {
            assert!(
                PHASES.contains(&p.as_str()),
                "MOTOR_BENCH_PHASES: {p:?} is not one of {PHASES:?}"
            );
        }
        Self {
            phases,
            seconds: number("MOTOR_BENCH_SECONDS", "10"),
            events: number("MOTOR_BENCH_EVENTS", "20000") as usize,
            senders: number("MOTOR_BENCH_SENDERS", "64") as usize,
            instances: number("MOTOR_BENCH_INSTANCES", "100") as usize,
            fanout: number("MOTOR_BENCH_FANOUT", "10") as usize,
            slow_events: number(
                "MOTOR_BENCH_SLOW_EVENTS",
                &(slow_instances * 10).to_string(),
            ) as usize,
            slow_instances,
            slow_answer: Duration::from_millis(number("MOTOR_BENCH_SLOW_ANSWER_MS", "500") as u64),
            large_bytes: number("MOTOR_BENCH_LARGE_BYTES", "65536") as usize,
            large_rate: number("MOTOR_BENCH_LARGE_RATE", "500"),
            warm_seconds: number("MOTOR_BENCH_WARM_SECONDS", "2"),
            tenants: number("MOTOR_BENCH_TENANTS", "2000") as usize,
            tenant_instances: number("MOTOR_BENCH_TENANT_INSTANCES", "5") as usize,
            tenant_rate: number("MOTOR_BENCH_TENANT_RATE", "1000"),
            patience: Duration::from_secs_f64(number("MOTOR_BENCH_PATIENCE", "60")),
        }
    }

    fn runs(&self, phase: &str) -> bool {
        self.phases.iter().any(|p| p == phase)
    }
}

struct Bench {
    motor: server::Motor,
    meter: Meter,
    pool: motor_store::Pool,
    /// The receivers' runtime (threads named `receiver`, metered apart).
    receivers: tokio::runtime::Handle,
    settings: Settings,
}

impl Bench {
    /// A plain receiver on the receivers' runtime; its hook URL.
    async fn receiver(&self) -> (Arc<Receiver>, String) {
        let (receiver, addr) = self.receivers.spawn(Receiver::start()).await.unwrap();
        (
            receiver,
            format!("http://{addr}/hook/{}", Hook::Ordered.path()),
        )
    }

    /// Runs `posting` (after the warm-up `warm`: one event, or a fixed-rate
    /// phase's own load, whose line is printed apart), waits for every
    /// committed event at each receiver and for the outbox, and meters it
    /// all.
    async fn measure<W: Future<Output = Posted>, P: Future<Output = Posted>>(
        &self,
        phase: &'static str,
        receivers: &[Arc<Receiver>],
        warm: W,
        posting: impl FnOnce() -> P,
    ) -> Outcome {
        // The first delivery of a subscription may wait for its consumer.
        let warmed = warm.await;
        let warm_delivered = self.wait(receivers, &warmed).await;
        if warmed.committed.len() > 1 {
            result::print_warm_up(phase, self.settings.warm_seconds, &warm_delivered);
        }
        for r in receivers {
            r.clear();
        }
        let before = self.meter.snapshot();
        let posted = posting().await;
        let delivered = self.wait(receivers, &posted).await;
        self.drain_outbox().await;
        Outcome {
            phase,
            spent: self.meter.since(&before),
            posted,
            delivered,
            asked: None,
            answer_ms: 0.0,
            extras: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Every committed event at every receiver, merged.
    async fn wait(&self, receivers: &[Arc<Receiver>], posted: &Posted) -> Delivered {
        let expected: Vec<Key> = posted
            .committed
            .iter()
            .map(|&(instance, seq)| (Hook::Ordered, instance, seq))
            .collect();
        let mut all = Delivered {
            arrivals: Vec::new(),
            keys: Vec::new(),
            missing: Vec::new(),
            duplicates: 0,
        };
        for r in receivers {
            let d = r.wait_for(&expected, self.settings.patience).await;
            all.arrivals.extend(d.arrivals);
            all.keys.extend(d.keys);
            all.missing.extend(d.missing);
            all.duplicates += d.duplicates;
        }
        all
    }

    async fn drain_outbox(&self) {
        let deadline = tokio::time::Instant::now() + self.settings.patience;
        while motor_store::outbox::pending(&self.pool).await.unwrap() > 0 {
            if tokio::time::Instant::now() > deadline {
                println!("  ! the outbox did not drain");
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A fixed-rate phase's warm-up: `MOTOR_BENCH_WARM_SECONDS` of its own
    /// load, so the phase measures a Motor already under it. Its first
    /// fraction of a second is Motor's own start (pools filling, a heap
    /// of some 100 MB touched for the first time; docs/BENCHMARKS.md,
    /// 2026-12-06), which the warm-up's line still shows.
    fn warm_up<'a>(
        &'a self,
        targets: &'a [open::Target],
        body: Bytes,
        rate: f64,
    ) -> impl Future<Output = Posted> + 'a {
        let seconds = self.settings.warm_seconds;
        let (targets, rate, seconds) = if seconds > 0.0 {
            (targets, rate, seconds)
        } else {
            (&targets[..1], 1.0, 1.0)
        };
        open::run(&self.motor.base, targets, body, rate, seconds)
    }

    fn load(&self, app: &setup::App) -> Load {
        Load::new(&self.motor.base, &app.token, 1)
    }

    async fn fanout(&self) -> Outcome {
        let s = &self.settings;
        let app = setup::app(&self.motor, "fanout", s.instances).await;
        let mut receivers = Vec::new();
        for i in 0..s.fanout {
            let (receiver, url) = self.receiver().await;
            setup::subscribe(
                &self.motor,
                &app,
                &format!("fanout-{i}"),
                &url,
                &app.instances,
            )
            .await;
            receivers.push(receiver);
        }
        let load = self.load(&app);
        let events = (s.events / s.fanout.max(1)).max(1);
        let mut outcome = self
            .measure(
                "fanout",
                &receivers,
                load.closed(&app.instances, 1, false, 1),
                || load.closed(&app.instances, events, false, s.senders),
            )
            .await;
        outcome.extras.push(("subscriptions", s.fanout as f64));
        outcome
            .extras
            .push(("events_posted", outcome.posted.committed.len() as f64));
        outcome
    }

    async fn slow(&self) -> Outcome {
        let s = &self.settings;
        let app = setup::app(&self.motor, "slow", s.slow_instances).await;
        let (receiver, url) = self.receiver().await;
        // Every instance of the app: a subscription names at most 200.
        setup::subscribe(&self.motor, &app, "slow", &url, &[]).await;
        receiver.answer_after(s.slow_answer);
        let load = self.load(&app);
        let mut outcome = self
            .measure(
                "slow",
                std::slice::from_ref(&receiver),
                load.closed(&app.instances, 1, false, 1),
                || load.closed(&app.instances, s.slow_events, false, s.senders),
            )
            .await;
        receiver.answer_after(Duration::ZERO);
        outcome.answer_ms = s.slow_answer.as_secs_f64() * 1000.0;
        let lanes = s.slow_instances as f64;
        let ceiling = lanes / s.slow_answer.as_secs_f64();
        outcome.extras.push(("lanes", lanes));
        outcome
            .extras
            .push(("answer_ms", s.slow_answer.as_millis() as f64));
        outcome.extras.push(("ceiling_per_s", ceiling));
        outcome.notes.push(format!(
            "bound: one request in flight per ordered lane ({lanes:.0} lanes, each handed to \
             the dispatcher in Motor's process); each answer takes {} ms: ceiling {:.0}/s, \
             measured {:.0}/s ({:.0} %)",
            s.slow_answer.as_millis(),
            ceiling,
            outcome.delivered_per_s(),
            outcome.delivered_per_s() / ceiling * 100.0
        ));
        if let Some(timing) = LaneTiming::read(&self.pool, &app, outcome.posted.started_ms).await {
            outcome.extras.push(("ramp_ms", timing.ramp_ms));
            outcome
                .extras
                .push(("answer_gap_p50_ms", timing.gap_p50_ms));
            outcome
                .extras
                .push(("answer_gap_p90_ms", timing.gap_p90_ms));
            outcome.notes.push(format!(
                "below the ceiling: the ramp, {:.0} ms from the first lane's first request to \
                 the last lane's (the load's first round of POSTs), and each lane's gap from an \
                 answer to its next request (record, claim, send) when the next was waiting: \
                 p50 {:.1} ms, p90 {:.1} ms",
                timing.ramp_ms, timing.gap_p50_ms, timing.gap_p90_ms
            ));
        }
        outcome
    }

    async fn tls(&self) -> Outcome {
        let s = &self.settings;
        let app = setup::app(&self.motor, "tls", s.instances).await;
        let (receiver, addr, handshakes) = self.receivers.spawn(tls::start()).await.unwrap();
        let url = format!("https://{addr}/hook/{}", Hook::Ordered.path());
        setup::subscribe(&self.motor, &app, "tls", &url, &app.instances).await;
        let load = self.load(&app);
        let before = handshakes.load(std::sync::atomic::Ordering::Relaxed);
        let mut outcome = self
            .measure(
                "tls",
                std::slice::from_ref(&receiver),
                load.closed(&app.instances, 1, false, 1),
                || load.closed(&app.instances, s.events, false, s.senders),
            )
            .await;
        // The warm-up event's connection included.
        let total = handshakes.load(std::sync::atomic::Ordering::Relaxed);
        outcome.extras.push(("handshakes", (total - before) as f64));
        outcome
    }

    async fn large(&self) -> Outcome {
        let s = &self.settings;
        let app = setup::app(&self.motor, "large", s.instances).await;
        let (receiver, url) = self.receiver().await;
        setup::subscribe(&self.motor, &app, "large", &url, &app.instances).await;
        let mut event = json!({"type": "document.received", "data": {"text": ""}});
        let padding = s.large_bytes.saturating_sub(event.to_string().len());
        event["data"]["text"] = "x".repeat(padding).into();
        let body = Bytes::from(event.to_string());
        let targets: Vec<open::Target> = app.targets().collect();
        let base = &self.motor.base;
        let mut outcome = self
            .measure(
                "large",
                std::slice::from_ref(&receiver),
                self.warm_up(&targets, body.clone(), s.large_rate),
                || open::run(base, &targets, body.clone(), s.large_rate, s.seconds),
            )
            .await;
        outcome.asked = Some(s.large_rate);
        outcome.extras.push(("body_bytes", body.len() as f64));
        outcome
    }

    async fn tenants(&self) -> Outcome {
        let s = &self.settings;
        let (receiver, url) = self.receiver().await;
        let started = std::time::Instant::now();
        let apps = setup::tenants(&self.motor, s.tenants, s.tenant_instances, &url).await;
        let subscriptions = s.tenants * s.tenant_instances;
        println!(
            "tenants: {} apps, {subscriptions} instances and subscriptions made in {:.0} s",
            apps.len(),
            started.elapsed().as_secs_f64()
        );
        let mut targets: Vec<open::Target> = apps.iter().flat_map(setup::App::targets).collect();
        targets.shuffle(&mut rand::thread_rng());
        let base = &self.motor.base;
        let body =
            Bytes::from(json!({"type": "message.received", "data": {"text": "hola"}}).to_string());
        // The sweeper's passes from the phase's first POST (after the
        // warm-up) until it is over.
        let passes_before = &std::cell::Cell::new((f64::NAN, f64::NAN));
        let posted_to = &targets;
        let mut outcome = self
            .measure(
                "tenants",
                std::slice::from_ref(&receiver),
                self.warm_up(&targets, body.clone(), s.tenant_rate),
                move || async move {
                    passes_before.set(sweeper_passes(base).await);
                    open::run(base, posted_to, body, s.tenant_rate, s.seconds).await
                },
            )
            .await;
        let (passes, before) = (sweeper_passes(base).await, passes_before.get());
        let (count, sum) = (passes.0 - before.0, passes.1 - before.1);
        outcome.asked = Some(s.tenant_rate);
        outcome.extras.push(("tenants", apps.len() as f64));
        outcome.extras.push(("subscriptions", subscriptions as f64));
        outcome.extras.push(("sweeper_passes", count));
        outcome
            .extras
            .push(("sweeper_pass_mean_ms", sum / count * 1000.0));
        outcome
    }
}

/// `motor_sweeper_pass_seconds`' count and sum (seconds) on `/metrics`.
async fn sweeper_passes(base: &str) -> (f64, f64) {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let value = |suffix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("motor_sweeper_pass_seconds{suffix} ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(f64::NAN)
    };
    (value("_count"), value("_sum"))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for the list of benchmarks.
    }
    // Motor (started below, inheriting this environment) trusts the test
    // CA of the `tls` phase's receiver.
    if std::env::var_os("MOTOR_WEBHOOK_EXTRA_ROOTS").is_none() {
        std::env::set_var("MOTOR_WEBHOOK_EXTRA_ROOTS", tls::CA_PEM);
    }
    let receivers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(meter::RECEIVER_THREADS)
        .enable_all()
        .build()
        .unwrap();
    let main = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    main.block_on(run(receivers.handle().clone()));
    receivers.shutdown_background();
}

async fn run(receivers: tokio::runtime::Handle) {
    let settings = Settings::from_env();
    let binary = PathBuf::from(env_or("MOTOR_BENCH_MOTOR_BIN", env!("CARGO_BIN_EXE_motor")));
    let db = BenchDb::create().await;
    let motor = server::Motor::start(&binary, &db).await;
    println!(
        "motor shapes benchmark: {} ({}), phases {}, load average {}; Motor log {}",
        binary.display(),
        db.run_id,
        settings.phases.join(","),
        meter::load_average(),
        motor.log.display()
    );
    let bench = Bench {
        meter: Meter::new(motor.pid()),
        pool: motor_store::connect(&db.url, 2).await.unwrap(),
        motor,
        receivers,
        settings,
    };
    for phase in PHASES {
        if !bench.settings.runs(phase) {
            continue;
        }
        let outcome = match phase {
            "fanout" => bench.fanout().await,
            "slow" => bench.slow().await,
            "tls" => bench.tls().await,
            "large" => bench.large().await,
            _ => bench.tenants().await,
        };
        outcome.print();
    }
    bench.motor.stop().await;
    bench.pool.close().await;
    db.drop_db().await;
}

/// What keeps the slow phase under its ceiling, read from the bench's
/// database before it is dropped: each lane's first attempts in order
/// (the phase's deliveries only, the warm-up's came before the first POST).
struct LaneTiming {
    /// From the first lane's first request to the last lane's.
    ramp_ms: f64,
    /// From a lane's answer to its next request, where that delivery was
    /// already waiting when the answer came.
    gap_p50_ms: f64,
    gap_p90_ms: f64,
}

impl LaneTiming {
    async fn read(pool: &motor_store::Pool, app: &setup::App, since_ms: f64) -> Option<Self> {
        let row: (Option<f64>, Option<f64>, Option<f64>) = sqlx::query_as(
            "WITH a AS (
                 SELECT d.instance_id, d.seq, d.creado_en, t.iniciado_en AS started,
                        t.iniciado_en + t.duracion_ms * interval '1 ms' AS ended
                 FROM deliveries d JOIN delivery_attempts t ON t.delivery_id = d.id AND t.numero = 1
                 WHERE d.instance_id = ANY ($1) AND d.creado_en >= to_timestamp($2 / 1000.0)
             ), l AS (
                 SELECT started, row_number() OVER w AS nth,
                        (extract(epoch FROM started - lag(ended) OVER w) * 1000)::float8 AS gap_ms,
                        creado_en <= lag(ended) OVER w AS waited
                 FROM a WINDOW w AS (PARTITION BY instance_id ORDER BY seq)
             )
             SELECT (extract(epoch FROM max(started) FILTER (WHERE nth = 1)
                                        - min(started) FILTER (WHERE nth = 1)) * 1000)::float8,
                    percentile_cont(0.5) WITHIN GROUP (ORDER BY gap_ms) FILTER (WHERE waited),
                    percentile_cont(0.9) WITHIN GROUP (ORDER BY gap_ms) FILTER (WHERE waited)
             FROM l",
        )
        .bind(&app.instances)
        .bind(since_ms)
        .fetch_one(pool)
        .await
        .map_err(|e| eprintln!("slow: reading the lanes' timing failed: {e}"))
        .ok()?;
        Some(Self {
            ramp_ms: row.0?,
            gap_p50_ms: row.1?,
            gap_p90_ms: row.2?,
        })
    }
}
