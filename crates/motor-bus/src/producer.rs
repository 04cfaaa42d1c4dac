//! The idempotent producer. Records of one key go to one partition
//! (murmur2, as Java clients do) and leave in the order they were sent;
//! `publish` returns each record's delivery report so the caller deletes
//! from the outbox only what the broker acknowledged.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, OnceLock,
    },
    time::Duration,
};

use rdkafka::{
    client::ClientContext,
    config::{ClientConfig, FromClientConfigAndContext},
    error::{KafkaError, RDKafkaErrorCode},
    message::{DeliveryResult, Header, OwnedHeaders},
    producer::{BaseProducer, BaseRecord, Producer as _, ProducerContext},
    util::Timeout,
};
use tokio::sync::Notify;

use crate::{BusConfig, BusError};

/// A record to publish.
#[derive(Debug, Clone)]
pub struct Record<'a> {
    pub topic: &'a str,
    pub key: &'a str,
    pub payload: &'a [u8],
    pub headers: &'a [(String, String)],
}

/// librdkafka's producer with one thread of ours serving its delivery
/// reports.
///
/// Not rdkafka's `FutureProducer`: its thread polls with a 100 ms timeout,
/// and rdkafka turns the last fraction of a millisecond of each poll into
/// a zero timeout, so an idle producer spins ~0.6 % of a core on that. Ours
/// polls for [`POLL`] at a time (the reports are handed over the moment
/// they come, whatever the timeout).
#[derive(Clone)]
pub struct Producer {
    inner: Arc<Polled>,
}

struct Polled {
    producer: Arc<BaseProducer<Reporter>>,
    stop: Arc<AtomicBool>,
}

impl Drop for Polled {
    fn drop(&mut self) {
        // The thread ends within a poll and drops its handle last; rdkafka
        // then purges what is still queued (`flush` first to keep it).
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// How long the report thread's poll blocks when nothing happens. Each
/// poll ends in a spin of up to a millisecond (see [`Producer`]): at a
/// second it cost an idle Motor 0.9 ms of CPU a second, 15 % of its idle
/// (docs/BENCHMARKS.md, "Low-rate CPU", 2026-12-04 14:25); at ten, a
/// tenth of that. A dropped producer's thread, connections and purge wait
/// out the poll under way.
const POLL: Duration = Duration::from_secs(10);

/// Hands each delivery report to its record's place in its call's
/// [`Reports`].
struct Reporter;

/// A record's delivery report: `Ok` when the broker stored it.
pub type Report = Result<(), KafkaError>;

impl ClientContext for Reporter {}

impl ProducerContext for Reporter {
    type DeliveryOpaque = Box<Slot>;

    fn delivery(&self, result: &DeliveryResult<'_>, mut slot: Self::DeliveryOpaque) {
        slot.report = Some(match result {
            Ok(_) => Ok(()),
            Err((e, _)) => Err(e.clone()),
        });
        // Dropped here: the slot hands its report over (`Slot::drop`).
    }
}

/// The reports of the records one [`Producer::enqueue`] handed over, in
/// their order, and one wake-up of its caller once the last is in.
///
/// Why one per call, not a channel per record: librdkafka sends a
/// produce request per partition (confluentinc/librdkafka#1700) and
/// reports each response apart, so a relay round over five partitions
/// woke its task up to five times, each time a tokio worker woken from
/// the report thread. At 200 events/s Motor's threads switched 12.7 times
/// an event, 11.2 with one wake-up a call (docs/BENCHMARKS.md, "Low-rate
/// CPU", 2026-12-07 14:49).
struct Reports {
    reports: Box<[OnceLock<Report>]>,
    /// Records whose report is still to come, plus one while the call is
    /// still handing records over: whoever brings it to zero wakes the
    /// caller.
    remaining: AtomicUsize,
    /// Notified once, by that last one (a permit kept if the caller is not
    /// waiting yet).
    done: Notify,
}

impl Reports {
    /// One report fewer to wait for; the last wakes the caller.
    fn arrived(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.notify_one();
        }
    }
}

/// One record's place in its call's [`Reports`]. It hands its report over
/// when dropped, whichever way that happens: after librdkafka's report,
/// with the record refused by `send`, or with the record dropped unsent
/// (a producer torn down: `KafkaError::Canceled`, as a dropped channel
/// answered before).
struct Slot {
    reports: Arc<Reports>,
    index: usize,
    report: Option<Report>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let report = self.report.take().unwrap_or(Err(KafkaError::Canceled));
        let _ = self.reports.reports[self.index].set(report);
        self.reports.arrived();
    }
}

impl Producer {
    pub fn new(config: &BusConfig) -> Result<Self, BusError> {
        let producer = BaseProducer::from_config_and_context(
            ClientConfig::new()
                .set("bootstrap.servers", &config.brokers)
                .set("enable.idempotence", "true")
                .set("acks", "all")
                .set("partitioner", "murmur2_random")
                // The relay hands over whole rounds and does not wait for
                // one to be acknowledged before the next, so a linger only
                // delays: 1 ms (5 before, p50 +8 ms to the consumer). A
                // backlog still leaves in full batches (a round at once).
                .set("linger.ms", "1")
                .set("batch.num.messages", "10000")
                .set("message.timeout.ms", "15000"),
            Reporter,
        )?;
        let producer = Arc::new(producer);
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (producer, stop) = (producer.clone(), stop.clone());
            std::thread::Builder::new()
                .name("motor-producer".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        producer.poll(POLL);
                    }
                })
                .map_err(|e| BusError::Thread(e.to_string()))?;
        }
        Ok(Self {
            inner: Arc::new(Polled { producer, stop }),
        })
    }

    /// Publishes records in order and waits for every delivery report. The
    /// answer has one entry per record: `Ok` when the broker stored it.
    pub async fn publish(&self, records: &[Record<'_>]) -> Vec<Report> {
        self.enqueue(records).await.reports().await
    }

    /// Hands records to librdkafka in order and returns at once (it waits
    /// only while librdkafka's queue is full); their reports come with
    /// [`Delivery::reports`]. Records enqueued later leave after these, on
    /// the same partition, even while these are still unacknowledged.
    pub async fn enqueue(&self, records: &[Record<'_>]) -> Delivery {
        let reports = Arc::new(Reports {
            reports: (0..records.len()).map(|_| OnceLock::new()).collect(),
            // This call's own share, given up once every record is handed
            // over: no report can wake the caller before that.
            remaining: AtomicUsize::new(records.len() + 1),
            done: Notify::new(),
        });
        for (index, record) in records.iter().enumerate() {
            let mut headers = OwnedHeaders::new_with_capacity(record.headers.len());
            for (key, value) in record.headers {
                headers = headers.insert(Header {
                    key,
                    value: Some(value.as_bytes()),
                });
            }
            let slot = Box::new(Slot {
                reports: reports.clone(),
                index,
                report: None,
            });
            let mut base = BaseRecord::with_opaque_to(record.topic, slot)
                .key(record.key)
                .payload(record.payload)
                .headers(headers);
            // A full local queue is backpressure: wait for reports, then retry.
            loop {
                match self.inner.producer.send(base) {
                    Ok(()) => break,
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                        base = back;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Err((e, mut back)) => {
                        // Refused before librdkafka took it: its slot,
                        // dropped with the record, reports why.
                        back.delivery_opaque.report = Some(Err(e));
                        break;
                    }
                }
            }
        }
        reports.arrived();
        Delivery { reports }
    }

    /// Waits until queued records are delivered (for shutdown).
    pub fn flush(&self, timeout: Duration) {
        let _ = self.inner.producer.flush(Timeout::After(timeout));
    }
}

/// The delivery reports of records handed over by [`Producer::enqueue`].
#[must_use = "records are acknowledged only when their reports are read"]
pub struct Delivery {
    reports: Arc<Reports>,
}

impl Delivery {
    /// One entry per record, in their order: `Ok` when the broker stored it.
    pub async fn reports(self) -> Vec<Report> {
        // Every slot has reported (the broker's answer, a refusal, or
        // `Canceled` for a record dropped unsent) before the last wakes this.
        self.reports.done.notified().await;
        self.reports
            .reports
            .iter()
            .map(|report| report.get().cloned().unwrap_or(Err(KafkaError::Canceled)))
            .collect()
    }
}
