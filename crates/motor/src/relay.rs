//! The relay role: outbox → Kafka.
//!
//! Records are read per shard in id order, published through the idempotent
//! producer, and deleted only after the broker acknowledged them. Shards are
//! owned under Postgres advisory locks held by one dedicated connection, so
//! any number of relay processes can run and records of one instance still
//! leave in order; a relay that dies frees its shards with its connection.
//! Each relay takes a fair share of the shards (the count of live relays is
//! read from `pg_stat_activity`) and the rest rebalance within a second.

use std::{collections::BTreeSet, str::FromStr, sync::Arc, time::Duration};

use motor_api::Metrics;
use motor_bus::{topics::ensure_topics, BusConfig, Producer, Record, Topics};
use motor_domain::OUTBOX_SHARDS;
use motor_store::{outbox, Pool};
use sqlx::{postgres::PgConnectOptions, ConnectOptions, PgConnection};
use tokio::time::{sleep, Instant};
use tokio_util::sync::CancellationToken;

/// `application_name` of relay lock connections.
const RELAY_APP_NAME: &str = "motor-relay";

#[derive(Debug, Clone)]
pub struct RelayConfig {
    pub database_url: String,
    pub bus: BusConfig,
    /// Records read per round.
    pub batch: i64,
    /// Wait between empty rounds (the latency floor at low load).
    pub idle_wait: Duration,
    /// How often shard ownership is re-checked.
    pub rebalance_every: Duration,
}

impl RelayConfig {
    pub fn new(database_url: String, bus: BusConfig) -> Self {
        Self {
            database_url,
            bus,
            batch: 2000,
            idle_wait: Duration::from_millis(5),
            rebalance_every: Duration::from_secs(1),
        }
    }
}

/// Shards this process owns, and the connection that holds their locks.
struct Shards {
    options: PgConnectOptions,
    conn: Option<PgConnection>,
    owned: BTreeSet<i32>,
    checked_at: Option<Instant>,
}

impl Shards {
    fn new(database_url: &str) -> anyhow::Result<Self> {
        Ok(Self {
            options: PgConnectOptions::from_str(database_url)?.application_name(RELAY_APP_NAME),
            conn: None,
            owned: BTreeSet::new(),
            checked_at: None,
        })
    }

    /// Takes or gives back shards so this relay owns its fair share.
    async fn rebalance(&mut self) -> anyhow::Result<()> {
        if self.conn.is_none() {
            self.conn = Some(self.options.connect().await?);
        }
        let conn = self.conn.as_mut().expect("connected above");
        let share = outbox::fair_share(outbox::live_relays(&mut *conn, RELAY_APP_NAME).await?);
        while self.owned.len() > share {
            let shard = *self.owned.last().expect("non-empty");
            outbox::unlock_shard(conn, shard).await?;
            self.owned.remove(&shard);
        }
        // Start at a random shard so relays starting together spread out.
        let start = (rand::random::<u32>() % OUTBOX_SHARDS as u32) as i32;
        for i in 0..OUTBOX_SHARDS {
            if self.owned.len() >= share {
                break;
            }
            let shard = (start + i) % OUTBOX_SHARDS;
            if !self.owned.contains(&shard) && outbox::try_lock_shard(conn, shard).await? {
                self.owned.insert(shard);
            }
        }
        self.checked_at = Some(Instant::now());
        Ok(())
    }

    fn due(&self, every: Duration) -> bool {
        self.checked_at.is_none_or(|at| at.elapsed() >= every)
    }

    /// Forgets every shard; closing the connection releases the locks.
    fn reset(&mut self) {
        self.conn = None;
        self.owned.clear();
        self.checked_at = None;
    }

    fn list(&self) -> Vec<i32> {
        self.owned.iter().copied().collect()
    }
}

/// Runs the relay until `shutdown` fires.
pub async fn run(
    config: RelayConfig,
    pool: Pool,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut producer = Producer::new(&config.bus)?;
    let topics = Topics::new(&config.bus.prefix);
    wait_for_topics(&config.bus, &shutdown).await;
    let mut shards = Shards::new(&config.database_url)?;
    tracing::info!("relay started");

    while !shutdown.is_cancelled() {
        if shards.due(config.rebalance_every) {
            if let Err(e) = shards.rebalance().await {
                tracing::warn!(error = %e, "relay lost its shard locks; reconnecting");
                shards.reset();
                pause(&shutdown, Duration::from_secs(1)).await;
                continue;
            }
            metrics.relay_shards_owned.store(
                shards.owned.len() as i64,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        if shards.owned.is_empty() {
            pause(&shutdown, config.rebalance_every).await;
            continue;
        }
        match relay_once(&config, &pool, &producer, &topics, &shards.list(), &metrics).await {
            Ok(0) => pause(&shutdown, config.idle_wait).await,
            Ok(_) => {}
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
    tracing::info!("relay stopped");
    Ok(())
}

/// One round: publish the oldest records of the owned shards. Returns how
/// many records were published and deleted.
async fn relay_once(
    config: &RelayConfig,
    pool: &Pool,
    producer: &Producer,
    topics: &Topics,
    shards: &[i32],
    metrics: &Metrics,
) -> anyhow::Result<usize> {
    let records = outbox::fetch(pool, shards, config.batch).await?;
    if records.is_empty() {
        return Ok(0);
    }
    let names: Vec<String> = records.iter().map(|r| topics.name(&r.topic)).collect();
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
    let mut published = Vec::with_capacity(records.len());
    let mut first_error = None;
    for (record, report) in records.iter().zip(reports) {
        match report {
            Ok(()) => published.push(record.id),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    outbox::delete(pool, &published).await?;
    Metrics::add(&metrics.outbox_published, published.len() as u64);
    if let Some(e) = first_error {
        let failed = records.len() - published.len();
        Metrics::add(&metrics.outbox_publish_errors, failed as u64);
        anyhow::bail!("{failed} records not acknowledged: {e}");
    }
    Ok(published.len())
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
