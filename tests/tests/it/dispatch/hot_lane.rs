//! One hot lane (issue 40): when the API and the dispatcher share a
//! process, the lane's records and the events arriving for it are written
//! by one group commit (`motor_store::writer`), so a record and the
//! appends queued beside it share one transaction and one commit — and
//! the record claims, as its lane's next delivery, what those appends
//! parked behind it. Order and completeness are unchanged.

use motor::serve::Role;
use serde_json::json;

use super::{receiver::Receiver, subscribe, wait_state, WAIT};
use crate::{deliveries::post, util::TestMotor};

/// Senders posting to the one instance at once, and events each posts.
const SENDERS: usize = 8;
const EACH: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hot_lanes_records_share_commits_with_the_events_arriving_and_keep_order() {
    // No relay and no Kafka roles beside the dispatcher: what arrives came
    // from the commit (the fan-out's claim) and the lane's chain.
    let m = TestMotor::start(&[Role::Api, Role::Dispatch]).await;
    let t = m.tenant(1).await;
    let receiver = Receiver::start().await;
    let sub = subscribe(&m, &t, &receiver, json!({})).await;
    let instance = t.instances[0];

    // A closed loop on one instance: while the lane's chain attempts one
    // delivery, producers' requests queue at the writer.
    let (m_ref, t_ref) = (&m, &t);
    futures::future::join_all((0..SENDERS).map(|s| async move {
        for i in 0..EACH {
            post(
                m_ref,
                t_ref,
                instance,
                json!({"type": "message.sent", "data": {"s": s, "i": i}}),
            )
            .await;
        }
    }))
    .await;
    let total = SENDERS * EACH;
    receiver
        .wait_for("every event", WAIT, |seen| seen.len() >= total)
        .await;
    wait_state(&m, sub, "entregada", total as i64).await;

    let seen = receiver.seen();
    let seqs: Vec<i64> = seen.iter().map(|s| s.seq).collect();
    let expected: Vec<i64> = (1..=total as i64).collect();
    assert_eq!(seqs, expected, "in seq order, each once");
    assert!(seen.iter().all(|s| s.verified && s.previous == 0));
    let first_attempts: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM deliveries
         WHERE subscription_id = $1 AND estado = 'entregada' AND intentos = 1",
    )
    .bind(sub.as_uuid())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(
        first_attempts, total as i64,
        "nothing lost, nothing retried"
    );

    // An attempt row was written by the transaction that recorded it; an
    // event row by the one that appended it. The same transaction id on
    // both is a record that shared its commit with arriving events.
    let shared: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM delivery_attempts a
         JOIN deliveries d ON d.id = a.delivery_id
         WHERE d.subscription_id = $1
           AND a.xmin::text IN (SELECT e.xmin::text FROM events e WHERE e.instance_id = $2)",
    )
    .bind(sub.as_uuid())
    .bind(instance.as_uuid())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert!(
        shared > 0,
        "no record of the hot lane shared a commit with the {total} events arriving"
    );
    m.stop().await;
}
