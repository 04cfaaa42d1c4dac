//! Consumer lag against a real Kafka-protocol broker (start one with
//! `scripts/broker`): per topic, the records a group has not committed,
//! counted from the low watermark where it committed nothing.

mod common;

use std::time::Duration;

use motor_bus::{lag::consumer_lag, topics::ensure_named, BusConfig, Producer, Record};
use rdkafka::{
    consumer::{BaseConsumer, CommitMode, Consumer},
    ClientConfig, Offset, TopicPartitionList,
};

/// `n` records to `topic`, spread over its partitions by key.
async fn produce(bus: &BusConfig, topic: &str, n: usize) {
    let producer = Producer::new(bus).unwrap();
    let keys: Vec<String> = (0..n).map(|i| format!("key-{i}")).collect();
    let batch: Vec<Record<'_>> = keys
        .iter()
        .map(|key| Record {
            topic,
            key,
            payload: b"x",
            headers: &[],
        })
        .collect();
    // One record a request: the development broker (Tansu) answers the
    // latest offset of a partition as its last batch's first offset + 1,
    // so a record batched behind another would not count.
    for record in batch.chunks(1) {
        for report in producer.publish(record).await {
            report.unwrap();
        }
    }
}

/// The high watermark of each of `topic`'s 4 partitions, read one
/// partition at a time.
fn highs(bus: &BusConfig, topic: &str) -> [i64; 4] {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &bus.brokers)
        .create()
        .unwrap();
    std::array::from_fn(|p| {
        consumer
            .fetch_watermarks(topic, p as i32, Duration::from_secs(5))
            .unwrap()
            .1
    })
}

/// Commits `offset` for `group` on `topic`'s `partition`.
fn commit(bus: &BusConfig, group: &str, topic: &str, partition: i32, offset: i64) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &bus.brokers)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition, Offset::Offset(offset))
        .unwrap();
    consumer.commit(&tpl, CommitMode::Sync).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lag_is_what_the_group_left_uncommitted_on_each_topic() {
    let bus = common::bus("tl", 4);
    let (busy, idle, quiet) = (
        format!("{}.deliveries", bus.prefix),
        format!("{}.retry.1s", bus.prefix),
        format!("{}.retry.10s", bus.prefix),
    );
    ensure_named(&bus, &[busy.clone(), idle.clone(), quiet.clone()])
        .await
        .unwrap();
    produce(&bus, &busy, 60).await;
    produce(&bus, &idle, 9).await;
    let (on_busy, on_idle) = (highs(&bus, &busy), highs(&bus, &idle));
    assert_eq!(on_busy.iter().sum::<i64>(), 60);
    let group = format!("{}.dispatch", bus.prefix);
    // Half of partition 0 and all of partition 1 of `busy` handled; the
    // others of `busy`, and all of `idle`, never committed.
    commit(&bus, &group, &busy, 0, on_busy[0] / 2);
    commit(&bus, &group, &busy, 1, on_busy[1]);

    let topics = vec![busy.clone(), idle.clone(), quiet.clone()];
    let (b, g) = (bus.clone(), group.clone());
    let lags =
        tokio::task::spawn_blocking(move || consumer_lag(&b, &g, &topics, Duration::from_secs(5)))
            .await
            .unwrap()
            .unwrap();

    let expected_busy = (on_busy[0] - on_busy[0] / 2) + on_busy[2] + on_busy[3];
    assert_eq!(
        lags,
        vec![
            (busy, expected_busy),
            (idle, on_idle.iter().sum::<i64>()),
            (quiet, 0),
        ],
        "records per partition of the busy topic: {on_busy:?}"
    );
    assert!(
        expected_busy > 0 && expected_busy < 60,
        "some committed, some not: {on_busy:?}"
    );
}
