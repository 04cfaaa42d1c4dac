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
///
/// Each kind of request goes once for every topic together: the committed
/// positions in one OffsetFetch, the high watermarks in one ListOffsets
/// (`offsets_for_times` with the latest offset as the time, what
/// `fetch_watermarks` asks one partition at a time), the low ones in another
/// only for partitions with nothing committed. Asked a partition at a
/// time, the watermarks were 112 ListOffsets a read (`{prefix}.deliveries`
/// and the 6 retry tiers, 8 partitions each, low and high): half of what
/// an idle Motor sent its broker (docs/BENCHMARKS.md, 2026-12-07 10:30).
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
    let mut partitions = TopicPartitionList::new();
    let mut read = Vec::with_capacity(topics.len());
    for topic in topics {
        let metadata = consumer.fetch_metadata(Some(topic), timeout)?;
        let Some(meta) = metadata.topics().iter().find(|t| t.name() == topic) else {
            continue;
        };
        for p in meta.partitions() {
            partitions.add_partition(topic, p.id());
        }
        read.push(topic.clone());
    }
    if read.is_empty() {
        return Ok(Vec::new());
    }
    let committed = consumer.committed_offsets(partitions.clone(), timeout)?;
    let high = asking(&partitions, Offset::End, |_| true);
    let high = answered(consumer.offsets_for_times(high, timeout)?)?;
    let uncommitted = asking(&committed, Offset::Beginning, |position| {
        !matches!(position, Offset::Offset(_))
    });
    let low = if uncommitted.count() == 0 {
        uncommitted
    } else {
        answered(consumer.offsets_for_times(uncommitted, timeout)?)?
    };
    let offset = |list: &TopicPartitionList, topic: &str, partition: i32| match list
        .find_partition(topic, partition)?
        .offset()
    {
        Offset::Offset(n) => Some(n),
        _ => None,
    };
    Ok(read
        .into_iter()
        .map(|topic| {
            let lag = partitions
                .elements_for_topic(&topic)
                .iter()
                .map(|element| {
                    let partition = element.partition();
                    let high = offset(&high, &topic, partition).unwrap_or(0);
                    let position = offset(&committed, &topic, partition)
                        .or_else(|| offset(&low, &topic, partition))
                        .unwrap_or(0);
                    (high - position).max(0)
                })
                .sum();
            (topic, lag)
        })
        .collect())
}

/// The partitions of `list` whose offset there `keeps`, each asking for
/// `offset` (the latest or the earliest).
fn asking(
    list: &TopicPartitionList,
    offset: Offset,
    keeps: impl Fn(Offset) -> bool,
) -> TopicPartitionList {
    let mut out = TopicPartitionList::new();
    for element in list.elements().iter().filter(|e| keeps(e.offset())) {
        out.add_partition_offset(element.topic(), element.partition(), offset)
            .expect("a logical offset is valid");
    }
    out
}

/// `list`, or the first partition's error in it (a partition the broker
/// could not answer for fails the read, as one watermark query did).
fn answered(list: TopicPartitionList) -> Result<TopicPartitionList, BusError> {
    for element in list.elements() {
        element.error()?;
    }
    Ok(list)
}
