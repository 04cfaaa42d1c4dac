//! The consumers of the dispatch and retry roles: which topics each reads,
//! how long a fetch waits, and each job held until its due time, then
//! handed to the [`Dispatcher`].

use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use motor_bus::{
    consumer::{self, ConsumerConfig, InRecord},
    BusConfig, Topics,
};
use motor_domain::{
    delivery::{DeliveryJob, RetryPolicy, Tier},
    outbox::Topic,
};
use tokio_util::sync::CancellationToken;

use super::Dispatcher;
use crate::Result;

/// How long a consumer's fetch may wait when its topics have nothing new.
/// A busy lane never waits for its topic (its chain claims the next
/// delivery), nor does a first attempt that shares a process with the API
/// (it starts from the commit); the topic carries the rest: replays, the
/// sweeper's jobs, lanes released after a retry, another process's events.
/// Longer waits mean fewer fetches from an idle Motor: a broker that holds
/// a fetch for its whole wait even when records arrive (Tansu 0.6 does)
/// adds up to the wait to those jobs, a Kafka broker answers at once. An
/// idle Tansu spends about 6 ms of CPU on each fetch of this topic's 8
/// partitions: 500 ms instead of 200 saved it 1.5 % of a core
/// (docs/BENCHMARKS.md, 2026-12-02).
const DELIVERIES_FETCH_WAIT: Duration = Duration::from_millis(500);
/// Retries wait a second or more (±20 %) after their record anyway.
const TIERS_FETCH_WAIT: Duration = Duration::from_millis(1000);

/// Which jobs a consumer takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// First attempts, replays and released lanes: `{prefix}.deliveries`.
    Deliveries,
    /// Retries: the delay tiers `{prefix}.retry.*`.
    Tiers,
}

#[derive(Debug, Clone)]
pub struct DispatchConfig {
    pub bus: BusConfig,
    pub policy: RetryPolicy,
    /// Jobs held (waiting or running) per consumer, at most.
    pub max_in_flight: usize,
}

/// A job's due time, from its payload, to the nanosecond (an unreadable
/// job is due now and its claim decides).
fn due(record: &InRecord) -> Option<SystemTime> {
    let job = DeliveryJob::from_json(&record.payload).ok()?;
    let secs = u64::try_from(job.due_at.timestamp()).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::new(secs, job.due_at.timestamp_subsec_nanos()))
}

/// Runs one consumer (dispatch or retry role) until `shutdown`.
pub async fn run(
    config: DispatchConfig,
    source: Source,
    dispatcher: Arc<Dispatcher>,
    shutdown: CancellationToken,
) -> Result<()> {
    let topics = Topics::new(&config.bus.prefix);
    let (names, group, fetch_wait) = match source {
        Source::Deliveries => (
            vec![topics.name(Topic::Deliveries)],
            "dispatch",
            DELIVERIES_FETCH_WAIT,
        ),
        Source::Tiers => (
            Tier::ALL
                .iter()
                .map(|t| topics.name(Topic::Retry(*t)))
                .collect(),
            "retry",
            TIERS_FETCH_WAIT,
        ),
    };
    let consumer = ConsumerConfig {
        group_id: format!("{}.{group}", config.bus.prefix),
        topics: names,
        max_in_flight: config.max_in_flight,
        commit_every: Duration::from_millis(500),
        fetch_wait,
    };
    tracing::info!(role = group, "dispatcher started");
    let draining = dispatcher.clone();
    consumer::run(
        &config.bus,
        consumer,
        due,
        move |record: InRecord| {
            let dispatcher = dispatcher.clone();
            async move {
                match DeliveryJob::from_json(&record.payload) {
                    Ok(job) => dispatcher.handle(job).await,
                    Err(e) => tracing::warn!(error = %e, topic = %record.topic, offset = record.offset, "dropping an unreadable job"),
                }
            }
        },
        shutdown,
    )
    .await?;
    draining.drain().await;
    tracing::info!(role = group, "dispatcher stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use motor_domain::{
        delivery::{DeliveryId, Lane},
        subscription::SubscriptionId,
        time, InstanceId,
    };

    use super::*;

    #[test]
    fn a_job_is_due_to_the_nanosecond_it_names() {
        let job = DeliveryJob {
            delivery_id: DeliveryId::new(),
            subscription_id: SubscriptionId::new(),
            instance_id: InstanceId::new(),
            lane: Lane::Live,
            seq: 1,
            attempt: 2,
            due_at: time::parse("2026-12-01T21:40:05.123456789Z").unwrap(),
        };
        let record = |payload: Vec<u8>| InRecord {
            topic: "t.retry.1s".into(),
            partition: 0,
            offset: 0,
            key: Vec::new(),
            payload,
            headers: Vec::new(),
        };
        // Never before it: a timer set for the millisecond would fire up to
        // 0.99 ms early and the claim find the delivery not yet due.
        assert_eq!(
            due(&record(job.to_json())),
            Some(SystemTime::UNIX_EPOCH + Duration::new(1_796_161_205, 123_456_789))
        );
        assert_eq!(due(&record(b"{}".to_vec())), None, "unreadable: now");
    }
}
