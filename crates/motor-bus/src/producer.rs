//! The idempotent producer. Records of one key go to one partition
//! (murmur2, as Java clients do) and leave in the order they were sent;
//! `publish` returns each record's delivery report so the caller deletes
//! from the outbox only what the broker acknowledged.

use std::time::Duration;

use futures::future::join_all;
use rdkafka::{
    config::ClientConfig,
    error::{KafkaError, RDKafkaErrorCode},
    message::{Header, OwnedHeaders},
    producer::{FutureProducer, FutureRecord, Producer as _},
    util::Timeout,
};

use crate::{BusConfig, BusError};

/// A record to publish.
#[derive(Debug, Clone)]
pub struct Record<'a> {
    pub topic: &'a str,
    pub key: &'a str,
    pub payload: &'a [u8],
    pub headers: &'a [(String, String)],
}

#[derive(Clone)]
pub struct Producer {
    inner: FutureProducer,
}

impl Producer {
    pub fn new(config: &BusConfig) -> Result<Self, BusError> {
        let inner = ClientConfig::new()
            .set("bootstrap.servers", &config.brokers)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("partitioner", "murmur2_random")
            // Small linger: low latency at low load, full batches at high load.
            .set("linger.ms", "5")
            .set("batch.num.messages", "10000")
            .set("message.timeout.ms", "15000")
            .create()?;
        Ok(Self { inner })
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
            let mut future = FutureRecord::to(record.topic)
                .key(record.key)
                .payload(record.payload)
                .headers(headers);
            // A full local queue is backpressure: wait for reports, then retry.
            loop {
                match self.inner.send_result(future) {
                    Ok(delivery) => {
                        reports.push(Pending::Sent(delivery));
                        break;
                    }
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                        future = back;
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
                Pending::Sent(delivery) => match delivery.await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err((e, _))) => Err(e),
                    Err(_cancelled) => Err(KafkaError::Canceled),
                },
            }
        }))
        .await
    }

    /// Waits until queued records are delivered (for shutdown).
    pub fn flush(&self, timeout: Duration) {
        let _ = self.inner.flush(Timeout::After(timeout));
    }
}

/// A record handed to librdkafka, or refused before it got there.
enum Pending {
    Sent(rdkafka::producer::DeliveryFuture),
    Refused(KafkaError),
}
