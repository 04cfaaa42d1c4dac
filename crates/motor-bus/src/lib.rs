//! Motor's Kafka bus: topic names under the configured prefix, topic
//! creation at start-up and the idempotent producer the relay publishes
//! through. Nothing here knows about Postgres; the relay joins the two.

pub mod consumer;
pub mod lag;
pub mod offsets;
pub mod producer;
pub mod topics;

pub use producer::{Producer, Record};
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
