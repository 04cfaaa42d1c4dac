//! Direct consumption: read `{prefix}.events` with a plain Kafka consumer,
//! no Motor code involved. Each record's key is the instance id, its value
//! the envelope (the same bytes as a webhook body), its headers carry
//! `event_id` and `seq`. Per instance, records arrive in seq order; dedupe by
//! event_id (delivery is at least once).
//!
//!   cargo run --example consume -- [--seconds N] [--instance ID]
//!
//! Reads from the beginning for N seconds (default 5) and prints each record
//! (only those of one instance with --instance).

use std::time::{Duration, Instant};

use rdkafka::{
    consumer::{BaseConsumer, Consumer},
    message::{Headers, Message},
    ClientConfig, Offset, TopicPartitionList,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let brokers = std::env::var("MOTOR_KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let prefix = std::env::var("MOTOR_TOPIC_PREFIX").unwrap_or_else(|_| "motor".into());
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let seconds: u64 = flag("--seconds").and_then(|s| s.parse().ok()).unwrap_or(5);
    let instance = flag("--instance");
    let topic = format!("{prefix}.events");

    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &brokers)
        .set("group.id", "motor-example-consume")
        .set("enable.auto.commit", "false")
        .create()?;
    let metadata = consumer.fetch_metadata(Some(&topic), Duration::from_secs(10))?;
    let mut assignment = TopicPartitionList::new();
    for partition in metadata.topics()[0].partitions() {
        assignment.add_partition_offset(&topic, partition.id(), Offset::Beginning)?;
    }
    consumer.assign(&assignment)?;

    let until = Instant::now() + Duration::from_secs(seconds);
    let mut count = 0;
    while Instant::now() < until {
        let Some(message) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        let message = message?;
        let key = String::from_utf8_lossy(message.key().unwrap_or_default()).into_owned();
        if instance.as_ref().is_some_and(|i| *i != key) {
            continue;
        }
        let seq = message
            .headers()
            .and_then(|h| h.iter().find(|h| h.key == "seq"))
            .and_then(|h| h.value)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default();
        println!(
            "{topic}[{}]@{} key={key} seq={seq} {}",
            message.partition(),
            message.offset(),
            String::from_utf8_lossy(message.payload().unwrap_or_default()),
        );
        count += 1;
    }
    eprintln!("{count} records from {topic}");
    Ok(())
}
