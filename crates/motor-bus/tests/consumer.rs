//! The parallel consumer against a real Kafka-protocol broker (start one
//! with `scripts/broker`): records of one partition run concurrently, a
//! record waits until it is due without holding up the ones behind it, the
//! committed position never passes an unfinished record, a restart resumes
//! from it, and the in-flight bound holds.

mod common;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use motor_bus::{
    consumer::{self, ConsumerConfig, InRecord},
    topics::ensure_topics,
    BusConfig, Producer, Record,
};
use rdkafka::{
    consumer::{BaseConsumer, Consumer},
    ClientConfig, Offset, TopicPartitionList,
};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Due time from a `due_at_ms` header.
fn due(record: &InRecord) -> Option<SystemTime> {
    let ms: u64 = std::str::from_utf8(record.header("due_at_ms")?)
        .ok()?
        .parse()
        .ok()?;
    Some(UNIX_EPOCH + Duration::from_millis(ms))
}

async fn produce(bus: &BusConfig, topic: &str, records: &[(String, Vec<(String, String)>)]) {
    let producer = Producer::new(bus).unwrap();
    let batch: Vec<Record<'_>> = records
        .iter()
        .map(|(payload, headers)| Record {
            topic,
            key: "k",
            payload: payload.as_bytes(),
            headers,
        })
        .collect();
    for report in producer.publish(&batch).await {
        report.unwrap();
    }
}

fn committed(bus: &BusConfig, group: &str, topic: &str) -> Option<i64> {
    let reader: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &bus.brokers)
        .set("group.id", group)
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(topic, 0);
    let offsets = reader.committed_offsets(tpl, Duration::from_secs(5)).ok()?;
    match offsets.find_partition(topic, 0)?.offset() {
        Offset::Offset(o) => Some(o),
        _ => None,
    }
}

async fn eventually(what: &str, within: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

struct Running {
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap();
    }
}

fn start<H, F>(
    bus: &BusConfig,
    group: &str,
    topic: &str,
    max_in_flight: usize,
    handle: H,
) -> Running
where
    H: Fn(InRecord) -> F + Send + Sync + 'static,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let shutdown = CancellationToken::new();
    let config = ConsumerConfig {
        fetch_wait: Duration::from_millis(10),
        group_id: group.to_owned(),
        topics: vec![topic.to_owned()],
        max_in_flight,
        commit_every: Duration::from_millis(100),
    };
    let (bus, stop) = (bus.clone(), shutdown.clone());
    let task = tokio::spawn(async move {
        consumer::run(&bus, config, due, handle, stop)
            .await
            .unwrap();
    });
    Running { shutdown, task }
}

fn offset_of(record: &InRecord) -> i64 {
    std::str::from_utf8(&record.payload)
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_record_does_not_hold_up_the_partition_but_holds_the_commit() {
    let bus = common::bus("tc", 1);
    ensure_topics(&bus).await.unwrap();
    let topic = format!("{}.deliveries", bus.prefix);
    let records: Vec<_> = (0..100).map(|i| (i.to_string(), vec![])).collect();
    produce(&bus, &topic, &records).await;

    let release = Arc::new(Notify::new());
    let handled: Arc<Mutex<Vec<i64>>> = Arc::default();
    let (r, h) = (release.clone(), handled.clone());
    let running = start(&bus, "slow", &topic, 1000, move |record| {
        let (release, handled) = (r.clone(), h.clone());
        async move {
            let n = offset_of(&record);
            if n == 0 {
                release.notified().await;
            }
            handled.lock().unwrap().push(n);
        }
    });

    eventually(
        "the 99 records behind the slow one",
        Duration::from_secs(30),
        || handled.lock().unwrap().len() == 99,
    )
    .await;
    assert!(!handled.lock().unwrap().contains(&0));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        committed(&bus, "slow", &topic).unwrap_or(0),
        0,
        "never past the unfinished record 0"
    );

    release.notify_one();
    eventually(
        "the whole prefix committed",
        Duration::from_secs(10),
        || committed(&bus, "slow", &topic) == Some(100),
    )
    .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_resumes_from_the_committed_prefix() {
    let bus = common::bus("tc", 1);
    ensure_topics(&bus).await.unwrap();
    let topic = format!("{}.deliveries", bus.prefix);
    let first: Vec<_> = (0..50).map(|i| (i.to_string(), vec![])).collect();
    produce(&bus, &topic, &first).await;

    let seen: Arc<Mutex<Vec<i64>>> = Arc::default();
    let s = seen.clone();
    let running = start(&bus, "resume", &topic, 100, move |record| {
        let seen = s.clone();
        async move { seen.lock().unwrap().push(offset_of(&record)) }
    });
    eventually("the first 50 committed", Duration::from_secs(30), || {
        committed(&bus, "resume", &topic) == Some(50)
    })
    .await;
    running.stop().await;

    let second: Vec<_> = (50..80).map(|i| (i.to_string(), vec![])).collect();
    produce(&bus, &topic, &second).await;
    let again: Arc<Mutex<Vec<i64>>> = Arc::default();
    let a = again.clone();
    let running = start(&bus, "resume", &topic, 100, move |record| {
        let again = a.clone();
        async move { again.lock().unwrap().push(offset_of(&record)) }
    });
    eventually("the 30 new records", Duration::from_secs(30), || {
        again.lock().unwrap().len() >= 30
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut again = again.lock().unwrap().clone();
    again.sort();
    assert_eq!(
        again,
        (50..80).collect::<Vec<_>>(),
        "nothing committed is read twice"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_wait_until_due_without_blocking_the_ones_behind() {
    let bus = common::bus("tc", 1);
    ensure_topics(&bus).await.unwrap();
    let topic = format!("{}.retry.1s", bus.prefix);

    let handled_at: Arc<Mutex<HashMap<i64, u64>>> = Arc::default();
    let h = handled_at.clone();
    let running = start(&bus, "due", &topic, 100, move |record| {
        let handled_at = h.clone();
        async move {
            handled_at
                .lock()
                .unwrap()
                .insert(offset_of(&record), now_ms());
        }
    });
    // Joining the group takes a few seconds: wait until a first record is
    // through, so the due times below are measured from a live consumer.
    produce(&bus, &topic, &[("100".to_owned(), vec![])]).await;
    eventually("the consumer to join", Duration::from_secs(30), || {
        handled_at.lock().unwrap().contains_key(&100)
    })
    .await;

    let due_at = now_ms() + 2_000;
    let mut records = vec![(
        "0".to_owned(),
        vec![("due_at_ms".to_owned(), due_at.to_string())],
    )];
    records.extend((1..10).map(|i| {
        (
            i.to_string(),
            vec![("due_at_ms".to_owned(), "0".to_owned())],
        )
    }));
    produce(&bus, &topic, &records).await;
    eventually("all ten", Duration::from_secs(30), || {
        handled_at.lock().unwrap().len() == 11
    })
    .await;
    let handled_at = handled_at.lock().unwrap().clone();
    assert!(
        handled_at[&0] >= due_at,
        "never early: handled {} ms before due",
        due_at - handled_at[&0]
    );
    for i in 1..10 {
        assert!(
            handled_at[&i] < due_at,
            "record {i} waited behind a record that was not due"
        );
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_records_stay_within_the_bound() {
    let bus = common::bus("tc", 1);
    ensure_topics(&bus).await.unwrap();
    let topic = format!("{}.deliveries", bus.prefix);
    let records: Vec<_> = (0..24).map(|i| (i.to_string(), vec![])).collect();
    produce(&bus, &topic, &records).await;

    let now = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let (n, p, d) = (now.clone(), peak.clone(), done.clone());
    let running = start(&bus, "bound", &topic, 3, move |_record| {
        let (now, peak, done) = (n.clone(), p.clone(), d.clone());
        async move {
            let running = now.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(running, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(100)).await;
            now.fetch_sub(1, Ordering::SeqCst);
            done.fetch_add(1, Ordering::SeqCst);
        }
    });
    eventually(
        "all 24 through a bound of 3",
        Duration::from_secs(40),
        || done.load(Ordering::SeqCst) == 24,
    )
    .await;
    let peak = peak.load(Ordering::SeqCst);
    // One record may race a pause and run over the bound.
    assert!(
        (2..=4).contains(&peak),
        "peak concurrency {peak} with a bound of 3"
    );
    eventually("the prefix committed", Duration::from_secs(10), || {
        committed(&bus, "bound", &topic) == Some(24)
    })
    .await;
    running.stop().await;
}
