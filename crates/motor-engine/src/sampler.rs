//! The metrics sampler: every `every` (15 s by default) it reads the
//! pipeline's backlogs from Postgres (DLQ, pending, oldest pending per
//! subscription, outbox depth and age, subscriptions per estado), the
//! dispatch and retry groups' lag from Kafka, and this process's resident
//! memory, and sets the sampled gauges. A scrape of `/metrics` only renders
//! what the last pass set; a slow or failed pass keeps the previous values.

use std::{sync::Arc, time::Duration};

use motor_bus::{lag::consumer_lag, BusConfig, Topics};
use motor_domain::{delivery::Tier, outbox::Topic};
use motor_metrics::{ConsumerLabel, Metrics, Point, StateLabel, SubscriptionLabel};
use motor_store::{observe, Pool};
use tokio_util::sync::CancellationToken;

use crate::Result;

#[derive(Debug, Clone)]
pub struct SamplerConfig {
    pub every: Duration,
    /// Kafka, for consumer lag (`None`: no lag gauges).
    pub bus: Option<BusConfig>,
}

/// Consumer lag is read at most this often, whatever `every` is: each read
/// makes (and drops) a Kafka client.
pub const LAG_EVERY: Duration = Duration::from_secs(5);

pub async fn run(
    config: SamplerConfig,
    pool: Pool,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<()> {
    let mut lag_read: Option<tokio::time::Instant> = None;
    while !shutdown.is_cancelled() {
        if let Err(e) = sample_once(&pool, &metrics).await {
            tracing::warn!(error = %e, "metrics sample failed; keeping the last values");
        }
        if let Some(bus) = &config.bus {
            if lag_read.is_none_or(|at| at.elapsed() >= LAG_EVERY) {
                sample_lag(bus, &metrics).await;
                lag_read = Some(tokio::time::Instant::now());
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = tokio::time::sleep(config.every) => {}
        }
    }
    Ok(())
}

/// One pass: sets every sampled gauge but consumer lag (read by [`run`]
/// every [`LAG_EVERY`]) and adds a point to the history.
pub async fn sample_once(pool: &Pool, metrics: &Metrics) -> Result<()> {
    let s = &metrics.pipeline.sampled;
    if let Some(rss) = resident_bytes() {
        s.resident_bytes.set(rss);
    }
    let backlog = observe::backlog(pool, motor_metrics::TOP_SUBSCRIPTIONS as i64).await?;
    s.dlq_size.set(backlog.dlq);
    s.pending.set(backlog.pending);
    s.cancelled.set(backlog.cancelled);
    s.outbox_depth.set(backlog.outbox_depth);
    s.outbox_oldest_seconds.set(backlog.outbox_oldest_seconds);
    s.oldest_pending_seconds.clear();
    for (subscription, age) in &backlog.oldest_pending {
        s.oldest_pending_seconds
            .get_or_create(&SubscriptionLabel {
                subscription_id: subscription.to_string(),
            })
            .set(*age);
    }
    for estado in ["activa", "pausada", "suspendida", "eliminada"] {
        let n = backlog
            .subscriptions
            .iter()
            .find(|(e, _)| e == estado)
            .map_or(0, |(_, n)| *n);
        s.subscriptions
            .get_or_create(&StateLabel {
                estado: estado.into(),
            })
            .set(n);
    }
    let now = chrono::Utc::now().timestamp();
    s.sampled_at.set(now);
    let p = &metrics.pipeline;
    let finished = |estado: &str| {
        p.deliveries_finished
            .get_or_create(&StateLabel {
                estado: estado.into(),
            })
            .get()
    };
    metrics.history.push(Point {
        at: now,
        accepted: metrics.events_stored.get(),
        delivered: finished("entregada"),
        failed: finished("fallida"),
        pending: backlog.pending,
        dlq: backlog.dlq,
        outbox_depth: backlog.outbox_depth,
        outbox_oldest_seconds: backlog.outbox_oldest_seconds,
    });
    Ok(())
}

/// The dispatch group's lag on `{prefix}.deliveries` and the retry group's
/// on each delay tier.
async fn sample_lag(bus: &BusConfig, metrics: &Metrics) {
    let topics = Topics::new(&bus.prefix);
    let groups = [
        (
            format!("{}.dispatch", bus.prefix),
            vec![topics.name(Topic::Deliveries)],
        ),
        (
            format!("{}.retry", bus.prefix),
            Tier::ALL
                .iter()
                .map(|t| topics.name(Topic::Retry(*t)))
                .collect(),
        ),
    ];
    for (group, names) in groups {
        let bus = bus.clone();
        let g = group.clone();
        let lag = tokio::task::spawn_blocking(move || {
            consumer_lag(&bus, &g, &names, Duration::from_secs(2))
        })
        .await;
        match lag {
            Ok(Ok(lags)) => {
                for (topic, lag) in lags {
                    metrics
                        .pipeline
                        .sampled
                        .consumer_lag
                        .get_or_create(&ConsumerLabel {
                            group: group.clone(),
                            topic,
                        })
                        .set(lag);
                }
            }
            Ok(Err(e)) => tracing::debug!(error = %e, %group, "consumer lag not read"),
            Err(e) => tracing::debug!(error = %e, %group, "consumer lag task failed"),
        }
    }
}

/// This process's resident set size, from `/proc/self/status` (Linux).
fn resident_bytes() -> Option<i64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
