//! The sweeper role: progress never depends on a single message. Every
//! second (less often when a pass is slow) it looks for lane heads that are due but may have no live job
//! (an expired lease after a crash, a lost wake-up, a park that raced the
//! head's finish, a broker that forgot its topics) and writes fresh jobs
//! for them through the outbox. A duplicate job is harmless: the claim
//! drops it. Each pass also ends the commands no executor will finish
//! ([`sweep_commands_once`]): those whose `expires_at` passed before a
//! claim become `fallido` (`comando_vencido`), those whose lease ran out
//! while `ejecutando` become `ambiguo` (`frontera`), and suspends the
//! subscriptions bound to an API key that lapsed ([`lapse_keys_once`]:
//! the keys that lapsed lately, every lapsed key once a minute). It also
//! runs retention (`crate::retention`) every `purge_every`, and analyses
//! the small tables every hot statement joins once they grew
//! (`motor_store::statistics::analyze_grown`).

use std::{sync::Arc, time::Duration};

use motor_metrics::Metrics;
use motor_store::{
    commands,
    deliveries::{self, LaneHints},
    subscriptions::Lapsed,
    Pool,
};
use sqlx::PgConnection;
use tokio_util::sync::CancellationToken;

use crate::{retention, Result};

#[derive(Debug, Clone)]
pub struct SweeperConfig {
    pub every: Duration,
    /// How long a due, unleased head may sit before it counts as lost.
    pub stale_after: Duration,
    pub batch: i64,
    /// How often retention runs.
    pub purge_every: Duration,
}

impl Default for SweeperConfig {
    fn default() -> Self {
        Self {
            every: Duration::from_secs(1),
            stale_after: Duration::from_secs(5),
            // A requeue's cost is its batch (each row rewrites its index
            // entries and writes a job): 250 keeps a pass well under 50 ms.
            batch: 250,
            purge_every: Duration::from_secs(60),
        }
    }
}

/// One retention pass with this sweeper's batch size; how many `entregada`
/// deliveries it deleted.
pub async fn purge_once(config: &SweeperConfig, pool: &Pool) -> Result<u64> {
    retention::purge(pool, config.batch).await
}

/// One content-retention pass with this sweeper's batch size (at most 100
/// events a batch); how many events it redacted.
pub async fn redact_once(config: &SweeperConfig, pool: &Pool) -> Result<u64> {
    retention::redact(pool, config.batch).await
}

pub async fn run(
    config: SweeperConfig,
    pool: Pool,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<()> {
    tracing::info!("sweeper started");
    let mut purged_at: Option<tokio::time::Instant> = None;
    let mut hints = LaneHints::default();
    let mut key_passes = KeyPasses::default();
    // The passes' own connection, outside the pool: a pass never waits
    // behind the hot path for one (44 ms at the start of a drain, when
    // every lane moves at once) and never takes one from it. Made again
    // after an error, to the host the pool uses then (a failover moves it).
    let mut conn: Option<PgConnection> = None;
    while !shutdown.is_cancelled() {
        let started = tokio::time::Instant::now();
        let pass = async {
            if conn.is_none() {
                conn = Some(motor_store::connect_own(&pool, SWEEPER_APP_NAME).await?);
            }
            let conn = conn.as_mut().expect("connected above");
            let swept = sweep_commands_once(&config, conn).await?;
            metrics
                .commands
                .swept(swept.expired as u64, swept.ambiguous as u64);
            let lapsed = key_passes.next(started);
            lapse_keys_once(conn, lapsed).await?;
            key_passes.passed(lapsed, started);
            let requeued = sweep_once(&config, conn, &mut hints).await;
            if requeued.is_ok() {
                analyze_grown_once(conn).await;
            }
            requeued
        };
        match pass.await {
            Ok(n) => {
                metrics.sweeper_requeued.inc_by(n as u64);
                metrics
                    .sweeper_pass_seconds
                    .observe(started.elapsed().as_secs_f64());
            }
            Err(e) => {
                tracing::warn!(error = %e, "sweep failed; retrying");
                conn = None;
                // The next connection may reach another history (a
                // failover): start from a walk of every lane. A pass also
                // notices a change of server by itself (`LaneHints`).
                hints.forget();
            }
        }
        // A pass walks a slice of the known lanes (about
        // `deliveries::LANES_PER_PASS`, and one index range per unordered
        // subscription among them): if it still grows slow (a first pass
        // knows no lane and walks them all), passes space out so the
        // sweeper stays a small share of Postgres.
        let pause = config.every.max(started.elapsed() * 4);
        if purged_at.is_none_or(|at| at.elapsed() >= config.purge_every) {
            match purge_once(&config, &pool).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "retention deleted delivered deliveries"),
                Err(e) => tracing::warn!(error = %e, "retention failed; retrying"),
            }
            match redact_once(&config, &pool).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(redacted = n, "retention redacted event content"),
                Err(e) => tracing::warn!(error = %e, "content retention failed; retrying"),
            }
            purged_at = Some(tokio::time::Instant::now());
        }
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = tokio::time::sleep(pause) => {}
        }
    }
    tracing::info!("sweeper stopped");
    Ok(())
}

/// How often the sweeper looks at every lapsed API key, not only those
/// that lapsed since it last did: the bound on how long a subscription
/// bound after its key lapsed (a change that authenticated just before)
/// stays live.
pub const EVERY_KEY_EVERY: Duration = Duration::from_secs(60);

/// Added to the time since the last pass over every key: the two clocks
/// (Motor's, which times the passes, and Postgres's, whose `now()` the
/// keys' instants are compared with) and that pass's own length.
const LAPSE_MARGIN: Duration = Duration::from_secs(5);

/// Which lapsed API keys each pass looks at: every one at the first pass
/// and every [`EVERY_KEY_EVERY`] after, else those that lapsed since the
/// last such pass began ([`Lapsed::Within`]), which reads a range of two
/// small indexes instead of every bound subscription.
#[derive(Debug, Default)]
struct KeyPasses {
    /// When the last pass over every key that succeeded began.
    every_at: Option<tokio::time::Instant>,
}

impl KeyPasses {
    fn next(&self, now: tokio::time::Instant) -> Lapsed<'static> {
        match self.every_at {
            Some(at) if now.duration_since(at) < EVERY_KEY_EVERY => {
                Lapsed::Within(now.duration_since(at) + LAPSE_MARGIN)
            }
            _ => Lapsed::Every,
        }
    }

    /// A pass that began at `began` looked at `lapsed` and succeeded.
    fn passed(&mut self, lapsed: Lapsed<'_>, began: tokio::time::Instant) {
        if lapsed == Lapsed::Every {
            self.every_at = Some(began);
        }
    }
}

/// API keys that lapsed (`lapsed`: past their `vence_en`, and revocations
/// whose own transaction missed a subscription bound meanwhile): under a
/// contract that cancels on deactivation, the subscriptions bound to them
/// are suspended and their pending deliveries cancelled, in one
/// transaction on `conn`, opened only when there is one to suspend (a pass
/// with none is its reads alone). How many it suspended.
pub async fn lapse_keys_once(conn: &mut PgConnection, lapsed: Lapsed<'_>) -> Result<usize> {
    let n = motor_store::subscriptions::suspend_for_lapsed_keys(conn, lapsed).await?;
    if n > 0 {
        tracing::info!(suspended = n, "subscriptions of lapsed API keys suspended");
    }
    Ok(n)
}

/// Analyses the small tables that grew (`motor_store::statistics`), after
/// the pass's own statements: what it analyses is planned again at the
/// next call, on every connection. A failure is logged and never fails
/// the pass.
async fn analyze_grown_once(conn: &mut PgConnection) {
    match motor_store::statistics::analyze_grown(conn).await {
        Ok(tables) if !tables.is_empty() => {
            tracing::info!(?tables, "analysed tables that grew");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "analysing tables that grew failed"),
    }
}

/// The sweeper's connection's `application_name`.
const SWEEPER_APP_NAME: &str = "motor-sweeper";

/// One pass on `conn`, with the lanes earlier passes found (`hints`; a
/// fresh [`LaneHints`] walks every lane); how many jobs it wrote. A pass
/// over [`SLOW_PASS`] is logged with its time split between reading the
/// candidates and requeuing them.
pub async fn sweep_once(
    config: &SweeperConfig,
    conn: &mut PgConnection,
    hints: &mut LaneHints,
) -> Result<usize> {
    let started = std::time::Instant::now();
    let ids = hints
        .due_lane_heads(&mut *conn, config.stale_after, config.batch)
        .await?;
    let read = started.elapsed();
    let mut written = 0;
    if !ids.is_empty() {
        let jobs = deliveries::requeue(&mut *conn, &ids).await?;
        if !jobs.is_empty() {
            tracing::info!(requeued = jobs.len(), "sweeper re-enqueued lane heads");
        }
        written = jobs.len();
    }
    let total = started.elapsed();
    if total > SLOW_PASS {
        tracing::warn!(
            read_ms = read.as_millis() as u64,
            requeue_ms = (total - read).as_millis() as u64,
            candidates = ids.len(),
            lanes = hints.len(),
            requeued = written,
            "slow sweeper pass"
        );
    }
    Ok(written)
}

/// What one pass over commands did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandSweep {
    /// Commands expired: `fallido`, `comando_vencido`, `command.failed`.
    pub expired: usize,
    /// Leases that ran out: `ambiguo`, `frontera`, `command.ambiguous`.
    pub ambiguous: usize,
}

/// Ends up to a batch each of expired commands and of commands whose
/// lease ran out, each job in its own transaction on `conn`, opened only
/// when it found commands to end (every change is the store's
/// compare-and-set, so a claim or a report that got there first wins and
/// the command is skipped).
pub async fn sweep_commands_once(
    config: &SweeperConfig,
    conn: &mut PgConnection,
) -> Result<CommandSweep> {
    let now = motor_domain::time::now_millis();
    let expired = commands::expire_due(conn, now, config.batch).await?;
    let ambiguous = commands::expire_leases(conn, now, config.batch).await?;
    let sweep = CommandSweep {
        expired: expired.len(),
        ambiguous: ambiguous.len(),
    };
    if sweep != CommandSweep::default() {
        tracing::info!(
            expired = sweep.expired,
            ambiguous = sweep.ambiguous,
            "sweeper ended commands no executor will finish"
        );
    }
    Ok(sweep)
}

/// A pass slower than this is logged with where its time went.
const SLOW_PASS: Duration = Duration::from_millis(50);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key at the first pass, then only those lapsed since that pass
    /// began (with the margin), every key again once
    /// [`EVERY_KEY_EVERY`] has run out; a pass over every key that failed
    /// is made again at the next pass.
    #[test]
    fn every_key_once_a_minute_else_those_lapsed_since() {
        let start = tokio::time::Instant::now();
        let mut passes = KeyPasses::default();
        assert_eq!(passes.next(start), Lapsed::Every);
        // It failed: nothing recorded.
        let second = start + Duration::from_secs(1);
        assert_eq!(passes.next(second), Lapsed::Every);
        passes.passed(Lapsed::Every, second);
        let third = second + Duration::from_secs(1);
        let within = passes.next(third);
        assert_eq!(
            within,
            Lapsed::Within(Duration::from_secs(1) + LAPSE_MARGIN)
        );
        passes.passed(within, third);
        let late = second + EVERY_KEY_EVERY - Duration::from_millis(1);
        assert_eq!(
            passes.next(late),
            Lapsed::Within(EVERY_KEY_EVERY - Duration::from_millis(1) + LAPSE_MARGIN)
        );
        let due = second + EVERY_KEY_EVERY;
        assert_eq!(passes.next(due), Lapsed::Every);
        passes.passed(Lapsed::Every, due);
        assert_eq!(
            passes.next(due + Duration::from_secs(2)),
            Lapsed::Within(Duration::from_secs(2) + LAPSE_MARGIN)
        );
    }
}
