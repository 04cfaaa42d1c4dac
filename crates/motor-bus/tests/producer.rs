//! The producer's delivery reports against a real Kafka-protocol broker
//! (start one with `scripts/broker`): one per record, in the records'
//! order, and one wake-up of the caller for a whole call, however many
//! partitions (so produce requests, and reports) it spans.

mod common;

use std::{
    future::Future,
    pin::pin,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    task::{Context, Poll, Wake, Waker},
    time::Duration,
};

use motor_bus::{topics::ensure_named, BusConfig, Producer, Record};
use rdkafka::{error::KafkaError, types::RDKafkaErrorCode};

/// A topic of 4 partitions, made for the test.
async fn topic(bus: &BusConfig) -> String {
    let topic = format!("{}.events", bus.prefix);
    ensure_named(bus, std::slice::from_ref(&topic))
        .await
        .unwrap();
    topic
}

/// Counts the wake-ups of the task it stands for.
#[derive(Default)]
struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_wakes_its_caller_once_for_all_its_reports() {
    let bus = common::bus("tp", 4);
    let topic = topic(&bus).await;
    let producer = Producer::new(&bus).unwrap();
    // 40 keys: every one of the 4 partitions, so several produce requests
    // and several reports from librdkafka.
    let keys: Vec<String> = (0..40).map(|i| format!("instance-{i}")).collect();
    let batch: Vec<Record<'_>> = keys
        .iter()
        .map(|key| Record {
            topic: &topic,
            key,
            payload: b"x",
            headers: &[],
        })
        .collect();

    let wakes = Arc::new(Wakes::default());
    let waker = Waker::from(wakes.clone());
    let mut reports = pin!(producer.enqueue(&batch).await.reports());
    assert!(
        reports
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending(),
        "no report can be in before the broker answers"
    );
    let waited = tokio::time::Instant::now();
    while wakes.0.load(Ordering::SeqCst) == 0 {
        assert!(waited.elapsed() < Duration::from_secs(15), "never woken");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Any later report (another partition's) would wake it again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "one wake-up a call");
    let Poll::Ready(reports) = reports.as_mut().poll(&mut Context::from_waker(&waker)) else {
        panic!("woken, yet its reports are not all in");
    };
    assert_eq!(reports.len(), 40);
    assert!(reports.iter().all(Result::is_ok), "{reports:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_record_is_reported_in_its_place_among_the_stored_ones() {
    let bus = common::bus("tp", 4);
    let topic = topic(&bus).await;
    let producer = Producer::new(&bus).unwrap();
    // Past librdkafka's message.max.bytes (1,000,000): refused before it
    // reaches the broker.
    let huge = vec![b'x'; 1_100_000];
    let keys: Vec<String> = (0..6).map(|i| format!("instance-{i}")).collect();
    let batch: Vec<Record<'_>> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| Record {
            topic: &topic,
            key,
            payload: if i == 3 { &huge } else { b"x" },
            headers: &[],
        })
        .collect();

    let reports = producer.publish(&batch).await;

    assert_eq!(reports.len(), 6);
    for (i, report) in reports.iter().enumerate() {
        if i == 3 {
            assert!(
                matches!(
                    report,
                    Err(KafkaError::MessageProduction(
                        RDKafkaErrorCode::MessageSizeTooLarge
                    ))
                ),
                "record 3: {report:?}"
            );
        } else {
            assert!(report.is_ok(), "record {i}: {report:?}");
        }
    }
    // A call of nothing answers at once.
    assert!(producer.publish(&[]).await.is_empty());
}
