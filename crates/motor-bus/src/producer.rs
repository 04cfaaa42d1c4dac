//! The idempotent producer. Records of one key go to one partition
//! (murmur2, as Java clients do) and leave in the order they were sent;
//! `publish` returns each record's delivery report so the caller deletes
//! from the outbox only what the broker acknowledged.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use futures::future::join_all;
use rdkafka::{
    client::ClientContext,
    config::{ClientConfig, FromClientConfigAndContext},
    error::{KafkaError, RDKafkaErrorCode},
    message::{DeliveryResult, Header, OwnedHeaders},
    producer::{BaseProducer, BaseRecord, Producer as _, ProducerContext},
    util::Timeout,
};
use tokio::sync::oneshot;

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
    producer: Arc<BaseProducer<Reports>>,
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

/// Sends each delivery report to the `publish` call that waits for it.
struct Reports;

/// A record's delivery report: `Ok` when the broker stored it.
pub type Report = Result<(), KafkaError>;

impl ClientContext for Reports {}

impl ProducerContext for Reports {
    type DeliveryOpaque = Box<oneshot::Sender<Report>>;

    fn delivery(&self, result: &DeliveryResult<'_>, waiting: Self::DeliveryOpaque) {
        let report = match result {
            Ok(_) => Ok(()),
            Err((e, _)) => Err(e.clone()),
        };
        let _ = waiting.send(report);
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
            Reports,
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
        let mut pending = Vec::with_capacity(records.len());
        for record in records {
            let mut headers = OwnedHeaders::new_with_capacity(record.headers.len());
            for (key, value) in record.headers {
                headers = headers.insert(Header {
                    key,
                    value: Some(value.as_bytes()),
                });
            }
            let (sent, report) = oneshot::channel();
            let mut base = BaseRecord::with_opaque_to(record.topic, Box::new(sent))
                .key(record.key)
                .payload(record.payload)
                .headers(headers);
            // A full local queue is backpressure: wait for reports, then retry.
            loop {
                match self.inner.producer.send(base) {
                    Ok(()) => {
                        pending.push(Pending::Sent(report));
                        break;
                    }
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                        base = back;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Err((e, _)) => {
                        pending.push(Pending::Refused(e));
                        break;
                    }
                }
            }
        }
        Delivery { pending }
    }

    /// Waits until queued records are delivered (for shutdown).
    pub fn flush(&self, timeout: Duration) {
        let _ = self.inner.producer.flush(Timeout::After(timeout));
    }
}

/// The delivery reports of records handed over by [`Producer::enqueue`].
#[must_use = "records are acknowledged only when their reports are read"]
pub struct Delivery {
    pending: Vec<Pending>,
}

impl Delivery {
    /// One entry per record, in their order: `Ok` when the broker stored it.
    pub async fn reports(self) -> Vec<Report> {
        join_all(self.pending.into_iter().map(|pending| async move {
            match pending {
                Pending::Refused(e) => Err(e),
                Pending::Sent(report) => report.await.unwrap_or(Err(KafkaError::Canceled)),
            }
        }))
        .await
    }
}

/// A record handed to librdkafka, or refused before it got there.
enum Pending {
    Sent(oneshot::Receiver<Report>),
    Refused(KafkaError),
}
