//! Benchmark of Motor against issue 9's targets, measured the way the
//! reference (Svix) was: Postgres, the broker, the `motor` binary under
//! test (its own process, every role), a receiver answering 204 and a load
//! generator posting ~175-byte events over keep-alive connections, all on
//! this machine. Prints numbers and a markdown table; asserts nothing about
//! speed.
//!
//!   scripts/bench     (restarts the broker, builds motor, runs this)
//!
//! Phases, each waited for until every delivery reached the receiver:
//! 1. intake: 64 concurrent clients POST single events (no subscription);
//! 2. closed loop: 64 senders POST single events over 100 instances (one
//!    ordered subscription), then to 1 instance (one unordered
//!    subscription), then arrays of 100 over the 100 instances;
//!    then (phase `clave`) as the ordered one over as many instances
//!    whose subscription is `orden: clave`, each instance's events spread
//!    over 10 `orden_clave`s — its throughput against the ordered one's
//!    (`instancia`, the same 100 instances' worth of lanes);
//!    Right after the ordered one, the same again while the receiver fails
//!    half the requests of 10 instances (503) and answers one after 2 s:
//!    the other lanes' rate against theirs with every receiver healthy;
//! 3. fixed rates (open loop): single events at 200, 400, 1,000 and
//!    2,000/s over the 100 instances for MOTOR_BENCH_SECONDS each; then
//!    (phase `unordered-rates`) the same rates to the 1 instance of the
//!    unordered subscription (issue 38: p99 ≤ 50 ms at 2,000/s, ordered
//!    over 100 instances and unordered to one);
//! 4. idle: nothing sent for MOTOR_BENCH_IDLE_SECONDS.
//!
//! Each phase's line also counts the attempts recorded while it ran that
//! did not deliver (those with an error code): the bad receivers' 503s,
//! or a retry behind a late delivery.
//!
//! Commit → receiver is the receiver's wall clock at arrival minus the
//! envelope's `received_at`, stamped inside the ingest transaction once the
//! instance is locked and truncated to the millisecond: it includes the
//! insert, the fan-out and the commit, and reads up to 1 ms high.
//!
//! Knobs (environment): MOTOR_BENCH_EVENTS (20000 per closed-loop phase),
//! MOTOR_BENCH_SECONDS (10 per fixed rate), MOTOR_BENCH_RATES
//! (200,400,1000,2000), MOTOR_BENCH_SENDERS (64), MOTOR_BENCH_INSTANCES
//! (100), MOTOR_BENCH_IDLE_SECONDS (10), MOTOR_BENCH_PATIENCE (seconds
//! without a new arrival before a phase reports what is missing; 60),
//! MOTOR_BENCH_PHASES (which phases run, of
//! intake,ordered,clave,unordered,arrays,rates,unordered-rates,idle: all
//! by default;
//! `ordered` includes the bad receivers),
//! MOTOR_BENCH_MOTOR_BIN (the binary; default: the one cargo built),
//! MOTOR_BENCH_DATABASE_URL, MOTOR_BENCH_KAFKA_BROKERS,
//! MOTOR_BENCH_POSTGRES_PID and MOTOR_BENCH_BROKER_PID (whose processes
//! count as Postgres's and the broker's: http/cpu.rs); Motor's own
//! MOTOR_DATABASE_POOL, MOTOR_DISPATCH_IN_FLIGHT and RUST_LOG pass through.

mod common;
#[path = "http/cpu.rs"]
mod cpu;
#[path = "http/load.rs"]
mod load;
#[path = "http/receiver.rs"]
mod receiver;
#[path = "http/report.rs"]
mod report;
#[path = "http/server.rs"]
mod server;

use std::{collections::HashSet, future::Future, path::PathBuf, sync::Arc, time::Duration};

use common::{env_or, number, BenchDb};
use cpu::Processes;
use load::{Load, Posted};
use receiver::{Hook, Key, Misbehaviour, Receiver};
use report::{thousands, Phase, Row};
use uuid::Uuid;

/// Array size of the batched phase.
const BATCH: usize = 100;

struct Settings {
    events: usize,
    seconds: f64,
    rates: Vec<f64>,
    senders: usize,
    instances: usize,
    idle_seconds: u64,
    patience: Duration,
    phases: Vec<String>,
}

impl Settings {
    fn from_env() -> Self {
        Self {
            events: number("MOTOR_BENCH_EVENTS", "20000") as usize,
            seconds: number("MOTOR_BENCH_SECONDS", "10"),
            rates: env_or("MOTOR_BENCH_RATES", "200,400,1000,2000")
                .split(',')
                .map(|r| r.trim().parse().expect("MOTOR_BENCH_RATES: numbers"))
                .collect(),
            senders: number("MOTOR_BENCH_SENDERS", "64") as usize,
            instances: number("MOTOR_BENCH_INSTANCES", "100") as usize,
            idle_seconds: number("MOTOR_BENCH_IDLE_SECONDS", "10") as u64,
            patience: Duration::from_secs_f64(number("MOTOR_BENCH_PATIENCE", "60")),
            phases: env_or("MOTOR_BENCH_PHASES", PHASES)
                .split(',')
                .map(|p| {
                    let p = p.trim().to_owned();
                    assert!(
                        PHASES.split(',').any(|known| known == p),
                        "MOTOR_BENCH_PHASES: {p:?} is not one of {PHASES}"
                    );
                    p
                })
                .collect(),
        }
    }

    /// Whether the phase `name` (one of [`PHASES`]) runs.
    fn runs(&self, name: &str) -> bool {
        self.phases.iter().any(|p| p == name)
    }
}

/// The phases MOTOR_BENCH_PHASES may name, and its default: all of them.
const PHASES: &str = "intake,ordered,clave,unordered,arrays,rates,unordered-rates,idle";

/// The latency target at a fixed rate, and whether the rate must be held.
fn fixed_rate_target(rate: f64) -> (Option<(f64, f64)>, bool) {
    match rate as u64 {
        400 => (Some((5.0, 15.0)), false),
        1000 | 2000 => (Some((15.0, 50.0)), true),
        _ => (None, false),
    }
}

struct Bench {
    receiver: Arc<Receiver>,
    cpu: Processes,
    load: Load,
    pool: motor_store::Pool,
    patience: Duration,
}

impl Bench {
    /// Runs `posting`, waits until every event it committed reached `hook`
    /// (none for intake) and the outbox is drained, and prints the phase.
    async fn phase(
        &self,
        name: &str,
        hook: Option<Hook>,
        posting: impl Future<Output = Posted>,
    ) -> Phase {
        self.receiver.clear();
        let failed_before = self.failed_attempts().await;
        let before = self.cpu.sample();
        let posted = posting.await;
        let delivered = match hook {
            Some(hook) => {
                let expected: Vec<Key> = posted
                    .committed
                    .iter()
                    .map(|&(instance, seq)| (hook, instance, seq))
                    .collect();
                Some(self.receiver.wait_for(&expected, self.patience).await)
            }
            None => None,
        };
        self.drain_outbox().await;
        let cpu = self.cpu.since(&before);
        let phase = Phase {
            name: name.to_owned(),
            posted,
            delivered,
            cpu,
            failed_attempts: Some(self.failed_attempts().await - failed_before),
        };
        phase.print_progress();
        phase
    }

    /// Attempts recorded so far that did not deliver (those with an error
    /// code, as the console's last errors read them: `subscription_stats`),
    /// counted outside a phase's CPU window: a phase's share is the
    /// difference (a late retry of an earlier phase counts in the later).
    async fn failed_attempts(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM delivery_attempts WHERE error IS NOT NULL")
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// Issue 9's target 4: the closed loop over the ordered instances again
    /// while the receiver fails half the requests of the first 10 (503) and
    /// answers the 11th after 2 s; the other lanes' delivered rate against
    /// theirs in `all_healthy` (the same phase with every receiver healthy).
    /// The bad lanes' deliveries are then let through before the next phase.
    async fn bad_receivers(
        &self,
        instances: &[Uuid],
        all_healthy: &Phase,
        events: usize,
        senders: usize,
    ) -> Row {
        let failing: HashSet<Uuid> = instances.iter().take(10).copied().collect();
        let slow = instances.get(10).copied();
        let healthy: HashSet<Uuid> = instances.iter().skip(11).copied().collect();
        self.receiver.clear();
        self.receiver.misbehave(Misbehaviour { failing, slow });
        let failed_before = self.failed_attempts().await;
        let before = self.cpu.sample();
        let posted = self.load.closed(instances, events, false, senders).await;
        let expected: Vec<Key> = posted
            .committed
            .iter()
            .filter(|(instance, _)| healthy.contains(instance))
            .map(|&(instance, seq)| (Hook::Ordered, instance, seq))
            .collect();
        let delivered = self.receiver.wait_for(&expected, self.patience).await;
        let cpu = self.cpu.since(&before);
        let phase = Phase {
            name: "closed loop, ordered, bad receivers (healthy lanes)".to_owned(),
            cpu,
            delivered: Some(delivered),
            posted,
            failed_attempts: Some(self.failed_attempts().await - failed_before),
        };
        phase.print_progress();
        let rate = |p: &Phase| {
            p.delivered
                .as_ref()
                .map_or(f64::NAN, |d| d.rate_of(&healthy, p.posted.started_ms))
        };
        let row = Row::bad_receivers(
            &format!(
                "bad receivers: 10 of {} instances fail half their requests (503), one answers after 2 s",
                instances.len()
            ),
            &phase,
            rate(&phase),
            rate(all_healthy),
        );
        // Every receiver healthy again; the bad lanes catch up.
        self.receiver.misbehave(Misbehaviour::default());
        let rest: Vec<Key> = phase
            .posted
            .committed
            .iter()
            .map(|&(instance, seq)| (Hook::Ordered, instance, seq))
            .collect();
        let caught_up = self.receiver.wait_for(&rest, self.patience).await;
        if !caught_up.missing.is_empty() {
            println!(
                "  ! after the bad receivers, {} deliveries of the bad lanes still missing",
                caught_up.missing.len()
            );
        }
        self.drain_outbox().await;
        row
    }

    async fn drain_outbox(&self) {
        let deadline = tokio::time::Instant::now() + self.patience;
        loop {
            let pending = motor_store::outbox::pending(&self.pool).await.unwrap();
            if pending == 0 {
                return;
            }
            if tokio::time::Instant::now() > deadline {
                println!("  ! the outbox still holds {pending} records");
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for the list of benchmarks.
    }
    let settings = Settings::from_env();
    let binary = PathBuf::from(env_or("MOTOR_BENCH_MOTOR_BIN", env!("CARGO_BIN_EXE_motor")));
    let db = BenchDb::create().await;
    let (receiver, receiver_addr) = Receiver::start().await;
    let motor = server::Motor::start(&binary, &db).await;
    let tenant = motor.tenant(receiver_addr, settings.instances).await;
    let bench = Bench {
        receiver,
        cpu: Processes::new(motor.pid()),
        load: Load::new(&motor.base, &tenant.token, BATCH),
        pool: motor_store::connect(&db.url, 2).await.unwrap(),
        patience: settings.patience,
    };
    let (events, senders, n) = (settings.events, settings.senders, settings.instances);
    println!(
        "motor http benchmark: {} ({}), {events} events per closed-loop phase, {senders} senders, \
         {n} instances, {} s per fixed rate; topic prefix {}, Motor log {}",
        binary.display(),
        db.run_id,
        settings.seconds,
        motor.prefix,
        motor.log.display()
    );

    // The first deliveries wait for the consumer groups to join.
    let (ordered, unordered) = (&tenant.ordered, &tenant.unordered);
    for (name, hook, instances) in [
        ("warm-up, ordered", Hook::Ordered, ordered),
        ("warm-up, keyed", Hook::Keyed, &tenant.keyed),
        ("warm-up, unordered", Hook::Unordered, unordered),
    ] {
        let posting = bench.load.closed(instances, 1, false, 1);
        bench.phase(name, Some(hook), posting).await;
    }

    let mut rows = Vec::new();
    let mut phases = Vec::new();
    if settings.runs("intake") {
        let what = format!("intake, single-event POSTs, {senders} clients, no subscription");
        let intake = bench.load.closed(&tenant.intake, events, false, senders);
        let phase = bench.phase("intake", None, intake).await;
        rows.push(Row::throughput(&what, &phase, Some(5000.0)));
        phases.push(phase);
    }

    let closed_loop = [
        (
            "ordered",
            "closed loop, ordered",
            Hook::Ordered,
            ordered,
            false,
        ),
        (
            "unordered",
            "closed loop, unordered",
            Hook::Unordered,
            unordered,
            false,
        ),
        (
            "arrays",
            "closed loop, arrays of 100",
            Hook::Ordered,
            ordered,
            true,
        ),
    ];
    for (key, name, hook, instances, batched) in closed_loop {
        if !settings.runs(key) {
            continue;
        }
        let posting = bench.load.closed(instances, events, batched, senders);
        let phase = bench.phase(name, Some(hook), posting).await;
        let kind = if batched {
            "arrays of 100"
        } else {
            "single events"
        };
        let what = format!(
            "{name}: {senders} senders, {kind}, {} instance(s)",
            instances.len()
        );
        let target = if batched { 5000.0 } else { 3000.0 };
        rows.push(Row::throughput(&what, &phase, Some(target)));
        if hook == Hook::Ordered && !batched {
            // Right after (same table sizes), bad receivers for some lanes.
            rows.push(bench.bad_receivers(ordered, &phase, events, senders).await);
        }
        phases.push(phase);
    }

    if settings.runs("clave") {
        // `orden: clave` against `instancia` over as many instances: the
        // ordered phase's rate beside it (when it ran).
        let keyed = &tenant.keyed;
        let posting = bench.load.closed_keyed(keyed, events, senders);
        let phase = bench
            .phase("closed loop, clave", Some(Hook::Keyed), posting)
            .await;
        let what = format!(
            "closed loop, clave: {senders} senders, single events, {} instances × {} keys",
            keyed.len(),
            load::KEYS_PER_INSTANCE
        );
        rows.push(Row::throughput(&what, &phase, None));
        if let Some(ordered) = phases.iter().find(|p| p.name == "closed loop, ordered") {
            let rate = |p: &Phase, of: &[Uuid]| {
                let of: HashSet<Uuid> = of.iter().copied().collect();
                p.delivered
                    .as_ref()
                    .map_or(f64::NAN, |d| d.rate_of(&of, p.posted.started_ms))
            };
            println!(
                "  clave vs instancia over {} instances: {:.0}/s vs {:.0}/s delivered",
                keyed.len(),
                rate(&phase, keyed),
                rate(ordered, &tenant.ordered)
            );
        }
        phases.push(phase);
    }

    let shapes = [
        (
            "rates",
            "",
            "100 instances, ordered",
            Hook::Ordered,
            ordered,
        ),
        (
            "unordered-rates",
            ", unordered",
            "1 instance, unordered",
            Hook::Unordered,
            unordered,
        ),
    ];
    for (phase_name, suffix, shape, hook, instances) in shapes {
        if !settings.runs(phase_name) {
            continue;
        }
        for &rate in &settings.rates {
            let name = format!("fixed {}/s{suffix}", thousands(rate));
            let posting = bench.load.open(instances, rate, settings.seconds);
            let phase = bench.phase(&name, Some(hook), posting).await;
            let (target, held) = fixed_rate_target(rate);
            rows.push(Row::fixed_rate(&phase, rate, shape, target, held));
            phases.push(phase);
        }
    }

    if settings.runs("idle") {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let before = bench.cpu.sample();
        tokio::time::sleep(Duration::from_secs(settings.idle_seconds)).await;
        rows.push(Row::idle(&bench.cpu.since(&before)));
    }

    println!();
    report::print_targets(&rows);
    println!();
    println!("CPU per delivered event (intake: per accepted event), from /proc/<pid>/stat:");
    println!();
    report::print_cpu(&phases);
    println!();
    report::print_switches(&phases);

    motor.stop().await;
    bench.pool.close().await;
    db.drop_db().await;
}
