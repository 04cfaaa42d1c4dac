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
/// polls for a second at a time (the reports are handed over the moment
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

/// How long the report thread's poll blocks when nothing happens.
const POLL: Duration = Duration::from_secs(1);

/// Sends each delivery report to the `publish` call that waits for it.
struct Reports;

type Report = Result<(), KafkaError>;

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
                // Small linger: low latency at low load, full batches at high load.
                .set("linger.ms", "5")
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
    pub async fn publish(&self, records: &[Record<'_>]) -> Vec<Result<(), KafkaError>> {
        let mut reports = Vec::with_capacity(records.len());
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
                        reports.push(Pending::Sent(report));
                        break;
                    }
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                        base = back;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Err((e, _)) => {
                        reports.push(Pending::Refused(e));
                        break;
                    }
                }
            }
        }
        join_all(reports.into_iter().map(|pending| async move {
            match pending {
                Pending::Refused(e) => Err(e),
                Pending::Sent(report) => report.await.unwrap_or(Err(KafkaError::Canceled)),
            }
        }))
        .await
    }

    /// Waits until queued records are delivered (for shutdown).
    pub fn flush(&self, timeout: Duration) {
        let _ = self.inner.producer.flush(Timeout::After(timeout));
    }
}

/// A record handed to librdkafka, or refused before it got there.
enum Pending {
    Sent(oneshot::Receiver<Report>),
    Refused(KafkaError),
}
