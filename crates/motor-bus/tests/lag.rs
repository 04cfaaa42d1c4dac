//! Consumer lag against a real Kafka-protocol broker (start one with
//! `scripts/broker`): per topic, the records a group has not committed,
//! counted from the low watermark where it committed nothing, read again
//! through one kept client.

mod common;

use std::time::Duration;

use motor_bus::{lag::LagReader, topics::ensure_named, BusConfig, Producer, Record};
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
    let reader = LagReader::new(&bus, &group);
    let (reader, lags) = read(reader, &topics).await;

    let expected_busy = (on_busy[0] - on_busy[0] / 2) + on_busy[2] + on_busy[3];
    assert_eq!(
        lags,
        vec![
            (busy.clone(), expected_busy),
            (idle.clone(), on_idle.iter().sum::<i64>()),
            (quiet.clone(), 0),
        ],
        "records per partition of the busy topic: {on_busy:?}"
    );
    assert!(
        expected_busy > 0 && expected_busy < 60,
        "some committed, some not: {on_busy:?}"
    );

    // The same reader, later: what was committed and produced since counts,
    // through the client it kept.
    commit(&bus, &group, &busy, 2, on_busy[2]);
    produce(&bus, &quiet, 5).await;
    let on_quiet = highs(&bus, &quiet);
    let (reader, lags) = read(reader, &topics).await;
    assert_eq!(
        lags,
        vec![
            (busy, expected_busy - on_busy[2]),
            (idle, on_idle.iter().sum::<i64>()),
            (quiet, on_quiet.iter().sum::<i64>()),
        ],
        "records per partition of the busy topic: {on_busy:?}"
    );
    assert_eq!(on_quiet.iter().sum::<i64>(), 5);
    assert_eq!(
        reader.clients_made(),
        1,
        "the second read used the first's client"
    );
}

/// A reader that cannot reach its broker fails its read and makes a new
/// client for the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_read_leaves_no_client_behind() {
    let mut bus = common::bus("tlf", 4);
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    bus.brokers = closed.local_addr().unwrap().to_string();
    drop(closed);
    let topics = vec![format!("{}.deliveries", bus.prefix)];
    let mut reader = LagReader::new(&bus, &format!("{}.dispatch", bus.prefix));
    for made in 1..=2 {
        let (r, t) = (reader, topics.clone());
        reader = tokio::task::spawn_blocking(move || {
            let mut r = r;
            let lag = r.read(&t, Duration::from_millis(500));
            assert!(lag.is_err(), "no broker, no lag: {lag:?}");
            r
        })
        .await
        .unwrap();
        assert_eq!(reader.clients_made(), made);
    }
}

/// `reader`'s read of `topics`, off the runtime; the reader given back.
async fn read(mut reader: LagReader, topics: &[String]) -> (LagReader, Vec<(String, i64)>) {
    let topics = topics.to_vec();
    tokio::task::spawn_blocking(move || {
        let lags = reader.read(&topics, Duration::from_secs(5)).unwrap();
        (reader, lags)
    })
    .await
    .unwrap()
}
