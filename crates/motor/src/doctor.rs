//! `motor doctor`: one reconciliation pass from the shell, for scripts and
//! on-call humans. Prints the report as JSON (stdout) and a summary
//! (stderr); the exit code is 0 when nothing is stuck, 2 when something is,
//! 1 when the check itself failed (Postgres unreachable, …).

use std::{process::ExitCode, time::Duration};

use clap::Args;
use motor_api::admin::operator::ReportOut;
use motor_domain::reconcile::{Report, Thresholds};
use motor_engine::ReconcileConfig;

/// Reconciliation thresholds and period (the sweeper role's job and
/// `motor doctor` read the same ones).
#[derive(Debug, Clone, Args)]
pub struct ReconcileArgs {
    /// How often the sweeper role reconciles, in seconds.
    #[arg(long, env = "MOTOR_RECONCILE_EVERY_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub reconcile_every_secs: u64,
    /// A due `pendiente` delivery with no live job for longer is stuck.
    #[arg(
        long = "reconcile-pendiente-secs",
        env = "MOTOR_RECONCILE_PENDIENTE_SECS",
        default_value_t = 300
    )]
    pub reconcile_pending_secs: u64,
    /// An ordered lane whose head has not changed for longer is stuck.
    #[arg(
        long = "reconcile-carril-secs",
        env = "MOTOR_RECONCILE_CARRIL_SECS",
        default_value_t = 900
    )]
    pub reconcile_lane_secs: u64,
    /// An outbox row not published for longer is stuck.
    #[arg(long, env = "MOTOR_RECONCILE_OUTBOX_SECS", default_value_t = 60)]
    pub reconcile_outbox_secs: u64,
}

impl Default for ReconcileArgs {
    fn default() -> Self {
        let u = Thresholds::default();
        Self {
            reconcile_every_secs: 60,
            reconcile_pending_secs: u.pending_seconds,
            reconcile_lane_secs: u.lane_seconds,
            reconcile_outbox_secs: u.outbox_seconds,
        }
    }
}

impl ReconcileArgs {
    pub fn config(&self) -> ReconcileConfig {
        ReconcileConfig {
            every: Duration::from_secs(self.reconcile_every_secs),
            thresholds: Thresholds {
                pending_seconds: self.reconcile_pending_secs,
                lane_seconds: self.reconcile_lane_secs,
                outbox_seconds: self.reconcile_outbox_secs,
            },
        }
    }
}

/// Exit code when something is stuck.
pub const STUCK: u8 = 2;

/// Runs one pass against `database_url` and reports it.
pub async fn run(database_url: &str, args: &ReconcileArgs) -> anyhow::Result<ExitCode> {
    motor_store::migrate(database_url).await?;
    let pool = motor_store::connect(database_url, 2).await?;
    let report = motor_engine::reconcile_once(&args.config(), &pool).await?;
    pool.close().await;
    println!(
        "{}",
        serde_json::to_string_pretty(&ReportOut::from(report.clone()))?
    );
    eprintln!("{}", summary(&report));
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(STUCK)
    })
}

fn summary(report: &Report) -> String {
    if report.ok {
        return "motor doctor: nothing stuck".into();
    }
    let mut parts = Vec::new();
    if !report.stranded.is_empty() {
        parts.push(format!(
            "{} due deliveries with no live job for over {} s",
            report.stranded.len(),
            report.thresholds.pending_seconds
        ));
    }
    if !report.stalled_lanes.is_empty() {
        parts.push(format!(
            "{} ordered lanes whose head has not moved for {} s",
            report.stalled_lanes.len(),
            report.thresholds.lane_seconds
        ));
    }
    if let Some(o) = &report.outbox_behind {
        parts.push(format!(
            "{} outbox rows older than {} s (oldest {:.0} s)",
            o.rows, report.thresholds.outbox_seconds, o.age_seconds
        ));
    }
    format!("motor doctor: STUCK: {}", parts.join("; "))
}
