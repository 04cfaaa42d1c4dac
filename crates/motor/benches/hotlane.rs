//! Benchmark of one hot instance (issue 40): one instance, one ordered
//! subscription (`orden: instancia`, so one lane), a receiver on loopback
//! answering 204 at once, and the `motor` binary as its own process (every
//! role), as in http.rs, whose receiver, load generator, server and CPU
//! modules this reuses. Prints numbers and a markdown table; asserts
//! nothing about speed.
//!
//!   scripts/bench     (runs this after http.rs; MOTOR_BENCH_HOTLANE=0 skips it)
//!
//! Phases, each waited for until every delivery reached the receiver:
//! 1. fixed rates (open loop): single events at 100, 200 and 500/s for
//!    MOTOR_BENCH_SECONDS each — delivered/s, whether the rate was held
//!    (arrivals ≥ 95 % of the rate asked, nothing missing), commit →
//!    receiver p50, p99 and max;
//! 2. closed loop: MOTOR_BENCH_SENDERS senders post MOTOR_BENCH_EVENTS
//!    single events to the instance as fast as they are answered —
//!    delivered/s from the first POST to the last arrival;
//! 3. backlog drain: the subscription is paused (operator API), the load
//!    generator appends MOTOR_BENCH_HOTLANE_BACKLOG events (10,000), then
//!    the subscription is reactivated — drained/s from the reactivation to
//!    the last arrival, and from the first arrival to the last.
//!
//! Each phase's CPU per delivered event by process (`/proc/<pid>/stat`,
//! benches/http/cpu.rs). Commit → receiver is measured as in http.rs (the
//! receiver's clock minus the envelope's `received_at`).
//!
//! Knobs (environment): MOTOR_BENCH_SECONDS (10 per fixed rate),
//! MOTOR_BENCH_HOTLANE_RATES (100,200,500), MOTOR_BENCH_EVENTS (closed
//! loop; 10000), MOTOR_BENCH_SENDERS (16), MOTOR_BENCH_HOTLANE_BACKLOG
//! (10000), MOTOR_BENCH_PATIENCE (seconds without a new arrival before a
//! phase reports what is missing; 60), MOTOR_BENCH_MOTOR_BIN,
//! MOTOR_BENCH_DATABASE_URL, MOTOR_BENCH_KAFKA_BROKERS; Motor's own
//! MOTOR_DATABASE_POOL, MOTOR_DISPATCH_IN_FLIGHT and RUST_LOG pass through.

mod common;
#[path = "http/cpu.rs"]
#[allow(dead_code)]
mod cpu;
#[path = "http/load.rs"]
#[allow(dead_code)]
mod load;
#[path = "http/receiver.rs"]
#[allow(dead_code)]
mod receiver;
#[path = "http/report.rs"]
#[allow(dead_code)]
mod report;
#[path = "http/server.rs"]
#[allow(dead_code)]
mod server;

use std::{path::PathBuf, sync::Arc, time::Duration};

use common::{env_or, number};
use cpu::Processes;
use load::{Load, Posted};
use receiver::{now_ms, Hook, Key, Receiver};
use report::{thousands, Phase};
use serde_json::json;
use uuid::Uuid;

/// A fixed rate is held when arrivals reach this share of the rate asked.
const HELD: f64 = 0.95;

struct Settings {
    seconds: f64,
    rates: Vec<f64>,
    events: usize,
    senders: usize,
    backlog: usize,
    patience: Duration,
}

impl Settings {
    fn from_env() -> Self {
        Self {
            seconds: number("MOTOR_BENCH_SECONDS", "10"),
            rates: env_or("MOTOR_BENCH_HOTLANE_RATES", "100,200,500")
                .split(',')
                .map(|r| {
                    r.trim()
                        .parse()
                        .expect("MOTOR_BENCH_HOTLANE_RATES: numbers")
                })
                .collect(),
            events: number("MOTOR_BENCH_EVENTS", "10000") as usize,
            senders: number("MOTOR_BENCH_SENDERS", "16") as usize,
            backlog: number("MOTOR_BENCH_HOTLANE_BACKLOG", "10000") as usize,
            patience: Duration::from_secs_f64(number("MOTOR_BENCH_PATIENCE", "60")),
        }
    }
}

/// The hot instance and what the bench needs to drive it.
struct Bench {
    receiver: Arc<Receiver>,
    cpu: Processes,
    load: Load,
    instance: Uuid,
    subscription: String,
    motor: server::Motor,
    client: reqwest::Client,
    patience: Duration,
}

/// One line of the table.
struct Line {
    phase: Phase,
    /// The rate asked (fixed rates only).
    asked: Option<f64>,
    /// Delivered per second as the table shows it.
    rate: f64,
    /// Drain only: arrivals per second from the first to the last.
    first_to_last: Option<f64>,
}

impl Bench {
    /// Every key `posted` committed, as the receiver sees it.
    fn expected(posted: &Posted) -> Vec<Key> {
        posted
            .committed
            .iter()
            .map(|&(instance, seq)| (Hook::Ordered, instance, seq))
            .collect()
    }

    /// Runs a load and waits for its deliveries.
    async fn phase(&self, name: &str, posting: impl std::future::Future<Output = Posted>) -> Phase {
        self.receiver.clear();
        let before = self.cpu.sample();
        let posted = posting.await;
        let delivered = self
            .receiver
            .wait_for(&Self::expected(&posted), self.patience)
            .await;
        let phase = Phase {
            name: name.to_owned(),
            posted,
            delivered: Some(delivered),
            cpu: self.cpu.since(&before),
            failed_attempts: None,
        };
        phase.print_progress();
        phase
    }

    /// Pauses or reactivates the subscription through the operator API.
    async fn set_state(&self, action: &str) {
        let response = self
            .client
            .post(format!(
                "{}/v1/admin/subscriptions/{}/{action}",
                self.motor.base, self.subscription
            ))
            .bearer_auth(&self.motor.admin_token)
            .send()
            .await
            .unwrap();
        let status = response.status();
        assert!(
            status.is_success(),
            "{action}: {status} {}",
            response.text().await.unwrap_or_default()
        );
    }

    /// The backlog drain: appends `events` while the subscription is paused,
    /// reactivates it and waits for the receiver.
    async fn drain(&self, events: usize, senders: usize) -> Line {
        self.set_state("pause").await;
        let posted = self
            .load
            .closed(&[self.instance], events, false, senders)
            .await;
        if posted.errors > 0 {
            println!("  ! {} POSTs of the backlog failed", posted.errors);
        }
        // Let the appends' own work (the relay's outbox) settle first.
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.receiver.clear();
        let before = self.cpu.sample();
        let released_ms = now_ms();
        self.set_state("reactivate").await;
        let delivered = self
            .receiver
            .wait_for(&Self::expected(&posted), self.patience)
            .await;
        let mut posted = posted;
        // From the reactivation: `delivered_per_s` counts from here.
        posted.started_ms = released_ms;
        let phase = Phase {
            name: format!("backlog drain, {}", thousands(events as f64)),
            posted,
            delivered: Some(delivered),
            cpu: self.cpu.since(&before),
            failed_attempts: None,
        };
        phase.print_progress();
        Line {
            rate: phase.delivered_per_s(),
            first_to_last: Some(phase.arrival_rate()),
            asked: None,
            phase,
        }
    }
}

/// Commit → receiver max (ms).
fn max_latency(phase: &Phase) -> f64 {
    phase
        .delivered
        .as_ref()
        .map(|d| d.latencies())
        .and_then(|ms| ms.last().copied())
        .unwrap_or(f64::NAN)
}

fn print_table(lines: &[Line]) {
    println!("| phase | delivered/s | held | commit → receiver p50 / p99 / max (ms) | missing |");
    println!("| --- | --- | --- | --- | --- |");
    for line in lines {
        let phase = &line.phase;
        let (p50, p99) = phase.latency();
        let missing = phase.delivered.as_ref().map_or(0, |d| d.missing.len());
        let held = match line.asked {
            Some(asked) => {
                if line.rate >= HELD * asked && missing == 0 {
                    "yes"
                } else {
                    "**no**"
                }
            }
            None => "—",
        };
        let rate = match line.first_to_last {
            Some(f) => format!(
                "{} (first to last arrival {})",
                thousands(line.rate),
                thousands(f)
            ),
            None => thousands(line.rate),
        };
        let latency = if line.first_to_last.is_some() {
            "—".to_owned()
        } else {
            format!("{p50:.1} / {p99:.1} / {:.1}", max_latency(phase))
        };
        println!(
            "| {} | {rate} | {held} | {latency} | {missing} |",
            phase.name
        );
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for the list of benchmarks.
    }
    let settings = Settings::from_env();
    let binary = PathBuf::from(env_or("MOTOR_BENCH_MOTOR_BIN", env!("CARGO_BIN_EXE_motor")));
    let db = common::BenchDb::create().await;
    let (receiver, receiver_addr) = Receiver::start().await;
    let motor = server::Motor::start(&binary, &db).await;

    // One app, one instance, one ordered subscription.
    let app = motor
        .post(
            "/v1/admin/apps",
            &motor.admin_token,
            json!({"nombre": "hotlane", "destinos_permitidos": ["127.0.0.1"]}),
        )
        .await;
    let app = app["id"].as_str().unwrap().to_owned();
    let instance = motor.instances(&app, 1, "hot").await[0];
    let key = motor
        .post(
            &format!("/v1/admin/apps/{app}/keys"),
            &motor.admin_token,
            json!({"nombre": "hotlane", "scopes": ["events:write", "subscriptions:manage"]}),
        )
        .await;
    let token = key["token"].as_str().unwrap().to_owned();
    let subscription = motor
        .post(
            "/v1/subscriptions",
            &token,
            json!({
                "nombre": "hot",
                "url": format!("http://{receiver_addr}/hook/{}", Hook::Ordered.path()),
                "instancias": [instance],
                "orden": "instancia",
            }),
        )
        .await;
    let subscription = subscription["suscripcion"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    println!(
        "motor hot-lane benchmark: {} ({}), one instance, one ordered subscription, \
         {} s per fixed rate, closed loop of {} events ({} senders), backlog of {}; Motor log {}",
        binary.display(),
        db.run_id,
        settings.seconds,
        settings.events,
        settings.senders,
        settings.backlog,
        motor.log.display()
    );
    let bench = Bench {
        receiver,
        cpu: Processes::new(motor.pid()),
        load: Load::new(&motor.base, &token, 1),
        instance,
        subscription,
        motor,
        client: reqwest::Client::new(),
        patience: settings.patience,
    };

    let hot = [instance];
    // The first delivery waits for the consumer groups to join.
    bench
        .phase("warm-up", bench.load.closed(&hot, 1, false, 1))
        .await;

    let mut lines = Vec::new();
    for &rate in &settings.rates {
        let name = format!("fixed {}/s", thousands(rate));
        let posting = bench.load.open(&hot, rate, settings.seconds);
        let phase = bench.phase(&name, posting).await;
        lines.push(Line {
            rate: phase.arrival_rate(),
            asked: Some(rate),
            first_to_last: None,
            phase,
        });
    }
    if settings.events > 0 {
        let name = format!(
            "closed loop, {} events, {} senders",
            thousands(settings.events as f64),
            settings.senders
        );
        let posting = bench
            .load
            .closed(&hot, settings.events, false, settings.senders);
        let phase = bench.phase(&name, posting).await;
        lines.push(Line {
            rate: phase.delivered_per_s(),
            asked: None,
            first_to_last: None,
            phase,
        });
    }
    if settings.backlog > 0 {
        lines.push(bench.drain(settings.backlog, settings.senders).await);
    }

    println!();
    println!(
        "Hot lane: one instance, one ordered subscription, receiver on loopback (204 at once); \
         fixed rates delivered/s are arrivals first to last, held at ≥ {:.0} % of the rate; \
         closed loop from the first POST to the last arrival; drain from the reactivation.",
        HELD * 100.0
    );
    println!();
    print_table(&lines);
    println!();
    println!("CPU per delivered event, from /proc/<pid>/stat:");
    println!();
    let phases: Vec<Phase> = lines.into_iter().map(|l| l.phase).collect();
    report::print_cpu(&phases);
    println!();
    report::print_switches(&phases);

    bench.motor.stop().await;
    db.drop_db().await;
}
