//! The first attempt straight from the commit: when the API and the
//! dispatcher share a process, the head of a free ordered lane is claimed
//! in the ingest transaction and attempted right after the commit, with no
//! job through Kafka; an unordered subscription's job is handed over too
//! (its Kafka copy is the durable fallback). A claim whose process died
//! before attempting it is sent by the sweeper once its lease runs out.

use std::time::Duration;

use motor::serve::Role;
use motor_domain::{subscription::SubscriptionId, NewEvent};
use serde_json::json;

use super::{receiver::Receiver, subscribe, wait_state, WAIT};
use crate::{
    deliveries::post,
    util::{TestDb, TestMotor},
};

/// Jobs of a subscription's deliveries still in the outbox (no relay runs,
/// so every job written is still there).
async fn jobs_in_outbox(m: &TestMotor, sub: SubscriptionId) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM outbox
         WHERE topic = 'deliveries' AND headers->>'subscription_id' = $1",
    )
    .bind(sub.to_string())
    .fetch_one(&m.db.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn first_attempts_start_from_the_commit_without_the_relay() {
    // No relay: nothing written to the outbox ever reaches Kafka, so what
    // arrives came through the fast path (or a head's chain).
    let m = TestMotor::start(&[Role::Api, Role::Dispatch]).await;
    let t = m.tenant(2).await;
    let (ordered_receiver, unordered_receiver) = (Receiver::start().await, Receiver::start().await);
    let ordered = subscribe(&m, &t, &ordered_receiver, json!({})).await;
    let unordered = subscribe(&m, &t, &unordered_receiver, json!({"ordenado": false})).await;

    let mut posted = 0;
    for i in 0..5 {
        for instance in &t.instances {
            post(
                &m,
                &t,
                *instance,
                json!({"type": "message.sent", "data": {"i": i}}),
            )
            .await;
            posted += 1;
            // One at a time: each event finds its lane free — its head not
            // only received but recorded (a receiver answers before Motor
            // records the answer).
            for receiver in [&ordered_receiver, &unordered_receiver] {
                receiver
                    .wait_for("the event", WAIT, |seen| seen.len() >= posted)
                    .await;
            }
            wait_state(&m, ordered, "entregada", posted as i64).await;
        }
    }
    for receiver in [&ordered_receiver, &unordered_receiver] {
        let seen = receiver.seen();
        assert_eq!(seen.len(), 10, "each event once");
        assert!(seen.iter().all(|s| s.verified && s.previous == 0));
        for instance in &t.instances {
            let seqs: Vec<i64> = seen
                .iter()
                .filter(|s| s.instance_id == instance.to_string())
                .map(|s| s.seq)
                .collect();
            assert_eq!(seqs, [1, 2, 3, 4, 5]);
        }
    }
    // The ordered lanes' heads were claimed in the fan-out: no job at all.
    assert_eq!(jobs_in_outbox(&m, ordered).await, 0);
    // The unordered subscription's jobs stay the durable path.
    assert_eq!(jobs_in_outbox(&m, unordered).await, 10);
    let delivered: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM deliveries WHERE estado = 'entregada' AND intentos = 1",
    )
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(delivered, 20);
    m.stop().await;
}

#[tokio::test]
async fn a_claim_made_in_the_fan_out_by_a_process_that_died_is_sent_after_its_lease() {
    let m = TestMotor::start_on(
        TestDb::new().await,
        &[Role::Api, Role::Relay, Role::Dispatch, Role::Sweeper],
    )
    .await;
    let t = m.tenant(1).await;
    let receiver = Receiver::start().await;
    let sub = subscribe(&m, &t, &receiver, json!({})).await;

    // An ingest commit that claimed its delivery for a dispatcher that never
    // got it (its process died right after the commit).
    let instance = t.instances[0];
    let event = NewEvent::parse(&json!({"type": "message.sent", "data": {}}), "e").unwrap();
    let mut tx = m.db.pool.begin().await.unwrap();
    let locked = motor_store::ledger::lock_instance(&mut tx, instance)
        .await
        .unwrap();
    let appended = motor_store::ledger::append_locked_handing(
        &mut tx,
        locked,
        &[event],
        Some(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(appended.handed.claimed.len(), 1);
    let claimed = &appended.handed.claimed[0];
    assert_eq!(
        (claimed.subscription_id, claimed.seq, claimed.attempt),
        (sub, 1, 1)
    );
    assert_eq!(claimed.envelope, appended.envelopes[0]);
    assert_eq!(
        jobs_in_outbox(&m, sub).await,
        0,
        "a claimed head has no job"
    );
    drop(appended);

    receiver
        .wait_for("the delivery after its lease", WAIT, |seen| seen.len() == 1)
        .await;
    let seen = receiver.seen();
    assert_eq!((seen[0].seq, seen[0].verified), (1, true));
    m.stop().await;
}
