//! The reconciliation job (sweeper role): every `every` it looks for work
//! Motor accepted that should be moving and is not — due `pendiente`
//! deliveries no job is working on, ordered lanes whose head has not moved,
//! outbox rows not published — and keeps alerts of motivo
//! `reconciliacion` in step: opened while something is stuck, closed once
//! it moves. The sweeper repairs lost jobs every second; this job is the
//! check that the repairs work. `motor doctor` runs one pass.

use std::{sync::Arc, time::Duration};

use motor_domain::reconcile::{Report, Thresholds};
use motor_metrics::{KindLabel, Metrics};
use motor_store::{reconcile, Pool};
use tokio_util::sync::CancellationToken;

use crate::Result;

#[derive(Debug, Clone)]
pub struct ReconcileConfig {
    pub every: Duration,
    pub thresholds: Thresholds,
}

impl Default for ReconcileConfig {
    fn default() -> Self {
        Self {
            every: Duration::from_secs(60),
            thresholds: Thresholds::default(),
        }
    }
}

pub async fn run(
    config: ReconcileConfig,
    pool: Pool,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<()> {
    while !shutdown.is_cancelled() {
        match reconcile_once(&config, &pool).await {
            Ok(report) => count(&metrics, &report),
            Err(e) => tracing::warn!(error = %e, "reconciliation failed; retrying"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = tokio::time::sleep(config.every) => {}
        }
    }
    Ok(())
}

/// One pass: the report, with the alerts brought in step with it.
pub async fn reconcile_once(config: &ReconcileConfig, pool: &Pool) -> Result<Report> {
    let report = reconcile::find(pool, config.thresholds).await?;
    let changes = reconcile::apply_alerts(pool, &report).await?;
    if !report.ok {
        tracing::warn!(
            pendientes = report.stranded.len(),
            carriles = report.stalled_lanes.len(),
            outbox = report.outbox_behind.as_ref().map_or(0, |o| o.rows),
            "reconciliation found stuck work"
        );
    }
    if changes.closed > 0 {
        tracing::info!(
            closed = changes.closed,
            "reconciliation closed healed alerts"
        );
    }
    Ok(report)
}

fn count(metrics: &Metrics, report: &Report) {
    let set = |tipo: &str, n: usize| {
        metrics
            .pipeline
            .reconciliation
            .get_or_create(&KindLabel { tipo: tipo.into() })
            .set(n as i64);
    };
    set("pendiente_sin_trabajo", report.stranded.len());
    set("carril_detenido", report.stalled_lanes.len());
    set(
        "outbox_atrasado",
        report.outbox_behind.as_ref().map_or(0, |o| o.rows as usize),
    );
}
