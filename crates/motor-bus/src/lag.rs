//! Consumer lag: per topic, how many records a consumer group has not
//! committed yet (the high watermark minus the committed position, summed
//! over partitions). Read by the metrics sampler with a short-lived client
//! that never fetches records, so it cannot trip the restarted-broker trap
//! of `consumer`.

use std::time::Duration;

use rdkafka::{
    consumer::{BaseConsumer, Consumer},
    ClientConfig, Offset, TopicPartitionList,
};

use crate::{BusConfig, BusError};

/// Lag of `group` on each of `topics`: `(topic, records)`. A partition with
/// nothing committed counts from its low watermark. Blocking: call it from
/// `spawn_blocking`.
pub fn consumer_lag(
    config: &BusConfig,
    group: &str,
    topics: &[String],
    timeout: Duration,
) -> Result<Vec<(String, i64)>, BusError> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &config.brokers)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("socket.timeout.ms", timeout.as_millis().to_string())
        .create()?;
    let mut out = Vec::with_capacity(topics.len());
    for topic in topics {
        let metadata = consumer.fetch_metadata(Some(topic), timeout)?;
        let Some(meta) = metadata.topics().iter().find(|t| t.name() == topic) else {
            continue;
        };
        let mut list = TopicPartitionList::new();
        for p in meta.partitions() {
            list.add_partition(topic, p.id());
        }
        let committed = consumer.committed_offsets(list, timeout)?;
        let mut lag = 0i64;
        for element in committed.elements() {
            let (low, high) = consumer.fetch_watermarks(topic, element.partition(), timeout)?;
            let position = match element.offset() {
                Offset::Offset(n) => n,
                _ => low,
            };
            lag += (high - position).max(0);
        }
        out.push((topic.clone(), lag));
    }
    Ok(out)
}
