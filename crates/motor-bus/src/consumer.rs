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
//!
//! A consumer that loses a broker connection stops fetching at once and is
//! replaced by a new one once the broker answers and its topics exist (see
//! `Link`): librdkafka must never fetch with topic ids a restarted broker
//! no longer knows.

use std::{
    future::Future,
    sync::{Arc, Mutex, OnceLock, Weak},
    time::{Duration, SystemTime},
};

use rdkafka::{
    client::{ClientContext, DefaultClientContext},
    config::RDKafkaLogLevel,
    consumer::{CommitMode, Consumer, ConsumerContext, StreamConsumer},
    error::KafkaError,
    message::{Headers, Message},
    types::RDKafkaErrorCode,
    ClientConfig, Offset, TopicPartitionList,
};
use tokio::sync::{mpsc, oneshot, Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::{offsets::Offsets, topics::ensure_named, BusConfig, BusError};

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
    /// How long the broker may hold a fetch while it has nothing new (it
    /// answers as soon as a record arrives): longer costs an idle broker
    /// less CPU, at some latency on brokers that poll.
    pub fetch_wait: Duration,
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
        // A consumer is only made once the broker answers and the topics it
        // reads exist (a broker that lost them gets them back here), so it
        // learns their current ids before it fetches.
        if !wait_for_broker(bus, &config, &shutdown).await {
            return Ok(());
        }
        let consumer = connect(bus, &config)?;
        let end = session(&consumer, &config, &due, &handle, &slots, &shutdown).await;
        let closed = close(consumer);
        match end? {
            SessionEnd::Shutdown => {
                // Leave the group cleanly if the broker lets us, soon.
                let _ = tokio::time::timeout(CLOSE_WAIT, closed).await;
                return Ok(());
            }
            SessionEnd::BrokerLost => {
                tracing::warn!(group = %config.group_id, "consumer lost a broker connection; a new one starts once the broker answers");
            }
            SessionEnd::Rebuild => {
                tracing::warn!(group = %config.group_id, "consumer stalled after broker trouble; starting a new one");
            }
        }
    }
}

/// How long a shutdown waits for the consumer to leave its group.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Closes a consumer on a thread of its own: closing one whose broker is
/// gone blocks until it can reach one again (or forever), and neither the
/// runtime nor its shutdown may wait for that. The answer fires once closed.
fn close(consumer: Arc<BusConsumer>) -> oneshot::Receiver<()> {
    let (done, closed) = oneshot::channel();
    consumer.context().link.set_closing();
    let spawned = std::thread::Builder::new()
        .name("motor-consumer-close".into())
        .spawn(move || {
            // A failure callback may hold the consumer for a moment; the last
            // reference must not be dropped on one of librdkafka's threads.
            let mut consumer = consumer;
            let consumer = loop {
                match Arc::try_unwrap(consumer) {
                    Ok(c) => break c,
                    Err(shared) => {
                        consumer = shared;
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            };
            drop(consumer);
            let _ = done.send(());
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start a thread to close a consumer; leaking it");
    }
    closed
}

/// Waits until the topics the consumer reads exist on a broker that answers
/// (creating the missing ones). `false`: shut down meanwhile.
async fn wait_for_broker(
    bus: &BusConfig,
    config: &ConsumerConfig,
    shutdown: &CancellationToken,
) -> bool {
    let mut wait = Duration::from_millis(200);
    loop {
        let attempt = tokio::select! {
            _ = shutdown.cancelled() => return false,
            r = ensure_named(bus, &config.topics) => r,
        };
        match attempt {
            Ok(()) => return true,
            Err(e) => {
                tracing::warn!(error = %e, group = %config.group_id, "broker not ready for a consumer yet; retrying");
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return false,
            _ = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(Duration::from_secs(5));
    }
}

/// A consumer that lost a broker connection must never fetch again.
///
/// librdkafka reconnects by itself and goes on fetching with the topic ids
/// it knew. A broker that forgot its topics (a restarted in-memory broker)
/// can answer such a fetch with a null topic id and leader hints, and
/// librdkafka 2.12 then looks the topic up in its metadata cache by a null
/// name and crashes the whole process (segfault in
/// `rd_kafka_metadata_cache_find` under `rd_kafka_metadata_update_op`).
/// So the first failed connection pauses every assigned partition, from the
/// broker thread that failed and before it returns to librdkafka (so before
/// that thread can reconnect), and ends the session; a new consumer is made
/// once the broker answers and the topics exist again. Against a broker that
/// keeps its topics this costs one rebalance.
#[derive(Default)]
struct Link {
    state: Mutex<LinkState>,
    changed: Notify,
    consumer: OnceLock<Weak<BusConsumer>>,
}

#[derive(Default)]
struct LinkState {
    lost: bool,
    closing: bool,
}

impl Link {
    fn state(&self) -> std::sync::MutexGuard<'_, LinkState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A broker connection failed: stop fetching, and tell the session.
    fn broker_failed(&self) {
        {
            let mut state = self.state();
            if state.lost || state.closing {
                return;
            }
            state.lost = true;
            if let Some(consumer) = self.consumer.get().and_then(Weak::upgrade) {
                // Both calls wait for librdkafka's main thread, which never
                // waits for a broker thread while the consumer is open.
                match consumer.assignment() {
                    Ok(assignment) => {
                        if let Err(e) = consumer.pause(&assignment) {
                            tracing::warn!(error = %e, "cannot pause a consumer that lost its broker");
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot read the assignment of a consumer that lost its broker")
                    }
                }
            }
        }
        self.changed.notify_one();
    }

    fn is_lost(&self) -> bool {
        self.state().lost
    }

    fn set_closing(&self) {
        self.state().closing = true;
    }
}

/// The consumer's context: librdkafka's logs and errors go where they went,
/// and a failed broker connection (logged as `FAIL` at INFO or above — an
/// idle connection that the broker closes is logged below) is reported.
struct BusContext {
    link: Link,
}

impl ClientContext for BusContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        if fac == "FAIL" {
            self.link.broker_failed();
        }
        DefaultClientContext.log(level, fac, log_message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if is_connection_loss(&error) {
            self.link.broker_failed();
        }
        DefaultClientContext.error(error, reason);
    }
}

impl ConsumerContext for BusContext {}

fn is_connection_loss(error: &KafkaError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(RDKafkaErrorCode::BrokerTransportFailure | RDKafkaErrorCode::AllBrokersDown)
    )
}

type BusConsumer = StreamConsumer<BusContext>;

fn connect(bus: &BusConfig, config: &ConsumerConfig) -> Result<Arc<BusConsumer>, BusError> {
    let consumer: BusConsumer = ClientConfig::new()
        .set("bootstrap.servers", &bus.brokers)
        .set("group.id", &config.group_id)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        // Tansu answers a JoinGroup after about half the session timeout.
        .set("session.timeout.ms", "6000")
        // A third of the session (Kafka's advice): a member learns of a
        // rebalance within 2 s. Each heartbeat costs an idle Tansu about
        // as much as a fetch (docs/BENCHMARKS.md, 2026-12-02).
        .set("heartbeat.interval.ms", "2000")
        .set(
            "fetch.wait.max.ms",
            config.fetch_wait.as_millis().to_string(),
        )
        // Failed connections are logged at INFO and WARNING.
        .set_log_level(RDKafkaLogLevel::Info)
        .create_with_context(BusContext {
            link: Link::default(),
        })?;
    let consumer = Arc::new(consumer);
    let _ = consumer
        .context()
        .link
        .consumer
        .set(Arc::downgrade(&consumer));
    let topics: Vec<&str> = config.topics.iter().map(String::as_str).collect();
    if let Err(e) = consumer.subscribe(&topics) {
        close(consumer);
        return Err(e.into());
    }
    Ok(consumer)
}

enum SessionEnd {
    Shutdown,
    /// A broker connection failed (see [`Link`]).
    BrokerLost,
    /// The broker failed and the consumer has not received anything since:
    /// a broker that lost its group state can leave librdkafka waiting in a
    /// rebalance forever, so a new consumer joins afresh.
    Rebuild,
}

/// How long a consumer may stay silent after broker trouble before it is
/// replaced.
const STALL_AFTER_TROUBLE: Duration = Duration::from_secs(20);

async fn session<D, H, F>(
    consumer: &BusConsumer,
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
    let link = &consumer.context().link;

    loop {
        if link.is_lost() {
            commit(consumer, &mut offsets);
            return Ok(SessionEnd::BrokerLost);
        }
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
                // Never undo the pause of a consumer that lost its broker.
                let state = link.state();
                if state.lost {
                    drop(state);
                    commit(consumer, &mut offsets);
                    return Ok(SessionEnd::BrokerLost);
                }
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
            // Checked at the top of the loop.
            _ = link.changed.notified() => {}
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
                        if is_connection_loss(&e) {
                            link.broker_failed();
                        }
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

fn commit(consumer: &BusConsumer, offsets: &mut Offsets) {
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
