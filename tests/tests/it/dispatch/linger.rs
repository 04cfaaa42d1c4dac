//! The record's linger (`MOTOR_RECORD_LINGER_MS`): a delivered attempt
//! that nothing is known to wait behind — the first of an ordered lane's
//! run, its lane's next delivery not yet committed — waits for others to
//! share its record's commit. Such records of several lanes share one
//! transaction; a delivery committed behind one while it lingers makes
//! it commit at once; a lane with a backlog never lingers; an unordered
//! subscription's record lingers while few of its chains run, and not
//! once more run than it has request slots.

use std::time::Duration;

use motor::serve::Role;
use motor_domain::subscription::SubscriptionId;
use serde_json::json;

use super::{receiver::Receiver, receiver::Reply, states, subscribe, wait_state_within};
use crate::{
    deliveries::post,
    util::{TestDb, TestMotor},
};

/// Well short of the linger the tests set (a minute): what arrives
/// within it did not wait for the linger to pass.
const SOON: Duration = Duration::from_secs(20);

/// API and dispatcher in one process (first attempts from the commit),
/// with records that may linger `linger`.
async fn lingering(linger: Duration) -> TestMotor {
    TestMotor::start_configured(TestDb::new().await, &[Role::Api, Role::Dispatch], |c| {
        c.record_linger_ms = linger.as_millis() as u64;
    })
    .await
}

/// The transactions that last wrote the subscription's deliveries.
async fn writers(m: &TestMotor, sub: SubscriptionId) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT DISTINCT xmin::text FROM deliveries WHERE subscription_id = $1 ORDER BY 1",
    )
    .bind(sub.as_uuid())
    .fetch_all(&m.db.pool)
    .await
    .unwrap()
}

/// The subscription's only delivery reaches `receiver` and its record
/// lingers. Nothing outside the process shows a record lingering: 300 ms
/// after the answer the delivery is still `pendiente`.
async fn first_lingers(m: &TestMotor, receiver: &Receiver, sub: SubscriptionId, why: &str) {
    receiver
        .wait_for("the first", SOON, |seen| seen.len() == 1)
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        states(m, sub).await,
        [("pendiente".to_owned(), 1)].into(),
        "{why}"
    );
}

#[tokio::test]
async fn first_attempts_of_several_lanes_share_one_record() {
    let m = lingering(Duration::from_secs(2)).await;
    let t = m.tenant(3).await;
    let receiver = Receiver::start().await;
    let sub = subscribe(&m, &t, &receiver, json!({})).await;

    // One event to each lane, one after the other: each first attempt is
    // made and answered long before the first record's linger ends.
    for (i, instance) in t.instances.iter().enumerate() {
        post(
            &m,
            &t,
            *instance,
            json!({"type": "message.sent", "data": {"i": i}}),
        )
        .await;
        receiver
            .wait_for("the event", SOON, |seen| seen.len() > i)
            .await;
    }
    super::wait_state(&m, sub, "entregada", 3).await;
    assert_eq!(
        writers(&m, sub).await.len(),
        1,
        "the three records committed together"
    );
    m.stop().await;
}

#[tokio::test]
async fn a_delivery_committed_behind_a_lingering_record_hurries_it() {
    let m = lingering(Duration::from_secs(60)).await;
    let t = m.tenant(1).await;
    let receiver = Receiver::start().await;
    let sub = subscribe(&m, &t, &receiver, json!({})).await;
    let (instance, event) = (t.instances[0], json!({"type": "message.sent", "data": {}}));

    post(&m, &t, instance, event.clone()).await;
    // The head was answered; its record lingers (nothing behind it yet).
    first_lingers(&m, &receiver, sub, "the head's record lingers").await;

    // Parked behind the head and handed to its chain: the record commits
    // now and claims it.
    post(&m, &t, instance, event).await;
    receiver
        .wait_for(
            "the next one, without waiting for the linger",
            SOON,
            |seen| seen.len() == 2,
        )
        .await;
    let seqs: Vec<i64> = receiver.seen().iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [1, 2]);
    // The second was claimed by the first's record, so its own record
    // does not linger either.
    wait_state_within(&m, sub, "entregada", 2, SOON).await;
    m.stop().await;
}

/// `receiver` answers 204 to seq 1 after `first`, to every other after
/// `rest`.
fn answer_first_then_rest(receiver: &Receiver, first: Duration, rest: Duration) {
    receiver.script(move |seen| Reply::status(204).after(if seen.seq == 1 { first } else { rest }));
}

#[tokio::test]
async fn a_lane_with_a_backlog_never_lingers() {
    let m = lingering(Duration::from_secs(60)).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let receiver = Receiver::start().await;
    // The lane's head is answered late: four more queue behind it.
    answer_first_then_rest(&receiver, Duration::from_secs(1), Duration::ZERO);
    let ordered = subscribe(&m, &t, &receiver, json!({})).await;

    let event = json!({"type": "message.sent", "data": {}});
    post(&m, &t, instance, event.clone()).await;
    receiver
        .wait_for("the head", SOON, |seen| seen.len() == 1)
        .await;
    for _ in 0..4 {
        post(&m, &t, instance, event.clone()).await;
    }
    // Every record of the lane's run, its last one included, commits at
    // once.
    wait_state_within(&m, ordered, "entregada", 5, SOON).await;
    let seqs: Vec<i64> = receiver.seen().iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    m.stop().await;
}

/// An unordered subscription's lone record lingers; once more of its
/// chains run than it has request slots (`UNORDERED_PER_SUBSCRIPTION`,
/// 8), their records commit at once, and take the lingering one along.
#[tokio::test]
async fn an_unordered_record_lingers_while_few_chains_run_and_not_once_many_do() {
    const BURST: usize = 12;
    let m = lingering(Duration::from_secs(60)).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let receiver = Receiver::start().await;
    // The first is answered at once; the burst's after a second each, so
    // that all of their chains run together.
    answer_first_then_rest(&receiver, Duration::ZERO, Duration::from_secs(1));
    let unordered = subscribe(&m, &t, &receiver, json!({"ordenado": false})).await;

    let event = json!({"type": "message.sent", "data": {}});
    post(&m, &t, instance, event.clone()).await;
    first_lingers(&m, &receiver, unordered, "a lone unordered record lingers").await;

    for _ in 0..BURST {
        post(&m, &t, instance, event.clone()).await;
    }
    wait_state_within(&m, unordered, "entregada", 1 + BURST as i64, SOON).await;
    assert_eq!(receiver.seen().len(), 1 + BURST);
    m.stop().await;
}
