//! The relay role: outbox → Kafka.
//!
//! Records are read per shard in id order, published through the idempotent
//! producer, and deleted only after the broker acknowledged them: by the
//! next round's read, in the same statement (one round trip a round), or
//! before shards may move to another relay, or at once when a round fails.
//! A relay that dies in between leaves published records behind, to be
//! published again (a duplicate, as when it dies before any delete). Shards are
//! owned under Postgres advisory locks held by one dedicated connection, so
//! any number of relay processes can run and records of one instance still
//! leave in order; a relay that dies frees its shards with its connection.
//! Each relay takes a fair share of the shards (the count of live relays is
//! read from `pg_stat_activity`) and the rest rebalance within a second.

mod shards;

use std::{sync::Arc, time::Duration};

use motor_bus::{topics::ensure_topics, BusConfig, Producer, Record, Topics};
use motor_metrics::Metrics;
use motor_store::{outbox, Pool};
use tokio::{sync::Notify, time::sleep};
use tokio_util::sync::CancellationToken;

use self::shards::Shards;
use crate::{EngineError, Result};

#[derive(Debug, Clone)]
pub struct RelayConfig {
    pub bus: BusConfig,
    /// Records read per round.
    pub batch: i64,
    /// Wait after the first empty round (the latency floor at low load);
    /// it doubles with each further empty round up to `idle_max`, so an idle
    /// relay costs Postgres a few reads a second, not hundreds.
    pub idle_wait: Duration,
    pub idle_max: Duration,
    /// How often shard ownership is re-checked.
    pub rebalance_every: Duration,
    /// Outbox writers in this process notify it: an idle relay wakes at
    /// once instead of at its next poll.
    pub wake: Option<Arc<Notify>>,
}

impl RelayConfig {
    /// `idle_max` for a relay that shares its process with the API or the
    /// dispatcher (and so is woken by their commits): its polls only look
    /// for other processes' records, which may wait this long when idle.
    pub const IDLE_MAX_WOKEN: Duration = Duration::from_millis(250);

    pub fn new(bus: BusConfig) -> Self {
        Self {
            bus,
            batch: 2000,
            idle_wait: Duration::from_millis(5),
            idle_max: Duration::from_millis(50),
            rebalance_every: Duration::from_secs(1),
            wake: None,
        }
    }
}

/// Runs the relay until `shutdown` fires.
pub async fn run(
    config: RelayConfig,
    pool: Pool,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<()> {
    let mut producer = Producer::new(&config.bus)?;
    let topics = Topics::new(&config.bus.prefix);
    wait_for_topics(&config.bus, &shutdown).await;
    let mut shards = Shards::new(pool.clone())?;
    let mut idle = config.idle_wait;
    // Acknowledged records not yet deleted.
    let mut owed = Vec::new();
    tracing::info!("relay started");

    while !shutdown.is_cancelled() {
        if shards.due(config.rebalance_every) {
            // Before shards may move: another relay would publish them again.
            if let Err(e) = settle(&pool, &mut owed).await {
                tracing::warn!(error = %e, "relay cannot delete published records; retrying");
                pause(&shutdown, Duration::from_secs(1)).await;
                continue;
            }
            if let Err(e) = shards.rebalance().await {
                tracing::warn!(error = %e, "relay lost its shard locks; reconnecting");
                shards.reset();
                pause(&shutdown, Duration::from_secs(1)).await;
                continue;
            }
            metrics.relay_shards_owned.set(shards.count() as i64);
        }
        if shards.count() == 0 {
            pause(&shutdown, config.rebalance_every).await;
            continue;
        }
        let owned = shards.list();
        let round = relay_once(
            &config, &pool, &producer, &topics, &owned, &metrics, &mut owed,
        );
        match round.await {
            Ok(0) => {
                match &config.wake {
                    Some(wake) => tokio::select! {
                        _ = wake.notified() => {}
                        _ = pause(&shutdown, idle) => {}
                    },
                    None => pause(&shutdown, idle).await,
                }
                idle = (idle * 2).min(config.idle_max);
            }
            Ok(_) => idle = config.idle_wait,
            Err(e) => {
                tracing::warn!(error = %e, "relay round failed; retrying");
                // A broker that lost its topics (restart of an in-memory
                // broker) gets them back before the retry, and a fresh
                // producer: the idempotent producer's id and sequence numbers
                // mean nothing to a broker that forgot them, and its records
                // would time out forever. Nothing is in flight here (every
                // report of the round came back), so nothing is lost.
                let _ = ensure_topics(&config.bus).await;
                match Producer::new(&config.bus) {
                    Ok(fresh) => producer = fresh,
                    Err(e) => tracing::warn!(error = %e, "cannot make a new producer yet"),
                }
                pause(&shutdown, Duration::from_millis(500)).await;
            }
        }
    }
    producer.flush(Duration::from_secs(5));
    if let Err(e) = settle(&pool, &mut owed).await {
        tracing::warn!(error = %e, records = owed.len(), "relay stopped with published records undeleted: they will be published again");
    }
    tracing::info!("relay stopped");
    Ok(())
}

/// Deletes the records `owed` (published and acknowledged).
async fn settle(pool: &Pool, owed: &mut Vec<i64>) -> Result<()> {
    if !owed.is_empty() {
        outbox::delete(pool, owed).await?;
        owed.clear();
    }
    Ok(())
}

/// One round: delete the records `owed` by the round before and read the
/// oldest records of the owned shards, in one statement; publish them. The
/// acknowledged ones are owed to the next round, or deleted at once when
/// the round fails. Returns how many records were published.
async fn relay_once(
    config: &RelayConfig,
    pool: &Pool,
    producer: &Producer,
    topics: &Topics,
    shards: &[i32],
    metrics: &Metrics,
    owed: &mut Vec<i64>,
) -> Result<usize> {
    let records = outbox::fetch_after(pool, shards, config.batch, owed).await?;
    owed.clear();
    if records.is_empty() {
        return Ok(0);
    }
    let names: Vec<String> = records.iter().map(|r| topics.of_suffix(&r.topic)).collect();
    let batch: Vec<Record<'_>> = records
        .iter()
        .zip(&names)
        .map(|(r, topic)| Record {
            topic,
            key: &r.key,
            payload: &r.payload,
            headers: &r.headers,
        })
        .collect();
    let reports = producer.publish(&batch).await;
    let mut first_error = None;
    for (record, report) in records.iter().zip(reports) {
        match report {
            Ok(()) => owed.push(record.id),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    let published = owed.len();
    metrics.outbox_published.inc_by(published as u64);
    if let Some(e) = first_error {
        settle(pool, owed).await?;
        let failed = records.len() - published;
        metrics.outbox_publish_errors.inc_by(failed as u64);
        return Err(EngineError::NotAcknowledged {
            failed,
            cause: e.to_string(),
        });
    }
    Ok(published)
}

async fn wait_for_topics(bus: &BusConfig, shutdown: &CancellationToken) {
    let mut wait = Duration::from_millis(200);
    while !shutdown.is_cancelled() {
        match ensure_topics(bus).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, brokers = %bus.brokers, "cannot create topics yet; retrying");
                pause(shutdown, wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        }
    }
}

async fn pause(shutdown: &CancellationToken, wait: Duration) {
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = sleep(wait) => {}
    }
}
