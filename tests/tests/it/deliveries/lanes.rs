//! Claims and lanes, driven through the store: one winner per delivery,
//! ordered lanes park behind their head and the head's finish releases
//! them (also when the two race), unordered subscriptions and other
//! instances never wait. Shared steps for the other engine tests live here.

use std::time::Duration;

use chrono::Utc;
use motor::serve::Role;
use motor_domain::{
    delivery::{
        Decision, DeliveryId, DeliveryState, ErrorCode, Jitter, Lane, Outcome, RetryPolicy,
    },
    subscription::SubscriptionId,
    InstanceId,
};
use motor_store::{
    deliveries::{claim, record_attempt, Attempt, Claim, Claimed, Next, Recorded, Skip},
    Pool,
};
use serde_json::{json, Value};
use sqlx::Row;

use super::{clear_outbox, delivery, jobs, post, subscribe};
use crate::util::{Tenant, TestMotor};

pub(super) const LEASE: Duration = Duration::from_secs(60);

pub(super) fn ev(n: usize) -> Value {
    json!({"type": "message.received", "data": {"n": n}})
}

/// A tenant with `instances` instances and one subscription.
pub(super) async fn setup(
    m: &TestMotor,
    instances: usize,
    ordered: bool,
) -> (Tenant, SubscriptionId) {
    let t = m.tenant(instances).await;
    let sub = subscribe(m, &t, json!({ "ordenado": ordered })).await;
    (t, sub)
}

/// Posts `n` events to an instance, one request each.
pub(super) async fn events(m: &TestMotor, t: &Tenant, instance: InstanceId, n: usize) {
    for i in 0..n {
        post(m, t, instance, ev(i)).await;
    }
}

/// A tenant with one instance and a subscription, and two events posted to
/// it: the tenant, the subscription and the deliveries of seq 1 and 2.
pub(super) async fn two_events(
    m: &TestMotor,
    ordered: bool,
) -> (Tenant, SubscriptionId, DeliveryId, DeliveryId) {
    let (t, sub) = setup(m, 1, ordered).await;
    let a = t.instances[0];
    events(m, &t, a, 2).await;
    let d1 = delivery(&m.db.pool, sub, a, 1).await;
    let d2 = delivery(&m.db.pool, sub, a, 2).await;
    (t, sub, d1, d2)
}

/// A tenant with one instance and a subscription, one event posted to it,
/// and its delivery claimed (attempt 1): the tenant, the subscription and
/// the claim.
pub(super) async fn one_claimed(m: &TestMotor, ordered: bool) -> (Tenant, SubscriptionId, Claimed) {
    let (t, sub) = setup(m, 1, ordered).await;
    let a = t.instances[0];
    events(m, &t, a, 1).await;
    let d = delivery(&m.db.pool, sub, a, 1).await;
    let claimed = claim_ok(&m.db.pool, d, 1).await;
    (t, sub, claimed)
}

pub(super) async fn claim_ok(pool: &Pool, id: DeliveryId, attempt: u32) -> Claimed {
    match claim(pool, id, attempt, LEASE).await.unwrap() {
        Claim::Claimed(c) => *c,
        other => panic!("{id} attempt {attempt}: {other:?}"),
    }
}

pub(super) fn attempt(status: Option<u16>, error: Option<ErrorCode>) -> Attempt {
    Attempt {
        started_at: Utc::now(),
        duration: std::time::Duration::from_millis(41),
        status,
        error,
        key_ids: vec!["whk_a".into()],
    }
}

/// The decision the real rules take for an HTTP status.
pub(super) fn decide(c: &Claimed, status: u16, retry_after: Option<&str>) -> Decision {
    let now = Utc::now();
    RetryPolicy::production().decide(
        c.created_at,
        now,
        c.attempt,
        Outcome::from_status(status, retry_after, now),
        Jitter::NONE,
    )
}

/// Claims nothing else happens to: attempt `c.attempt` answered `status`
/// (the next delivery of the lane released, not claimed).
pub(super) async fn finish(pool: &Pool, c: &Claimed, status: u16) -> Recorded {
    finish_with(pool, c, status, Next::Release).await
}

/// [`finish`], with what the head's finish does with the next delivery.
pub(super) async fn finish_with(pool: &Pool, c: &Claimed, status: u16, next: Next) -> Recorded {
    let error = (!(200..300).contains(&status)).then_some(ErrorCode::Http(status));
    let decision = decide(c, status, None);
    record_attempt(pool, c, &attempt(Some(status), error), &decision, next)
        .await
        .unwrap()
}

pub(super) fn released(r: Recorded) -> Option<DeliveryId> {
    match r {
        Recorded::Done { released, .. } => released,
        Recorded::Stale => panic!("stale"),
    }
}

pub(super) async fn row(pool: &Pool, id: DeliveryId) -> sqlx::postgres::PgRow {
    sqlx::query(
        "SELECT estado, intentos, ultimo_status, ultimo_error, proximo_intento, reservado_hasta,
                aparcado_en, entregado_en FROM deliveries WHERE id = $1",
    )
    .bind(id.as_uuid())
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Jobs in the outbox for one delivery, on `topic`.
pub(super) async fn jobs_for(
    pool: &Pool,
    topic: &str,
    id: DeliveryId,
) -> Vec<motor_domain::delivery::DeliveryJob> {
    jobs(pool, topic)
        .await
        .into_iter()
        .filter(|j| j.job.delivery_id == id)
        .map(|j| j.job)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_of_one_delivery_have_exactly_one_winner() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 3, true).await;
    for &instance in &t.instances {
        events(&m, &t, instance, 1).await;
        let id = delivery(&m.db.pool, sub, instance, 1).await;
        let mut tasks = Vec::new();
        for _ in 0..12 {
            let pool = m.db.pool.clone();
            tasks.push(tokio::spawn(async move {
                claim(&pool, id, 1, LEASE).await.unwrap()
            }));
        }
        let mut won = Vec::new();
        for task in tasks {
            match task.await.unwrap() {
                Claim::Claimed(c) => won.push(c),
                Claim::Skipped(Skip::Leased(until)) => assert!(until > Utc::now()),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(won.len(), 1);
        let c = &won[0];
        let envelope: String =
            sqlx::query_scalar("SELECT envelope FROM events WHERE instance_id = $1 AND seq = 1")
                .bind(instance.as_uuid())
                .fetch_one(&m.db.pool)
                .await
                .unwrap();
        assert_eq!(
            (
                c.delivery_id,
                c.subscription_id,
                c.instance_id,
                c.seq,
                c.lane.clone(),
                c.attempt
            ),
            (id, sub, instance, 1, Lane::Live, 1)
        );
        assert_eq!(
            (
                c.destination.as_ref().map(|d| d.as_str()),
                c.ordered,
                c.app_id
            ),
            (Some("http://127.0.0.1:9/hook"), true, t.app)
        );
        assert_eq!(c.envelope, envelope);
        assert!(c.lease_until > Utc::now() + chrono::TimeDelta::seconds(50));
        // Still leased: another claim, even for the same attempt, fails.
        assert!(matches!(
            claim(&m.db.pool, id, 1, LEASE).await.unwrap(),
            Claim::Skipped(Skip::Leased(_))
        ));
    }
    m.stop().await;
}

#[tokio::test]
async fn an_ordered_lane_parks_behind_its_head_and_the_heads_finish_releases_it() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 2, true).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    events(&m, &t, a, 3).await;
    events(&m, &t, b, 1).await;
    let [a1, a2, a3] = [1, 2, 3].map(|s| (a, s));
    let mut ids = Vec::new();
    for (i, s) in [a1, a2, a3] {
        ids.push(delivery(&m.db.pool, sub, i, s).await);
    }
    let (a1, a2, a3) = (ids[0], ids[1], ids[2]);
    let b1 = delivery(&m.db.pool, sub, b, 1).await;

    // Seq 2 and 3 wait for seq 1; instance b's lane never waits for a's.
    assert_eq!(
        claim(&m.db.pool, a2, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    assert_eq!(
        claim(&m.db.pool, a3, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    assert!(row(&m.db.pool, a2)
        .await
        .get::<Option<chrono::DateTime<Utc>>, _>("aparcado_en")
        .is_some());
    let cb = claim_ok(&m.db.pool, b1, 1).await;
    assert_eq!(released(finish(&m.db.pool, &cb, 204).await), None);

    clear_outbox(&m.db.pool).await;
    let c1 = claim_ok(&m.db.pool, a1, 1).await;
    // While seq 1 is in flight, seq 2 still waits.
    assert_eq!(
        claim(&m.db.pool, a2, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    // Seq 1's finish writes seq 2's job (only seq 2's: seq 3 waits for 2).
    let done = finish(&m.db.pool, &c1, 200).await;
    assert_eq!(
        done,
        Recorded::Done {
            state: DeliveryState::Delivered,
            next: None,
            released: Some(a2),
            suspended: false
        }
    );
    let out = jobs(&m.db.pool, "deliveries").await;
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(
        (out[0].job.delivery_id, out[0].job.attempt, out[0].job.seq),
        (a2, 1, 2)
    );
    assert_eq!(out[0].key, a.to_string());
    let r = row(&m.db.pool, a1).await;
    assert_eq!(r.get::<String, _>("estado"), "entregada");
    assert!(r
        .get::<Option<chrono::DateTime<Utc>>, _>("entregado_en")
        .is_some());
    assert!(r
        .get::<Option<chrono::DateTime<Utc>>, _>("proximo_intento")
        .is_none());
    assert!(r
        .get::<Option<chrono::DateTime<Utc>>, _>("reservado_hasta")
        .is_none());

    assert_eq!(
        claim(&m.db.pool, a3, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    let c2 = claim_ok(&m.db.pool, a2, 1).await;
    assert_eq!(released(finish(&m.db.pool, &c2, 200).await), Some(a3));
    let c3 = claim_ok(&m.db.pool, a3, 1).await;
    assert_eq!(released(finish(&m.db.pool, &c3, 200).await), None);
    m.stop().await;
}

#[tokio::test]
async fn in_the_happy_path_a_finish_releases_nothing() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, true).await;
    let a = t.instances[0];
    events(&m, &t, a, 2).await;
    clear_outbox(&m.db.pool).await;
    let c1 = claim_ok(&m.db.pool, delivery(&m.db.pool, sub, a, 1).await, 1).await;
    assert_eq!(released(finish(&m.db.pool, &c1, 200).await), None);
    assert!(jobs(&m.db.pool, "deliveries").await.is_empty());
    claim_ok(&m.db.pool, delivery(&m.db.pool, sub, a, 2).await, 1).await;
    m.stop().await;
}

#[tokio::test]
async fn an_unordered_subscription_does_not_block() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, false).await;
    let a = t.instances[0];
    events(&m, &t, a, 3).await;
    let c3 = claim_ok(&m.db.pool, delivery(&m.db.pool, sub, a, 3).await, 1).await;
    let c2 = claim_ok(&m.db.pool, delivery(&m.db.pool, sub, a, 2).await, 1).await;
    assert!(!c3.ordered);
    assert_eq!(released(finish(&m.db.pool, &c3, 200).await), None);
    assert_eq!(released(finish(&m.db.pool, &c2, 200).await), None);
    claim_ok(&m.db.pool, delivery(&m.db.pool, sub, a, 1).await, 1).await;
    m.stop().await;
}

/// A failed claim of an unordered delivery says why without locking the
/// subscription's older open deliveries: the park's blockers are only
/// looked for (and share-locked) in ordered lanes. It share-locked the
/// oldest open one, so it waited for whichever group commit was claiming
/// that one, and chains' claims skipped it meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_unordered_claim_waits_for_no_other_delivery() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (_, _, d1, d2) = two_events(&m, false).await;
    claim_ok(&m.db.pool, d2, 1).await;
    // Another transaction holds seq 1, as a group commit claiming it does.
    let mut holder = m.db.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM deliveries WHERE id = $1 FOR UPDATE")
        .bind(d1.as_uuid())
        .execute(&mut *holder)
        .await
        .unwrap();
    // Seq 2 is leased: its claim fails and reads why, while seq 1 is held.
    let again = tokio::time::timeout(Duration::from_secs(10), claim(&m.db.pool, d2, 1, LEASE))
        .await
        .expect("the failed claim waited for seq 1's lock")
        .unwrap();
    assert!(
        matches!(again, Claim::Skipped(Skip::Leased(_))),
        "{again:?}"
    );
    holder.rollback().await.unwrap();
    assert!(row(&m.db.pool, d2)
        .await
        .get::<Option<chrono::DateTime<Utc>>, _>("aparcado_en")
        .is_none());
    m.stop().await;
}

/// The race the park's lock closes: a claim of seq 2 that runs while seq
/// 1's finish commits is either claimed, or parked and released by that
/// finish — never parked with no release.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_park_racing_the_heads_finish_is_never_lost() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, true).await;
    let a = t.instances[0];
    let (mut claimed, mut parked) = (0, 0);
    for round in 0..25 {
        let head_seq = 2 * round + 1;
        events(&m, &t, a, 2).await;
        let head = delivery(&m.db.pool, sub, a, head_seq as i64).await;
        let next = delivery(&m.db.pool, sub, a, head_seq as i64 + 1).await;
        let c = claim_ok(&m.db.pool, head, 1).await;
        let pool = m.db.pool.clone();
        let claiming = tokio::spawn(async move { claim(&pool, next, 1, LEASE).await.unwrap() });
        let pool = m.db.pool.clone();
        let finishing = tokio::spawn(async move { finish(&pool, &c, 200).await });
        let (claim_result, recorded) = (claiming.await.unwrap(), finishing.await.unwrap());
        let c_next = match claim_result {
            Claim::Claimed(c) => {
                claimed += 1;
                *c
            }
            Claim::Parked => {
                parked += 1;
                assert_eq!(
                    released(recorded),
                    Some(next),
                    "round {round}: parked and not released"
                );
                claim_ok(&m.db.pool, next, 1).await
            }
            other => panic!("round {round}: {other:?}"),
        };
        finish(&m.db.pool, &c_next, 200).await;
    }
    eprintln!("claimed {claimed}, parked and released {parked}");
    assert_eq!(claimed + parked, 25);
    m.stop().await;
}
