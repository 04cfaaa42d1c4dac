//! Consumer lag: per topic, how many records a consumer group has not
//! committed yet (the high watermark minus the committed position, summed
//! over partitions). Read by the metrics sampler through a [`LagReader`]
//! per group, whose client never fetches records, so it cannot trip the
//! restarted-broker trap of `consumer`.

use std::time::Duration;

use rdkafka::{
    consumer::{BaseConsumer, Consumer},
    ClientConfig, Offset, TopicPartitionList,
};

use crate::{BusConfig, BusError};

/// One group's lag, read again and again through one kept client.
///
/// A client made for each read (as the sampler did until 2026-12-07) was
/// a fifth of an idle Motor's CPU: each read started librdkafka's threads,
/// connected, asked for the broker's versions and the group's coordinator,
/// then closed it all again, two groups every 15 s (1.25 ms of CPU a
/// second of 6, docs/BENCHMARKS.md, 2026-12-07 20:08). A kept client only
/// wakes its threads for their timers. It is made at the first read and
/// after a read that failed (the next read starts from a new connection,
/// as the short-lived one did).
pub struct LagReader {
    config: BusConfig,
    group: String,
    client: Option<BaseConsumer>,
    made: u64,
}

impl LagReader {
    /// A reader of `group`'s lag; nothing is connected before [`Self::read`].
    pub fn new(config: &BusConfig, group: &str) -> Self {
        Self {
            config: config.clone(),
            group: group.to_owned(),
            client: None,
            made: 0,
        }
    }

    /// The group this reader reads.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// How many clients it has made so far (one per read that followed a
    /// failed one, and the first).
    pub fn clients_made(&self) -> u64 {
        self.made
    }

    /// The group's lag on each of `topics`: `(topic, records)`; a
    /// partition with nothing committed counts from its low watermark.
    /// Blocking: call it from `spawn_blocking`. A failed read drops the
    /// client.
    pub fn read(
        &mut self,
        topics: &[String],
        timeout: Duration,
    ) -> Result<Vec<(String, i64)>, BusError> {
        let client = match self.client.take() {
            Some(client) => client,
            None => {
                self.made += 1;
                client(&self.config, &self.group, timeout)?
            }
        };
        let lag = lag_of(&client, topics, timeout)?;
        self.client = Some(client);
        Ok(lag)
    }
}

/// A client for `group`'s committed positions that never joins the group
/// nor fetches.
fn client(config: &BusConfig, group: &str, timeout: Duration) -> Result<BaseConsumer, BusError> {
    Ok(ClientConfig::new()
        .set("bootstrap.servers", &config.brokers)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("socket.timeout.ms", timeout.as_millis().to_string())
        .create()?)
}

/// Lag, through `consumer`, of its group on each of `topics`.
///
/// Each kind of request goes once for every topic together: the committed
/// positions in one OffsetFetch, the high watermarks in one ListOffsets
/// (`offsets_for_times` with the latest offset as the time, what
/// `fetch_watermarks` asks one partition at a time), the low ones in another
/// only for partitions with nothing committed. Asked a partition at a
/// time, the watermarks were 112 ListOffsets a read (`{prefix}.deliveries`
/// and the 6 retry tiers, 8 partitions each, low and high): half of what
/// an idle Motor sent its broker (docs/BENCHMARKS.md, 2026-12-07 10:30).
fn lag_of(
    consumer: &BaseConsumer,
    topics: &[String],
    timeout: Duration,
) -> Result<Vec<(String, i64)>, BusError> {
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
