//! A head's finish that claims the next delivery of its lane, or of its
//! unordered subscription ([`Next::Claim`]): a backlog moves without a job
//! per delivery, and every case where the next one cannot be claimed falls
//! back to the parked release (or the sweeper), so nothing is stranded.

use chrono::Utc;
use motor::serve::Role;
use motor_domain::delivery::{DeliveryId, DeliveryState, Lane};
use motor_store::{
    deliveries::{claim, due_lane_heads, renew, Claim, Claimed, Next, Recorded, Skip},
    Pool,
};
use sqlx::Row;
use std::time::Duration;

use super::{
    clear_outbox, delivery, jobs,
    lanes::{attempt, claim_ok, events, finish_with, one_claimed, row, setup, two_events, LEASE},
    set_state, waits_for_a_lock,
};
use crate::util::TestMotor;

/// Records `status` for `c`, asking its finish to claim the next one.
async fn finish_claiming(pool: &Pool, c: &Claimed, status: u16) -> Recorded {
    finish_with(pool, c, status, Next::Claim(LEASE)).await
}

fn claimed_next(r: Recorded) -> Option<Claimed> {
    match r {
        Recorded::Done { next, .. } => next.map(|n| *n),
        Recorded::Stale => panic!("stale"),
    }
}

#[tokio::test]
async fn a_heads_finish_claims_the_next_of_its_lane_with_no_job() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 2, true).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    events(&m, &t, a, 3).await;
    events(&m, &t, b, 1).await;
    let pool = &m.db.pool;
    let (a1, a2, a3) = (
        delivery(pool, sub, a, 1).await,
        delivery(pool, sub, a, 2).await,
        delivery(pool, sub, a, 3).await,
    );
    let b1 = delivery(pool, sub, b, 1).await;
    // Seq 2's job came while seq 1 was in flight: parked.
    let c1 = claim_ok(pool, a1, 1).await;
    assert_eq!(claim(pool, a2, 1, LEASE).await.unwrap(), Claim::Parked);
    clear_outbox(pool).await;

    // Seq 1 fails for good (404): the lane goes on with seq 2, claimed in
    // the same transaction, unparked, leased, and no job written for it.
    let done = finish_claiming(pool, &c1, 404).await;
    let Recorded::Done {
        state,
        next: Some(c2),
        released: None,
        suspended: false,
    } = done
    else {
        panic!("{done:?}");
    };
    assert_eq!(state, DeliveryState::Failed);
    assert_eq!(
        (
            c2.delivery_id,
            c2.instance_id,
            c2.seq,
            c2.attempt,
            c2.lane.clone()
        ),
        (a2, a, 2, 1, Lane::Live)
    );
    assert!(c2.ordered);
    assert!(c2.lease_until > Utc::now() + chrono::TimeDelta::seconds(50));
    let envelope: String =
        sqlx::query_scalar("SELECT envelope FROM events WHERE instance_id = $1 AND seq = 2")
            .bind(a.as_uuid())
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(c2.envelope, envelope);
    let r2 = row(pool, a2).await;
    assert!(r2
        .get::<Option<chrono::DateTime<Utc>>, _>("aparcado_en")
        .is_none());
    assert_eq!(jobs(pool, "deliveries").await.len(), 0);
    let dlq: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox WHERE topic = 'dlq'")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(dlq, 1, "seq 1 went to the DLQ");

    // Its own job, coming late, finds it leased: never two attempts at once.
    assert!(matches!(
        claim(pool, a2, 1, LEASE).await.unwrap(),
        Claim::Skipped(Skip::Leased(_))
    ));
    // Seq 3's job also comes now: the lane is busy with seq 2.
    assert_eq!(claim(pool, a3, 1, LEASE).await.unwrap(), Claim::Parked);

    let c3 = claimed_next(finish_claiming(pool, &c2, 204).await).expect("seq 3 claimed");
    assert_eq!((c3.delivery_id, c3.seq, c3.attempt), (a3, 3, 1));
    // The end of the lane: nothing to claim, nothing released.
    let done = finish_claiming(pool, &c3, 204).await;
    assert_eq!(
        done,
        Recorded::Done {
            state: DeliveryState::Delivered,
            next: None,
            released: None,
            suspended: false
        }
    );
    // Recorded once: a second record of the same attempt is stale.
    assert_eq!(finish_claiming(pool, &c3, 204).await, Recorded::Stale);
    type AttemptRow = (i32, Option<i32>, Option<String>, Vec<String>);
    let attempts: Vec<AttemptRow> = sqlx::query_as(
        "SELECT numero, status, error, key_ids FROM delivery_attempts WHERE delivery_id = $1",
    )
    .bind(a3.as_uuid())
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(
        attempts,
        vec![(1, Some(204), None, vec!["whk_a".to_owned()])]
    );
    let r3 = row(pool, a3).await;
    assert_eq!(r3.get::<String, _>("estado"), "entregada");
    assert_eq!(r3.get::<Option<i32>, _>("ultimo_status"), Some(204));
    assert!(r3
        .get::<Option<chrono::DateTime<Utc>>, _>("entregado_en")
        .is_some());
    assert!(r3
        .get::<Option<chrono::DateTime<Utc>>, _>("reservado_hasta")
        .is_none());
    // Instance b's lane was never touched by a's.
    let r = row(pool, b1).await;
    assert_eq!(r.get::<String, _>("estado"), "pendiente");
    assert!(r
        .get::<Option<chrono::DateTime<Utc>>, _>("reservado_hasta")
        .is_none());
    assert_eq!(jobs(pool, "deliveries").await.len(), 0);
    m.stop().await;
}

#[tokio::test]
async fn a_retry_or_an_inactive_subscription_claims_nothing_and_parked_ones_are_released() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub, a1, a2) = two_events(&m, true).await;
    let pool = &m.db.pool;

    // A retry keeps the lane blocked: no next claim.
    let c1 = claim_ok(pool, a1, 1).await;
    assert_eq!(claim(pool, a2, 1, LEASE).await.unwrap(), Claim::Parked);
    let done = finish_claiming(pool, &c1, 503).await;
    assert!(
        matches!(
            done,
            Recorded::Done {
                state: DeliveryState::Pending,
                next: None,
                released: None,
                ..
            }
        ),
        "{done:?}"
    );

    // The head's second attempt succeeds while the subscription was paused
    // in between: the next one is not claimed (it must not go out), but
    // being parked it gets its job back, which reactivation would also do.
    sqlx::query("UPDATE deliveries SET proximo_intento = now() WHERE id = $1")
        .bind(a1.as_uuid())
        .execute(pool)
        .await
        .unwrap();
    let c1b = claim_ok(pool, a1, 2).await;
    set_state(&m, &t, sub, "pausada").await;
    clear_outbox(pool).await;
    let done = finish_claiming(pool, &c1b, 200).await;
    assert_eq!(
        done,
        Recorded::Done {
            state: DeliveryState::Delivered,
            next: None,
            released: Some(a2),
            suspended: false
        }
    );
    let r2 = row(pool, a2).await;
    assert!(r2
        .get::<Option<chrono::DateTime<Utc>>, _>("reservado_hasta")
        .is_none());
    assert_eq!(jobs(pool, "deliveries").await.len(), 1);
    m.stop().await;
}

#[tokio::test]
async fn a_finish_whose_next_is_being_updated_waits_for_it_or_skips_it() {
    // The next delivery's row is updated by another transaction while the
    // finish runs. An ordered lane's finish waits and Postgres rechecks the
    // row once that commits (EvalPlanQual), which must not fail the finish;
    // an unordered one skips the row (another chain may hold it).
    let m = TestMotor::start(&[Role::Api]).await;
    for ordered in [true, false] {
        let (_, _, d1, d2) = two_events(&m, ordered).await;
        let pool = &m.db.pool;
        let c1 = claim_ok(pool, d1, 1).await;
        let mut other = pool.begin().await.unwrap();
        sqlx::query("UPDATE deliveries SET actualizado_en = now() WHERE id = $1")
            .bind(d2.as_uuid())
            .execute(&mut *other)
            .await
            .unwrap();
        let finishing = {
            let pool = pool.clone();
            tokio::spawn(async move { finish_with(&pool, &c1, 204, Next::Claim(LEASE)).await })
        };
        if ordered {
            waits_for_a_lock(pool).await;
            assert!(!finishing.is_finished(), "the finish waits for the row");
            other.commit().await.unwrap();
            let next = claimed_next(finishing.await.unwrap()).expect("the next one claimed");
            assert_eq!(next.delivery_id, d2);
        } else {
            // It finishes while the row is still held.
            let finished = tokio::time::timeout(Duration::from_secs(10), finishing)
                .await
                .expect("the finish does not wait for the held row");
            assert_eq!(claimed_next(finished.unwrap()), None);
            other.commit().await.unwrap();
            claim_ok(pool, d2, 1).await;
        }
    }
    m.stop().await;
}

#[tokio::test]
async fn an_unordered_finish_claims_the_oldest_due_delivery_nobody_holds() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, false).await;
    let a = t.instances[0];
    events(&m, &t, a, 5).await;
    let pool = &m.db.pool;
    let mut d = Vec::new();
    for seq in 1..=5 {
        d.push(delivery(pool, sub, a, seq).await);
    }
    // Every open delivery of an unordered subscription is its own head for
    // the sweeper.
    let mut swept = due_lane_heads(pool, Duration::ZERO, 100).await.unwrap();
    swept.sort();
    let mut all = d.clone();
    all.sort();
    assert_eq!(swept, all);
    // 1 and 2 in flight; 4 waits for a retry in an hour.
    let (c1, c2) = (claim_ok(pool, d[0], 1).await, claim_ok(pool, d[1], 1).await);
    sqlx::query("UPDATE deliveries SET proximo_intento = now() + interval '1 hour' WHERE id = $1")
        .bind(d[3].as_uuid())
        .execute(pool)
        .await
        .unwrap();

    // Two finishes of the subscription in one batch: each claims one of
    // the due, unheld ones, never the same, never the one not yet due.
    let attempt = attempt(Some(204), None);
    let recorded = motor_store::deliveries::record_delivered_many(
        pool,
        &[
            (&c1, &attempt, Next::Claim(LEASE)),
            (&c2, &attempt, Next::Claim(LEASE)),
        ],
    )
    .await
    .unwrap();
    let nexts: Vec<Claimed> = recorded
        .into_iter()
        .map(|r| claimed_next(r).expect("a next claimed"))
        .collect();
    let mut claimed: Vec<_> = nexts.iter().map(|c| c.delivery_id).collect();
    claimed.sort();
    let mut expected = vec![d[2], d[4]];
    expected.sort();
    assert_eq!(claimed, expected);
    for c in &nexts {
        assert!(!c.ordered);
        assert_eq!(c.attempt, 1);
        assert!(c.lease_until > Utc::now() + chrono::TimeDelta::seconds(50));
        // Their own jobs, coming late, find them leased.
        assert!(matches!(
            claim(pool, c.delivery_id, 1, LEASE).await.unwrap(),
            Claim::Skipped(Skip::Leased(_))
        ));
    }
    assert_eq!(jobs(pool, "deliveries").await.len(), 5, "no job written");

    // Nothing else is due: the chains end. A finish that does not ask
    // claims nothing either.
    assert_eq!(
        claimed_next(finish_with(pool, &nexts[0], 204, Next::Release).await),
        None
    );
    assert_eq!(
        claimed_next(finish_claiming(pool, &nexts[1], 204).await),
        None
    );
    let r4 = row(pool, d[3]).await;
    assert!(r4
        .get::<Option<chrono::DateTime<Utc>>, _>("reservado_hasta")
        .is_none());
    m.stop().await;
}

#[tokio::test]
async fn reactivating_an_unordered_subscription_releases_its_oldest_thousand() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, false).await;
    let a = t.instances[0];
    set_state(&m, &t, sub, "pausada").await;
    for chunk in 0..3 {
        let batch: Vec<_> = (0..400)
            .map(|i| super::lanes::ev(chunk * 400 + i))
            .collect();
        super::post(&m, &t, a, serde_json::Value::Array(batch)).await;
    }
    let pool = &m.db.pool;
    clear_outbox(pool).await;
    set_state(&m, &t, sub, "activa").await;
    // The oldest 1,000 get a job; the chains of their attempts claim the
    // other 200 (`an_unordered_finish_claims_...`), the sweeper is the
    // fallback.
    let mut seqs: Vec<i64> = jobs(pool, "deliveries")
        .await
        .iter()
        .map(|j| j.job.seq)
        .collect();
    seqs.sort();
    seqs.dedup();
    assert_eq!(seqs.len(), 1000, "1,000 jobs, each of its own delivery");
    // Oldest due first: the first two requests' 800 (a request's events are
    // due at the same instant, so which 200 of the third is not defined).
    assert_eq!(seqs[..800], (1..=800).collect::<Vec<_>>());
    assert!(seqs[800..].iter().all(|s| (801..=1200).contains(s)));
    m.stop().await;
}

#[tokio::test]
async fn a_next_claimed_by_a_process_that_died_comes_back_through_the_sweeper() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, true).await;
    let a = t.instances[0];
    events(&m, &t, a, 2).await;
    let pool = &m.db.pool;
    let a1 = delivery(pool, sub, a, 1).await;
    let a2 = delivery(pool, sub, a, 2).await;
    let c1 = claim_ok(pool, a1, 1).await;
    let c2 = claimed_next(finish_claiming(pool, &c1, 204).await).expect("claimed");
    assert_eq!(c2.delivery_id, a2);
    // Nobody records it (the process died) and it has no job: while the
    // lease runs the sweeper leaves it alone, once it ran out it is swept.
    let swept = due_lane_heads(pool, Duration::from_secs(1), 100)
        .await
        .unwrap();
    assert!(!swept.contains(&a2), "{swept:?}");
    expire_lease(pool, a2).await;
    let swept = due_lane_heads(pool, Duration::from_secs(1), 100)
        .await
        .unwrap();
    assert_eq!(swept, vec![a2]);
    m.stop().await;
}

/// The hot finish in a batch: three lanes' heads recorded delivered in one
/// statement — a lane's next claimed for the caller; a lane whose next is
/// parked but not due yet gets its job released instead; a stale head among
/// them changes nothing — with one attempt row per recorded head.
#[tokio::test]
async fn many_heads_recorded_at_once_each_claim_their_own_next() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 3, true).await;
    let (a, b, c) = (t.instances[0], t.instances[1], t.instances[2]);
    for instance in [a, b, c] {
        events(&m, &t, instance, 2).await;
    }
    let pool = &m.db.pool;
    let (a1, a2) = (
        delivery(pool, sub, a, 1).await,
        delivery(pool, sub, a, 2).await,
    );
    let (b1, b2) = (
        delivery(pool, sub, b, 1).await,
        delivery(pool, sub, b, 2).await,
    );
    let (c1, c2) = (
        delivery(pool, sub, c, 1).await,
        delivery(pool, sub, c, 2).await,
    );
    let (ca, cb, cc) = (
        claim_ok(pool, a1, 1).await,
        claim_ok(pool, b1, 1).await,
        claim_ok(pool, c1, 1).await,
    );
    // c's follower was parked and is not due yet: it cannot be claimed now,
    // so the finish releases it (its job) instead.
    assert_eq!(claim(pool, c2, 1, LEASE).await.unwrap(), Claim::Parked);
    sqlx::query("UPDATE deliveries SET proximo_intento = now() + interval '2 hours' WHERE id = $1")
        .bind(c2.as_uuid())
        .execute(pool)
        .await
        .unwrap();
    clear_outbox(pool).await;
    // b's head was meanwhile recorded by someone else: stale here.
    let mut stale_b = cb.clone();
    stale_b.attempt = 2;

    let attempt = attempt(Some(204), None);
    let (ca, cc) = (ca, cc);
    let recorded = motor_store::deliveries::record_delivered_many(
        pool,
        &[
            (&ca, &attempt, Next::Claim(LEASE)),
            (&stale_b, &attempt, Next::Claim(LEASE)),
            (&cc, &attempt, Next::Claim(LEASE)),
        ],
    )
    .await
    .unwrap();
    assert_eq!(recorded.len(), 3);
    let next_a = claimed_next(recorded[0].clone()).expect("a's next claimed");
    assert_eq!((next_a.delivery_id, next_a.seq, next_a.attempt), (a2, 2, 1));
    assert_eq!(recorded[1], Recorded::Stale);
    let Recorded::Done {
        next: None,
        released: Some(released),
        state: DeliveryState::Delivered,
        ..
    } = recorded[2].clone()
    else {
        panic!("{:?}", recorded[2]);
    };
    assert_eq!(released, c2);
    let released_jobs = jobs(pool, "retry.1h").await;
    assert_eq!(released_jobs.len(), 1, "c2's job waits for its due time");
    assert_eq!(released_jobs[0].job.delivery_id, c2);

    for (id, estado) in [(a1, "entregada"), (b1, "pendiente"), (c1, "entregada")] {
        let r = row(pool, id).await;
        assert_eq!(r.get::<String, _>("estado"), estado, "{id}");
    }
    let attempts: Vec<(uuid::Uuid, i32, Option<i32>, Vec<String>)> = sqlx::query_as(
        "SELECT delivery_id, numero, status, key_ids FROM delivery_attempts ORDER BY iniciado_en",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut recorded_ids: Vec<uuid::Uuid> = attempts.iter().map(|r| r.0).collect();
    recorded_ids.sort();
    let mut expected = vec![*a1.as_uuid(), *c1.as_uuid()];
    expected.sort();
    assert_eq!(recorded_ids, expected, "no attempt row for the stale one");
    assert!(attempts
        .iter()
        .all(|r| r.1 == 1 && r.2 == Some(204) && r.3 == attempt.key_ids));
    // b is untouched: its head still leased to its first claim.
    assert!(row(pool, b2)
        .await
        .get::<Option<chrono::DateTime<Utc>>, _>("reservado_hasta")
        .is_none());
    m.stop().await;
}

#[tokio::test]
async fn a_claim_renews_its_lease_only_while_it_still_holds_it() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (_, _, held) = one_claimed(&m, false).await;
    let d = held.delivery_id;

    // Still its own: renewed, from now.
    let renewed = renew(&m.db.pool, &held, Duration::from_secs(60))
        .await
        .unwrap()
        .expect("the claim still holds it");
    assert!(renewed > held.lease_until, "{renewed} {}", held.lease_until);
    let lease: chrono::DateTime<Utc> = row(&m.db.pool, d).await.get("reservado_hasta");
    assert_eq!(lease, renewed);
    let held = Claimed {
        lease_until: renewed,
        ..held
    };

    // Its lease ran out and another claim took it (the sweeper's job): the
    // waiting claim is lost and must not be attempted.
    expire_lease(&m.db.pool, d).await;
    let other = claim_ok(&m.db.pool, d, 1).await;
    assert_eq!(renew(&m.db.pool, &held, LEASE).await.unwrap(), None);
    let lease: chrono::DateTime<Utc> = row(&m.db.pool, d).await.get("reservado_hasta");
    assert_eq!(
        lease, other.lease_until,
        "the other claim's lease is untouched"
    );

    // Once the other claim recorded its attempt, nothing is renewed either.
    finish_with(&m.db.pool, &other, 204, Next::Release).await;
    assert_eq!(renew(&m.db.pool, &other, LEASE).await.unwrap(), None);
    m.stop().await;
}

/// Ends `delivery`'s lease a second ago, as if its claim's time ran out.
async fn expire_lease(pool: &Pool, delivery: DeliveryId) {
    sqlx::query(
        "UPDATE deliveries SET reservado_hasta = now() - interval '1 second' WHERE id = $1",
    )
    .bind(delivery.as_uuid())
    .execute(pool)
    .await
    .unwrap();
}
