//! A consumer that handles many records of a partition at once, holds each
//! until it is due, and commits only the contiguous finished prefix.
//!
//! Records are handed to the handler concurrently (bounded by
//! `max_in_flight`); a record whose due time lies ahead waits on a timer
//! while later, already-due records of its partition go ahead. When the
//! bound is reached the assigned partitions are paused — polling goes on, so
//! the group membership (`max.poll.interval.ms`) survives — and resumed as
//! soon as a slot frees. Ordering between records is not this module's job:
//! the delivery engine's claims in Postgres decide what may run.

use std::{
    future::Future,
    sync::Arc,
    time::{Duration, SystemTime},
};

use rdkafka::{
    consumer::{CommitMode, Consumer, StreamConsumer},
    message::{Headers, Message},
    ClientConfig, Offset, TopicPartitionList,
};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::{offsets::Offsets, BusConfig, BusError};

/// A record as the handler sees it.
#[derive(Debug, Clone)]
pub struct InRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Vec<u8>,
    pub payload: Vec<u8>,
    pub headers: Vec<(String, Vec<u8>)>,
}

impl InRecord {
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_slice())
    }
}

#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    pub group_id: String,
    pub topics: Vec<String>,
    /// Records handed out and not finished (waiting or running), at most.
    pub max_in_flight: usize,
    /// How often finished prefixes are committed.
    pub commit_every: Duration,
}

/// Consumes until `shutdown`, calling `handle` for every record once it is
/// due (`due` reads a record's due time; `None` = now). `handle` must not
/// fail: whatever it decides is its own business; when it returns, the
/// record counts as finished.
pub async fn run<D, H, F>(
    bus: &BusConfig,
    config: ConsumerConfig,
    due: D,
    handle: H,
    shutdown: CancellationToken,
) -> Result<(), BusError>
where
    D: Fn(&InRecord) -> Option<SystemTime> + Send + Sync + 'static,
    H: Fn(InRecord) -> F + Send + Sync + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let handle = Arc::new(handle);
    let due = Arc::new(due);
    // Shared by every session: records still held by an old one count.
    let slots = Arc::new(Semaphore::new(config.max_in_flight));
    loop {
        let consumer = connect(bus, &config)?;
        let end = session(&consumer, &config, &due, &handle, &slots, &shutdown).await;
        // Closing a consumer whose group state the broker lost can block;
        // let it do so away from the runtime.
        tokio::task::spawn_blocking(move || drop(consumer));
        match end? {
            SessionEnd::Shutdown => return Ok(()),
            SessionEnd::Rebuild => {
                tracing::warn!(group = %config.group_id, "consumer stalled after the broker came back; starting a new one");
            }
        }
    }
}

fn connect(bus: &BusConfig, config: &ConsumerConfig) -> Result<StreamConsumer, BusError> {
    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", &bus.brokers)
        .set("group.id", &config.group_id)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        // Tansu answers a JoinGroup after about half the session timeout.
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "1000")
        .set("fetch.wait.max.ms", "10")
        .create()?;
    let topics: Vec<&str> = config.topics.iter().map(String::as_str).collect();
    consumer.subscribe(&topics)?;
    Ok(consumer)
}

enum SessionEnd {
    Shutdown,
    /// The broker failed and the consumer has not received anything since:
    /// a broker that lost its group state can leave librdkafka waiting in a
    /// rebalance forever, so a new consumer joins afresh.
    Rebuild,
}

/// How long a consumer may stay silent after broker trouble before it is
/// replaced.
const STALL_AFTER_TROUBLE: Duration = Duration::from_secs(20);

async fn session<D, H, F>(
    consumer: &StreamConsumer,
    config: &ConsumerConfig,
    due: &Arc<D>,
    handle: &Arc<H>,
    slots: &Arc<Semaphore>,
    shutdown: &CancellationToken,
) -> Result<SessionEnd, BusError>
where
    D: Fn(&InRecord) -> Option<SystemTime> + Send + Sync + 'static,
    H: Fn(InRecord) -> F + Send + Sync + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let mut trouble_since: Option<tokio::time::Instant> = None;
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(String, i32, i64)>();
    let mut offsets = Offsets::default();
    let mut commit_tick = tokio::time::interval(config.commit_every);
    let mut paused: Option<TopicPartitionList> = None;

    loop {
        // A free slot first: a record is only taken when it can be held.
        let permit = match slots.clone().try_acquire_owned() {
            Ok(permit) => Some(permit),
            Err(_) => {
                if paused.is_none() {
                    let assignment = consumer.assignment()?;
                    consumer.pause(&assignment)?;
                    paused = Some(assignment);
                }
                None
            }
        };
        if permit.is_some() {
            if let Some(assignment) = paused.take() {
                // Only what is still assigned and was paused here.
                let current = consumer.assignment()?;
                let mut resume = TopicPartitionList::new();
                for e in assignment.elements() {
                    if current.find_partition(e.topic(), e.partition()).is_some() {
                        resume.add_partition(e.topic(), e.partition());
                    }
                }
                consumer.resume(&resume)?;
            }
        }

        tokio::select! {
            _ = shutdown.cancelled() => {
                commit(consumer, &mut offsets);
                return Ok(SessionEnd::Shutdown);
            }
            Some((topic, partition, offset)) = done_rx.recv() => {
                offsets.finish(&topic, partition, offset);
                // The permit of that record was released by its task.
                drop(permit);
            }
            _ = commit_tick.tick() => {
                commit(consumer, &mut offsets);
                drop(permit);
                if trouble_since.is_some_and(|t| t.elapsed() > STALL_AFTER_TROUBLE) {
                    return Ok(SessionEnd::Rebuild);
                }
            }
            // Polling goes on while paused (paused partitions yield nothing,
            // so this only keeps the group membership alive); a record that
            // raced the pause still runs, one over the bound.
            message = consumer.recv() => {
                let message = match message {
                    Ok(m) => m,
                    Err(e) => {
                        tracing::warn!(error = %e, "consumer error");
                        trouble_since.get_or_insert_with(tokio::time::Instant::now);
                        continue;
                    }
                };
                trouble_since = None;
                let record = InRecord {
                    topic: message.topic().to_owned(),
                    partition: message.partition(),
                    offset: message.offset(),
                    key: message.key().unwrap_or_default().to_vec(),
                    payload: message.payload().unwrap_or_default().to_vec(),
                    headers: message
                        .headers()
                        .map(|hs| {
                            hs.iter()
                                .map(|h| (h.key.to_owned(), h.value.unwrap_or_default().to_vec()))
                                .collect()
                        })
                        .unwrap_or_default(),
                };
                offsets.start(&record.topic, record.partition, record.offset);
                let wait = due(&record)
                    .and_then(|at| at.duration_since(SystemTime::now()).ok())
                    .unwrap_or(Duration::ZERO);
                let (handle, done_tx, shutdown) = (handle.clone(), done_tx.clone(), shutdown.clone());
                tokio::spawn(async move {
                    let _permit = permit;
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(wait) => {}
                    }
                    let id = (record.topic.clone(), record.partition, record.offset);
                    handle(record).await;
                    let _ = done_tx.send(id);
                });
            }
        }
    }
}

fn commit(consumer: &StreamConsumer, offsets: &mut Offsets) {
    let positions = offsets.committable();
    if positions.is_empty() {
        return;
    }
    let mut tpl = TopicPartitionList::new();
    for (topic, partition, position) in &positions {
        if tpl
            .add_partition_offset(topic, *partition, Offset::Offset(*position))
            .is_err()
        {
            continue;
        }
    }
    // A partition revoked meanwhile refuses the commit; its new owner
    // re-reads from the last committed position, and claims drop duplicates.
    if let Err(e) = consumer.commit(&tpl, CommitMode::Async) {
        tracing::debug!(error = %e, "offset commit refused");
    }
}
