//! Motor's Kafka bus: every Kafka client Motor makes, and nothing else —
//! no Postgres (the relay and the dispatcher join the two).
//!
//! Modules:
//! - `topics`: topic names under the configured prefix (`{prefix}.events`,
//!   `.deliveries`, `.retry.*`, `.dlq`) and their creation at start-up.
//! - `producer`: the idempotent producer the relay publishes through; each
//!   record's delivery report comes back to the caller.
//! - `consumer`: a consumer group member that handles many records of a
//!   partition at once, holds each until it is due, and commits only the
//!   contiguous finished prefix (`offsets`); it rebuilds itself after
//!   broker trouble.
//! - `offsets`: that prefix, as a pure structure with property tests.
//! - `lag`: consumer-group lag per topic, for the metrics sampler.
//!
//! Neighbours: `motor-engine` (relay, dispatch, sampler) uses it; it depends
//! only on `motor-domain` and rdkafka.

pub mod consumer;
pub mod lag;
pub mod offsets;
pub mod producer;
pub mod topics;

pub use producer::{Delivery, Producer, Record, Report};
pub use topics::Topics;

/// Settings shared by every Kafka client Motor makes.
#[derive(Debug, Clone)]
pub struct BusConfig {
    pub brokers: String,
    pub prefix: String,
    pub partitions: i32,
    pub replication: i32,
}

#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("kafka: {0}")]
    Kafka(#[from] rdkafka::error::KafkaError),
    #[error("creating topic {topic}: {reason}")]
    CreateTopic { topic: String, reason: String },
    #[error("starting the producer's report thread: {0}")]
    Thread(String),
}
