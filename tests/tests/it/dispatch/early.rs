//! A job handled before its delivery is due by Postgres's clock: the
//! consumer's timer fired a little early, or this host's clock is ahead of
//! Postgres's. A job whose own due time that is waits for it and claims
//! again (dropped, it would wait for the sweeper: seconds late); a job for
//! an earlier due time is stale (the delivery was deferred and its new job
//! will come) and is dropped.

use std::{sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use motor::serve::Role;
use motor_domain::{
    delivery::{DeliveryId, DeliveryJob, Lane},
    subscription::SubscriptionId,
    InstanceId,
};
use motor_engine::Dispatcher;
use motor_metrics::Metrics;
use serde_json::json;

use super::{receiver::Receiver, subscribe};
use crate::{
    deliveries::post,
    util::{config, TestMotor},
};

/// Motor with the API only (no dispatcher, no relay: the test hands the
/// jobs over), one instance and a subscription to `receiver`; a dispatcher
/// of the test's own; the instance's one delivery, made due `ahead` from
/// now by Postgres's clock, and its job for that due time.
async fn one_delivery_due_in(
    receiver: &Receiver,
    ahead: Duration,
) -> (TestMotor, Arc<Dispatcher>, DeliveryJob) {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let sub = subscribe(&m, &t, receiver, json!({})).await;
    post(
        &m,
        &t,
        t.instances[0],
        json!({"type": "message.sent", "data": {}}),
    )
    .await;
    let (id, due): (uuid::Uuid, DateTime<Utc>) = sqlx::query_as(
        "UPDATE deliveries SET proximo_intento = now() + $1
         WHERE subscription_id = $2 RETURNING id, proximo_intento",
    )
    .bind(ahead)
    .bind(sub.as_uuid())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    let cfg = config(&m.db, &m.prefix);
    let dispatcher = Arc::new(Dispatcher::new(
        m.db.pool.clone(),
        Arc::new(cfg.sealing_key().unwrap()),
        cfg.retry_policy().unwrap(),
        Arc::new(Metrics::default()),
    ));
    let job = job(sub, t.instances[0], DeliveryId::from_uuid(id), due);
    (m, dispatcher, job)
}

fn job(
    sub: SubscriptionId,
    instance: InstanceId,
    delivery: DeliveryId,
    due: DateTime<Utc>,
) -> DeliveryJob {
    DeliveryJob {
        delivery_id: delivery,
        subscription_id: sub,
        instance_id: instance,
        lane: Lane::Live,
        seq: 1,
        attempt: 1,
        due_at: due,
    }
}

async fn state(m: &TestMotor, delivery: DeliveryId) -> (String, i32) {
    sqlx::query_as("SELECT estado, intentos FROM deliveries WHERE id = $1")
        .bind(delivery.as_uuid())
        .fetch_one(&m.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_job_handled_before_its_own_due_time_waits_for_it_and_is_delivered() {
    let receiver = Receiver::start().await;
    let (m, dispatcher, job) = one_delivery_due_in(&receiver, Duration::from_millis(400)).await;

    // Handled at once, as by a host whose clock is 400 ms ahead.
    dispatcher.handle(job.clone()).await;

    let seen = receiver.seen();
    assert_eq!(seen.len(), 1, "delivered by the job itself, not dropped");
    assert_eq!(seen[0].delivery_id, job.delivery_id.to_string());
    assert_eq!(state(&m, job.delivery_id).await, ("entregada".into(), 1));
    let sent_at: DateTime<Utc> = sqlx::query_scalar(
        "SELECT iniciado_en FROM delivery_attempts WHERE delivery_id = $1 AND numero = 1",
    )
    .bind(job.delivery_id.as_uuid())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert!(
        sent_at >= job.due_at,
        "not before it was due: {sent_at} < {}",
        job.due_at
    );
    m.stop().await;
}

#[tokio::test]
async fn a_job_for_an_earlier_due_time_is_dropped() {
    let receiver = Receiver::start().await;
    let (m, dispatcher, mut job) = one_delivery_due_in(&receiver, Duration::from_millis(400)).await;
    // Written for a due time the delivery has since left (a deferral wrote
    // the job for the new one).
    job.due_at -= chrono::TimeDelta::milliseconds(300);

    // Held, it would be sent once due, before `handle` returns.
    dispatcher.handle(job.clone()).await;
    assert!(receiver.seen().is_empty(), "nothing sent for a stale job");
    assert_eq!(state(&m, job.delivery_id).await, ("pendiente".into(), 0));
    m.stop().await;
}

#[tokio::test]
async fn a_job_far_ahead_of_postgres_is_left_to_the_sweeper() {
    let receiver = Receiver::start().await;
    let (m, dispatcher, job) = one_delivery_due_in(&receiver, Duration::from_secs(5)).await;

    // Clocks more than a second apart: not held (the job would keep its
    // consumer slot that long), left for the sweeper.
    dispatcher.handle(job.clone()).await;
    assert!(receiver.seen().is_empty(), "not held for 5 s");
    assert_eq!(state(&m, job.delivery_id).await, ("pendiente".into(), 0));
    m.stop().await;
}
