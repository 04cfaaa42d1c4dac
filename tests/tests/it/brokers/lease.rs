//! A claim that runs out before its attempt is sent (issue 37). An
//! attempt reads what it needs (settings, app, signing, credentials) after
//! its claim; when those reads wait past the claim's lease — in the smoke
//! soak for the pool on a loaded machine, here for a lock on `apps` — the
//! sweeper hands the delivery on, another claim delivers it and the lane
//! moves to seq 2. The old claim must not send then: its copy of seq 1
//! reaches the queue beside or after seq 2, and it is recorded nowhere
//! (its record finds the lease taken).

use std::time::Duration;

use chrono::{DateTime, Utc};
use motor::serve::Role;
use motor_domain::subscription::SubscriptionId;
use reqwest::StatusCode;
use serde_json::json;

use super::{
    check_arrivals,
    clients::{RabbitSetup, RABBIT},
    ledger, post_many, subscribe, wait_state,
};
use crate::{
    health::patch_settings,
    util::{TestDb, TestMotor},
};

/// The lease on the delivery of seq 1 (`None`: not leased).
async fn lease_of_first(db: &TestDb, sub: SubscriptionId) -> Option<DateTime<Utc>> {
    sqlx::query_scalar(
        "SELECT reservado_hasta FROM deliveries WHERE subscription_id = $1 AND seq = 1",
    )
    .bind(sub.as_uuid())
    .fetch_one(&db.pool)
    .await
    .unwrap()
}

/// Polls [`lease_of_first`] until `wanted` holds, for at most a minute.
async fn wait_lease(
    db: &TestDb,
    sub: SubscriptionId,
    what: &str,
    wanted: impl Fn(Option<DateTime<Utc>>) -> bool,
) -> DateTime<Utc> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let lease = lease_of_first(db, sub).await;
        if let (true, Some(until)) = (wanted(lease), lease) {
            return until;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "waiting for {what}: {lease:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_ran_out_before_its_send_sends_nothing() {
    let _rabbit = RABBIT.read().await;
    let db = TestDb::new().await;
    // The API, relay and sweeper now; the dispatcher once the events are
    // in and `apps` is locked (posting reads it).
    let front =
        TestMotor::start_configured(db.clone(), &[Role::Api, Role::Relay, Role::Sweeper], |_| {})
            .await;
    // A 1 s timeout: a lease of 1 + 5 s.
    let (status, body) = patch_settings(&front, json!({"webhooks.timeout_segundos": 1})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let t = front.tenant(1).await;
    let rabbit = RabbitSetup::new("lease", true, Default::default()).await;
    let sub = subscribe(
        &front,
        &t,
        json!({"nombre": "r", "url": rabbit.url(""), "ordenado": true}),
    )
    .await;
    post_many(&front, &t, t.instances[0], 2, "lease").await;

    // An attempt's read of its app waits for this lock; claims, the
    // sweeper and records do not read `apps`.
    let mut lock = db.pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE apps IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .unwrap();
    let back = TestMotor::start_configured(db.clone(), &[Role::Dispatch, Role::Retry], |c| {
        c.topic_prefix = front.prefix.clone();
    })
    .await;
    // Seq 1 claimed; its attempt waits for its app past the lease, the
    // sweeper's job claims it again (and that attempt waits too).
    let first = wait_lease(&db, sub.id, "the first claim", |l| l.is_some()).await;
    wait_lease(&db, sub.id, "the claim after the lease ran out", |l| {
        l.is_some_and(|until| until != first)
    })
    .await;
    lock.commit().await.unwrap();

    wait_state(&front, sub.id, "entregada", 2, Duration::from_secs(60)).await;
    // Time for the first claim's attempt to go out, were it to.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let got = rabbit.take(10).await;
    let seqs: Vec<i64> = got
        .iter()
        .map(|g| g.envelope()["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        [1, 2],
        "each delivery once and in order: the claim that ran out sent nothing"
    );
    check_arrivals(&got, &sub, &ledger(&front).await, 2);
    rabbit.delete().await;
    back.stop().await;
    front.stop().await;
}
