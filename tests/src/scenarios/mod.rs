//! The fault matrix: each scenario builds a [`Run`], drives a workload
//! through separate `motor` processes, does its fault, lets the run settle
//! and returns the checker's [`Report`]. `Size::Quick` is the subset CI
//! runs on every push (10–40 s each); `Size::Full` is what
//! `scripts/faults` runs.

mod brokers;
mod commands;
mod contracts;
mod faults;
mod hotlane;
mod receivers;
pub mod soak;

use std::time::Duration;

use anyhow::Context;

pub use self::{brokers::*, commands::*, contracts::*, faults::*, hotlane::*, receivers::*};
use crate::{
    check::Report,
    harness::{Behaviour, Incoming, Receiver, Run, RunConfig},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    Quick,
    Full,
}

impl Size {
    fn pick<T>(self, quick: T, full: T) -> T {
        match self {
            Size::Quick => quick,
            Size::Full => full,
        }
    }
}

/// Every scenario by name (what `scripts/faults` and the matrix test run).
pub const ALL: [&str; 26] = [
    "kill9-api",
    "kill9-relay",
    "kill9-dispatch",
    "kill9-retry",
    "kill9-sweeper",
    "kill9-all",
    "broker-restart",
    "postgres-crash",
    "postgres-failover",
    "postgres-failover-async",
    "rebalance-storm",
    "netcut-postgres",
    "netcut-broker",
    "netcut-broker-blackhole",
    "brokers-kill9-dispatch",
    "contracts-kill9-dispatch",
    "hotlane-kill9-dispatch",
    "receivers-mix",
    "receivers-trickle",
    "receivers-clock-skew",
    "poison-head",
    "replay-during-live",
    "secret-rotation",
    "suspended-reactivated",
    "unordered-in-flight",
    "commands",
];

/// Runs scenario `name` on a runtime of its own (two workers: the
/// machine is shared) and fails unless the checker passes its history:
/// what each test of the matrix does.
pub fn run_and_check(name: &str, size: Size) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let report = runtime
        .block_on(run(name, size))
        .unwrap_or_else(|e| panic!("{name}: {e:#}"));
    if REPORT_ONLY.contains(&name) {
        // Expected to lose what the standby had not received: the report
        // (printed by the run) is the result, not a failure of the matrix.
        return;
    }
    assert!(report.ok(), "{report}");
}

/// Scenarios whose violations are the finding they exist to show (an
/// asynchronous standby loses the last commits): printed and counted, but
/// never a failure of the matrix (`motor-check` does not fail on them).
pub const REPORT_ONLY: [&str; 1] = ["postgres-failover-async"];

/// Runs the scenario called `name`.
pub async fn run(name: &str, size: Size) -> anyhow::Result<Report> {
    match name {
        "kill9-api" | "kill9-relay" | "kill9-dispatch" | "kill9-retry" | "kill9-sweeper"
        | "kill9-all" => kill9(&name["kill9-".len()..], size).await,
        "broker-restart" => broker_restart(size).await,
        "postgres-crash" => postgres_crash(size).await,
        "postgres-failover" => postgres_failover(true, size).await,
        "postgres-failover-async" => postgres_failover(false, size).await,
        "rebalance-storm" => rebalance_storm(size).await,
        "netcut-postgres" => netcut_postgres(size).await,
        "netcut-broker" => netcut_broker(size).await,
        "netcut-broker-blackhole" => netcut_broker_blackhole(size).await,
        "brokers-kill9-dispatch" => brokers_kill9_dispatch(size).await,
        "contracts-kill9-dispatch" => contracts_kill9_dispatch(size).await,
        "hotlane-kill9-dispatch" => hotlane_kill9_dispatch(size).await,
        "receivers-mix" => receivers_mix(size).await,
        "receivers-trickle" => receivers_trickle(size).await,
        "receivers-clock-skew" => receivers_clock_skew(size).await,
        "poison-head" => poison_head(size).await,
        "replay-during-live" => replay_during_live(size).await,
        "secret-rotation" => secret_rotation(size).await,
        "suspended-reactivated" => suspended_reactivated(size).await,
        "unordered-in-flight" => unordered_in_flight(size).await,
        "commands" => commands(size).await,
        other => anyhow::bail!("no scenario {other}"),
    }
}

/// A stable hash of a delivery id and an attempt count, in 0..100.
pub fn bucket(delivery_id: &str, previous: usize) -> u32 {
    let mut h: u32 = 2_166_136_261;
    for b in delivery_id.bytes().chain((previous as u32).to_le_bytes()) {
        h = (h ^ b as u32).wrapping_mul(16_777_619);
    }
    // murmur3's finaliser: FNV alone leaves the last bytes' effect weak.
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h % 100
}

/// `pct` % of requests answer 503, but never more than `most` in a row
/// for one delivery.
pub fn flaky(pct: u32, most: usize) -> impl Fn(&Incoming) -> Behaviour + Send + Sync {
    move |i| {
        if i.previous < most && bucket(&i.delivery_id, i.previous) < pct {
            Behaviour::Status(503)
        } else {
            Behaviour::Status(204)
        }
    }
}

/// One process per role.
pub async fn split_roles(run: &mut Run) -> anyhow::Result<()> {
    for role in ["api", "relay", "dispatch", "retry", "sweeper"] {
        run.spawn(role, role);
    }
    run.wait_api(Duration::from_secs(30)).await
}

/// `front` (api, relay, sweeper) and `back` (dispatch, retry).
pub async fn front_and_back(run: &mut Run) -> anyhow::Result<()> {
    run.spawn("front", "api,relay,sweeper");
    run.spawn("back", "dispatch,retry");
    run.wait_api(Duration::from_secs(30)).await
}

/// Produces `per_instance` events to every instance, in a task per
/// instance; the handle finishes when all were accepted.
pub fn produce_all(
    run: &Run,
    per_instance: usize,
    batch: usize,
) -> tokio::task::JoinHandle<anyhow::Result<()>> {
    produce_all_paced(run, per_instance, batch, Duration::ZERO)
}

/// [`produce_all`] with `pause` after each accepted batch.
pub fn produce_all_paced(
    run: &Run,
    per_instance: usize,
    batch: usize,
    pause: Duration,
) -> tokio::task::JoinHandle<anyhow::Result<()>> {
    let producer = run.producer();
    let instances = run.tenant().instances.clone();
    tokio::spawn(async move {
        let tasks: Vec<_> = instances
            .into_iter()
            .map(|instance| {
                let producer = producer.clone();
                tokio::spawn(async move {
                    producer
                        .produce_paced(
                            &instance,
                            per_instance,
                            batch,
                            Duration::from_secs(90),
                            pause,
                        )
                        .await
                })
            })
            .collect();
        for task in tasks {
            task.await.context("producer task")??;
        }
        Ok(())
    })
}

/// The standard workload: an ordered subscription whose receiver answers
/// 503 to 20 % of requests (at most twice in a row) and an unordered one
/// answering 204 after 30 ms.
pub async fn standard_subscriptions(run: &Run) -> anyhow::Result<(Receiver, Receiver)> {
    let ordered = run.receiver("ordered").await;
    ordered.script(flaky(20, 2));
    run.subscribe(&ordered, true, &[]).await?;
    let unordered = run.receiver("unordered").await;
    unordered.script(|i: &Incoming| {
        if i.previous == 0 && bucket(&i.delivery_id, 0) < 10 {
            Behaviour::Status(503)
        } else {
            Behaviour::Delay(30, 204)
        }
    });
    run.subscribe(&unordered, false, &[]).await?;
    Ok((ordered, unordered))
}

pub fn config(name: &str) -> RunConfig {
    RunConfig::new(name)
}
