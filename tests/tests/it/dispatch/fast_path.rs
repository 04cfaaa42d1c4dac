//! The first attempt straight from the commit: when the API and the
//! dispatcher share a process, the head of a free ordered lane is claimed
//! in the ingest transaction and attempted right after the commit, with no
//! job through Kafka; a new delivery behind an open one of its lane is
//! created parked, with no job, for that one's finish to take (or for the
//! dispatcher to claim after the commit, when the lane freed while the
//! commit was in flight); an unordered subscription's deliveries are
//! claimed in the ingest transaction too, or handed over with no job while
//! the subscription is crowded in the process. A claim whose process died
//! before attempting it is sent by the sweeper once its lease runs out, a
//! handed delivery once it is stale.

use std::time::Duration;

use motor::serve::Role;
use motor_domain::{
    delivery::{DeliveryId, Lane},
    subscription::SubscriptionId,
    InstanceId, NewEvent,
};
use motor_store::{
    deliveries::{Attempt, Claimed, Handed, Next, Recorded, Taking},
    ledger::Appended,
};
use serde_json::json;

use super::{
    receiver::{Receiver, Reply},
    subscribe, wait_state, WAIT,
};
use crate::{
    deliveries::{post, sessions_waiting_for_a_lock, waits_for_a_lock},
    util::{scans, TestDb, TestMotor},
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

/// Appends one event to `instance` as a commit of a process with a
/// dispatcher does, and answers what the commit hands over.
async fn append_handing(
    pool: &motor_store::Pool,
    instance: InstanceId,
    n: i64,
    lease: Duration,
) -> Handed {
    append_taking(pool, instance, (n, 1), lease, &[])
        .await
        .handed
}

/// `count` events, numbered from `n`.
fn numbered(n: i64, count: i64) -> Vec<NewEvent> {
    (n..n + count)
        .map(|i| NewEvent::parse(&json!({"type": "message.sent", "data": {"n": i}}), "e").unwrap())
        .collect()
}

/// A process whose dispatcher takes the commit's deliveries for `lease`,
/// where each unordered subscription has room for 8 claims, but those of
/// `busy` as given.
fn taking_for(lease: Duration, busy: &[(SubscriptionId, u32)]) -> Taking {
    Taking {
        lease,
        room: 8,
        busy: busy.to_vec(),
    }
}

/// [`append_handing`] of `count` events (numbered from `n`) as [`taking_for`]
/// takes them; answers the whole append.
async fn append_taking(
    pool: &motor_store::Pool,
    instance: InstanceId,
    (n, count): (i64, i64),
    lease: Duration,
    busy: &[(SubscriptionId, u32)],
) -> Appended {
    let (events, taking) = (numbered(n, count), taking_for(lease, busy));
    let mut tx = pool.begin().await.unwrap();
    let locked = motor_store::ledger::lock_instance(&mut tx, instance)
        .await
        .unwrap();
    let appended =
        motor_store::ledger::append_locked_handing(&mut tx, locked, &events, Some(&taking))
            .await
            .unwrap();
    tx.commit().await.unwrap();
    appended
}

/// The ids of the first attempts a commit handed over parked.
fn parked_ids(handed: Handed) -> Vec<DeliveryId> {
    handed.parked.into_iter().map(|p| p.delivery_id).collect()
}

/// Two lanes (the two instances of a new tenant, one ordered
/// subscription), each a claimed head and a first attempt parked behind
/// it, A's rows first (the older ids): the heads and the parked ones.
async fn two_busy_lanes(m: &TestMotor, lease: Duration) -> ([DeliveryId; 2], Vec<DeliveryId>) {
    let t = m.tenant(2).await;
    let receiver = Receiver::start().await;
    subscribe(m, &t, &receiver, json!({})).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let head_a = append_handing(&m.db.pool, a, 1, lease).await.claimed[0].delivery_id;
    let head_b = append_handing(&m.db.pool, b, 1, lease).await.claimed[0].delivery_id;
    let mut parked = parked_ids(append_handing(&m.db.pool, a, 2, lease).await);
    parked.extend(parked_ids(append_handing(&m.db.pool, b, 2, lease).await));
    assert_eq!(parked.len(), 2);
    ([head_a, head_b], parked)
}

/// `claim_freed` of `parked`, in a task (it may wait for a lock).
fn spawn_claim_freed(
    m: &TestMotor,
    parked: &[DeliveryId],
    lease: Duration,
) -> tokio::task::JoinHandle<motor_store::Result<Vec<Claimed>>> {
    let (pool, parked) = (m.db.pool.clone(), parked.to_vec());
    tokio::spawn(async move { motor_store::deliveries::claim_freed(&pool, &parked, lease).await })
}

/// [`two_busy_lanes`] with B's head being finished in the transaction
/// returned (its row locked), and `claim_freed` of the parked first
/// attempts (leased for a minute) started meanwhile.
async fn freeing_while_b_finishes(
    m: &TestMotor,
) -> (
    [DeliveryId; 2],
    Vec<DeliveryId>,
    sqlx::Transaction<'static, sqlx::Postgres>,
    tokio::task::JoinHandle<motor_store::Result<Vec<Claimed>>>,
) {
    let lease = Duration::from_secs(60);
    let (heads, parked) = two_busy_lanes(m, lease).await;
    let mut finish = m.db.pool.begin().await.unwrap();
    deliver(&mut finish, heads[1]).await.unwrap();
    let claiming = spawn_claim_freed(m, &parked, lease);
    (heads, parked, finish, claiming)
}

/// The deliveries a [`spawn_claim_freed`] claimed, in id order.
async fn claimed_ids(
    claiming: tokio::task::JoinHandle<motor_store::Result<Vec<Claimed>>>,
) -> Vec<DeliveryId> {
    let mut ids: Vec<_> = claiming
        .await
        .unwrap()
        .unwrap()
        .iter()
        .map(|c| c.delivery_id)
        .collect();
    ids.sort();
    ids
}

/// Waits for the one delivery `receiver` should get: seq 1, signed.
async fn receives_the_first_event(receiver: &Receiver, what: &str) {
    receiver.wait_for(what, WAIT, |seen| seen.len() == 1).await;
    let seen = receiver.seen();
    assert_eq!((seen[0].seq, seen[0].verified), (1, true));
}

/// A finish of `delivery`'s first attempt, as a group commit writes it.
async fn deliver(conn: &mut sqlx::PgConnection, delivery: DeliveryId) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE deliveries SET estado = 'entregada', intentos = 1, proximo_intento = NULL,
                reservado_hasta = NULL, entregado_en = now()
         WHERE id = $1",
    )
    .bind(delivery.as_uuid())
    .execute(conn)
    .await
    .map(drop)
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
    // The unordered lane's last answer may still be on its way to its
    // record (a receiver answers before Motor records).
    wait_state(&m, unordered, "entregada", posted as i64).await;
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
    // The ordered lanes' heads were claimed in the fan-out, the unordered
    // subscription's deliveries handed over: no job at all.
    assert_eq!(jobs_in_outbox(&m, ordered).await, 0);
    assert_eq!(jobs_in_outbox(&m, unordered).await, 0);
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
async fn bursts_for_an_unordered_subscription_are_delivered_from_the_commit_past_its_tasks() {
    // No relay and no sweeper: no job reaches Kafka and nothing stale is
    // sent again, so every arrival came from the commit's hand-over. The
    // first burst's fan-out claims as many as the subscription has room
    // for (64 chains), and hands the rest over as jobs; the chains of those
    // 64, waiting for its 8 request slots, leave no room: the second
    // burst, committed while they wait, is all handed over as jobs. A job
    // gets a task, up to the subscription's bound, the rest wait for those
    // tasks; and the tasks' chains claim them ahead.
    let m = TestMotor::start(&[Role::Api, Role::Dispatch]).await;
    let t = m.tenant(1).await;
    let receiver = Receiver::start().await;
    receiver.script(|_| Reply::status(204).after(Duration::from_millis(100)));
    let sub = subscribe(&m, &t, &receiver, json!({"ordenado": false})).await;
    // Of the burst from `seq` on: those claimed in its fan-out (leased by
    // the statement that created them: updated when created), and those
    // taken so far in all (leased, or delivered already).
    let taken = |from: i64| {
        sqlx::query_as::<_, (i64, i64)>(
            "SELECT count(*) FILTER (WHERE reservado_hasta IS NOT NULL
                                       AND actualizado_en = creado_en),
                    count(*) FILTER (WHERE reservado_hasta IS NOT NULL OR estado = 'entregada')
             FROM deliveries WHERE subscription_id = $1 AND seq >= $2",
        )
        .bind(sub.as_uuid())
        .bind(from)
        .fetch_one(&m.db.pool)
    };
    // The first burst: its 64 oldest claimed in the fan-out, and no more
    // taken until an answer frees a slot (100 ms). The second: nothing
    // claimed in its fan-out, and the chains claim the first's jobs first.
    for (burst, claimed) in [64, 0].into_iter().enumerate() {
        let events: Vec<_> = (0..100)
            .map(|i| json!({"type": "message.sent", "data": {"burst": burst, "i": i}}))
            .collect();
        post(&m, &t, t.instances[0], json!(events)).await;
        let (in_fan_out, taken) = taken(1 + 100 * burst as i64).await.unwrap();
        assert_eq!(
            (in_fan_out, taken),
            (claimed, claimed),
            "burst {burst}: claimed in its fan-out, and taken"
        );
    }

    receiver
        .wait_for("every event", WAIT, |seen| seen.len() >= 200)
        .await;
    let mut seqs: Vec<i64> = receiver.seen().iter().map(|s| s.seq).collect();
    seqs.sort();
    assert_eq!(seqs, (1..=200).collect::<Vec<i64>>(), "each event once");
    assert_eq!(jobs_in_outbox(&m, sub).await, 0);
    wait_state(&m, sub, "entregada", 200).await;
    m.stop().await;
}

#[tokio::test]
async fn a_claim_made_in_the_fan_out_by_a_process_that_died_is_sent_after_its_lease() {
    claimed_in_the_fan_out_and_sent_after_its_lease(json!({})).await;
}

#[tokio::test]
async fn an_unordered_claim_made_in_the_fan_out_by_a_process_that_died_is_sent_after_its_lease() {
    claimed_in_the_fan_out_and_sent_after_its_lease(json!({"ordenado": false})).await;
}

/// An ingest commit claims the delivery of a subscription made of
/// `fields` for a dispatcher that never gets it (its process died right
/// after the commit): the sweeper sends it once its lease ran out.
async fn claimed_in_the_fan_out_and_sent_after_its_lease(fields: serde_json::Value) {
    let m = TestMotor::start_on(
        TestDb::new().await,
        &[Role::Api, Role::Relay, Role::Dispatch, Role::Sweeper],
    )
    .await;
    let t = m.tenant(1).await;
    let receiver = Receiver::start().await;
    let sub = subscribe(&m, &t, &receiver, fields).await;

    let appended = append_taking(
        &m.db.pool,
        t.instances[0],
        (1, 1),
        Duration::from_secs(1),
        &[],
    )
    .await;
    assert!(appended.handed.jobs.is_empty() && appended.handed.parked.is_empty());
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
        "a delivery claimed in the fan-out has no job"
    );
    drop(appended);

    receives_the_first_event(&receiver, "the delivery after its lease").await;
    m.stop().await;
}

#[tokio::test]
async fn the_fan_out_claims_an_unordered_subscriptions_deliveries_up_to_its_room() {
    // No dispatcher runs: the test makes the commits.
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let receiver = Receiver::start().await;
    let sub = subscribe(&m, &t, &receiver, json!({"ordenado": false})).await;
    let lease = Duration::from_secs(60);
    let seqs = |handed: &Handed| {
        (
            handed.claimed.iter().map(|c| c.seq).collect::<Vec<_>>(),
            handed.jobs.iter().map(|j| j.seq).collect::<Vec<_>>(),
        )
    };

    // No chain of it runs here: the room of any subscription (8).
    let first = append_taking(&m.db.pool, t.instances[0], (1, 10), lease, &[]).await;
    assert_eq!(
        seqs(&first.handed),
        ((1..=8).collect(), vec![9, 10]),
        "the oldest claimed, the rest handed over as jobs"
    );
    // Its chains here left it room for 3.
    let second = append_taking(&m.db.pool, t.instances[0], (11, 5), lease, &[(sub, 3)]).await;
    assert_eq!(seqs(&second.handed), (vec![11, 12, 13], vec![14, 15]));
    let third = append_taking(&m.db.pool, t.instances[0], (16, 2), lease, &[(sub, 0)]).await;
    assert_eq!(seqs(&third.handed), (vec![], vec![16, 17]), "no room");
    assert_eq!(jobs_in_outbox(&m, sub).await, 0, "no job written");
    m.stop().await;
}

#[tokio::test]
async fn an_unordered_delivery_handed_to_a_process_that_died_is_sent_by_the_sweeper() {
    let m = TestMotor::start_on(
        TestDb::new().await,
        &[Role::Api, Role::Relay, Role::Dispatch, Role::Sweeper],
    )
    .await;
    let t = m.tenant(1).await;
    let receiver = Receiver::start().await;
    let sub = subscribe(&m, &t, &receiver, json!({"ordenado": false})).await;

    // An ingest commit of a process where the subscription has no room
    // left, that handed its delivery to a dispatcher that never took it
    // (its process died right after the commit): no job, no lease.
    let handed = append_taking(
        &m.db.pool,
        t.instances[0],
        (1, 1),
        Duration::from_secs(60),
        &[(sub, 0)],
    )
    .await
    .handed;
    assert!(handed.claimed.is_empty() && handed.parked.is_empty());
    assert_eq!(handed.jobs.len(), 1);
    assert_eq!(
        (handed.jobs[0].subscription_id, handed.jobs[0].seq),
        (sub, 1)
    );
    assert_eq!(
        jobs_in_outbox(&m, sub).await,
        0,
        "a handed delivery has no job"
    );
    drop(handed);

    receives_the_first_event(&receiver, "the delivery once stale").await;
    m.stop().await;
}

#[tokio::test]
async fn events_behind_a_busy_lane_are_parked_without_jobs_and_follow_their_head() {
    // No relay: a job written to the outbox never reaches Kafka.
    let m = TestMotor::start(&[Role::Api, Role::Dispatch]).await;
    let t = m.tenant(1).await;
    let receiver = Receiver::start().await;
    // The first request is answered late: the lane is busy meanwhile.
    receiver.script(|seen| Reply {
        delay: if seen.seq == 1 {
            Duration::from_secs(2)
        } else {
            Duration::ZERO
        },
        ..Reply::status(204)
    });
    let sub = subscribe(&m, &t, &receiver, json!({})).await;
    let (instance, event) = (t.instances[0], json!({"type": "message.sent", "data": {}}));
    post(&m, &t, instance, event.clone()).await;
    receiver
        .wait_for("the head", WAIT, |seen| !seen.is_empty())
        .await;
    for _ in 0..4 {
        post(&m, &t, instance, event.clone()).await;
    }
    let parked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM deliveries
         WHERE subscription_id = $1 AND aparcado_en IS NOT NULL AND reservado_hasta IS NULL",
    )
    .bind(sub.as_uuid())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(parked, 4, "the four behind the busy head are parked");

    receiver
        .wait_for("all five", WAIT, |seen| seen.len() >= 5)
        .await;
    wait_state(&m, sub, "entregada", 5).await;
    let seqs: Vec<i64> = receiver.seen().iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5], "in order, each once");
    assert_eq!(
        jobs_in_outbox(&m, sub).await,
        0,
        "parked deliveries have no job: the head's finish took them"
    );
    m.stop().await;
}

#[tokio::test]
async fn a_parked_first_attempt_is_claimed_after_its_commit_when_its_lane_freed() {
    // No dispatcher runs: the test makes the commits and the claims.
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let receiver = Receiver::start().await;
    let sub = subscribe(&m, &t, &receiver, json!({})).await;
    let instance = t.instances[0];
    let lease = Duration::from_secs(60);
    let append = |n: i64| append_handing(&m.db.pool, instance, n, lease);
    let head = append(1).await;
    assert_eq!(head.claimed.len(), 1, "a free lane's head is claimed");
    let head = head.claimed[0].delivery_id;
    let behind = append(2).await;
    assert!(behind.claimed.is_empty() && behind.jobs.is_empty());
    assert_eq!(behind.parked.len(), 1, "the one behind the head is parked");
    // It names its lane, for the lane's chain in this process to take.
    let lane = &behind.parked[0];
    assert_eq!(
        (lane.subscription_id, lane.instance_id, lane.lane.clone()),
        (sub, instance, Lane::Live)
    );
    let behind = parked_ids(behind);
    assert_eq!(jobs_in_outbox(&m, sub).await, 0);

    // The head is open: nothing to claim, it stays parked.
    let claimed = motor_store::deliveries::claim_freed(&m.db.pool, &behind, lease)
        .await
        .unwrap();
    assert!(claimed.is_empty());

    // The head's finish is in flight (it could not see the parked one):
    // the claim waits for it, then finds the lane free.
    let mut finish = m.db.pool.begin().await.unwrap();
    deliver(&mut finish, head).await.unwrap();
    let claiming = spawn_claim_freed(&m, &behind, lease);
    waits_for_a_lock(&m.db.pool).await;
    finish.commit().await.unwrap();
    let claimed = claiming.await.unwrap().unwrap();
    assert_eq!(claimed.len(), 1, "claimed once the head's finish committed");
    assert_eq!(
        (claimed[0].delivery_id, claimed[0].seq, claimed[0].attempt),
        (behind[0], 2, 1)
    );
    assert!(!claimed[0].envelope.is_empty());
    // Claimed once: a second try finds it leased.
    let again = motor_store::deliveries::claim_freed(&m.db.pool, &behind, lease)
        .await
        .unwrap();
    assert!(again.is_empty());
    m.stop().await;
}

#[tokio::test]
async fn freeing_parked_first_attempts_never_holds_a_lane_while_waiting_for_another() {
    // No dispatcher runs: the test makes the commits, the finishes and the
    // claims.
    let m = TestMotor::start(&[Role::Api]).await;
    // A group commit finishing both heads has locked B's; freeing the
    // parked ones waits for it (its finish may have missed B's)...
    let ([head_a, _], parked, mut finish, claiming) = freeing_while_b_finishes(&m).await;
    waits_for_a_lock(&m.db.pool).await;
    // ...without holding A's head: the group commit goes on to it. (Held,
    // Postgres would see a deadlock and abort one of the two.)
    let finished_a = deliver(&mut finish, head_a).await;
    assert!(finished_a.is_ok(), "{finished_a:?}");
    finish.commit().await.unwrap();
    let claimed = claiming.await.unwrap().unwrap();
    // B's is claimed once its head's finish committed; A's finish (made by
    // hand here, not by the group commit, which would have claimed it)
    // leaves A's parked.
    let claimed: Vec<_> = claimed.iter().map(|c| c.delivery_id).collect();
    assert_eq!(claimed, vec![parked[1]]);
    m.stop().await;
}

#[tokio::test]
async fn a_finish_in_flight_is_waited_for_without_a_lock_while_it_commits_soon() {
    // No dispatcher runs: the test makes the commits, the finishes and the
    // claims.
    let m = TestMotor::start(&[Role::Api]).await;
    // B's head is being finished (locked) and A's is open.
    let (_, parked, finish, claiming) = freeing_while_b_finishes(&m).await;
    // Its first waits (2 + 4 + 8 + 16 ms) hold no lock and no connection:
    // nobody waits for B's head meanwhile.
    let watched = tokio::time::Instant::now();
    while watched.elapsed() < Duration::from_millis(20) {
        assert_eq!(
            sessions_waiting_for_a_lock(&m.db.pool).await,
            0,
            "freeing parked first attempts waits for a lock"
        );
    }
    finish.commit().await.unwrap();
    // B's lane is free once its finish committed: its parked one is
    // claimed at a later try; A's stays parked behind its open head.
    assert_eq!(claimed_ids(claiming).await, vec![parked[1]]);
    m.stop().await;
}

#[tokio::test]
async fn one_look_for_several_callers_gives_each_its_own_lanes() {
    // No dispatcher runs: the test makes the commits, the finishes and the
    // looks (the dispatcher's group commit of looks makes the same call).
    let m = TestMotor::start(&[Role::Api]).await;
    let lease = Duration::from_secs(60);
    // Lane A freed (its head delivered), lane B's head being finished.
    let ([head_a, head_b], parked) = two_busy_lanes(&m, lease).await;
    let mut conn = m.db.pool.acquire().await.unwrap();
    deliver(&mut conn, head_a).await.unwrap();
    let mut finish = m.db.pool.begin().await.unwrap();
    deliver(&mut finish, head_b).await.unwrap();
    // Three callers in one call: A's parked one given by the first two.
    let callers: [&[DeliveryId]; 3] = [&parked[..1], &parked[..], &parked[1..]];
    let freed = motor_store::deliveries::look_freed(&m.db.pool, &callers, lease)
        .await
        .unwrap();
    let claimed =
        |i: usize| -> Vec<DeliveryId> { freed[i].claimed.iter().map(|c| c.delivery_id).collect() };
    // A's is claimed once, for the first caller that gave it; the second
    // finds it taken. B's lane is still finishing for both that gave it.
    assert_eq!(claimed(0), vec![parked[0]]);
    assert!(freed[0].finishing.is_empty());
    assert!(claimed(1).is_empty());
    assert_eq!(freed[1].finishing, vec![parked[1]]);
    assert!(claimed(2).is_empty());
    assert_eq!(freed[2].finishing, vec![parked[1]]);
    let lease_a = freed[0].claimed[0].lease_until;
    assert!(lease_a > chrono::Utc::now() + chrono::Duration::seconds(50));
    // Once B's finish committed, a look claims B's.
    finish.commit().await.unwrap();
    let freed = motor_store::deliveries::look_freed(&m.db.pool, &callers[2..], lease)
        .await
        .unwrap();
    let claimed: Vec<_> = freed[0].claimed.iter().map(|c| c.delivery_id).collect();
    assert_eq!(claimed, vec![parked[1]]);
    // Nobody claimed either twice: each is leased once, for its first
    // attempt.
    let leased: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM deliveries
         WHERE id = ANY ($1) AND reservado_hasta IS NOT NULL AND aparcado_en IS NULL",
    )
    .bind(parked.iter().map(|p| *p.as_uuid()).collect::<Vec<_>>())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(leased, 2);
    m.stop().await;
}

#[tokio::test]
async fn a_lane_freed_while_parked_first_attempts_are_checked_is_claimed_too() {
    // No dispatcher runs. Lane A is free (its head delivered), lane B's
    // head is open; a first attempt is parked behind each.
    let m = TestMotor::start(&[Role::Api]).await;
    let lease = Duration::from_secs(60);
    let ([head_a, head_b], parked) = two_busy_lanes(&m, lease).await;
    let mut conn = m.db.pool.acquire().await.unwrap();
    deliver(&mut conn, head_a).await.unwrap();

    // The claim of A's parked one waits for a lock held here; B's head
    // finishes meanwhile: after the claiming statement's snapshot, before
    // the check that follows it.
    let mut holding = m.db.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM deliveries WHERE id = $1 FOR UPDATE")
        .bind(parked[0].as_uuid())
        .execute(&mut *holding)
        .await
        .unwrap();
    let claiming = spawn_claim_freed(&m, &parked, lease);
    waits_for_a_lock(&m.db.pool).await;
    deliver(&mut conn, head_b).await.unwrap();
    holding.commit().await.unwrap();

    // Both are claimed: B's lane freed between the two statements.
    assert_eq!(claimed_ids(claiming).await, parked);
    m.stop().await;
}

#[tokio::test]
async fn a_group_commit_that_waited_for_a_lock_sees_first_attempts_parked_meanwhile() {
    // No dispatcher runs. Two lanes' heads, claimed; the group commit of
    // both finishes waits for a lock on A's (its first statement's
    // snapshot taken) while B's next event commits parked behind B's head,
    // which nobody holds yet: the check after that commit leaves it to
    // B's finish.
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let receiver = Receiver::start().await;
    subscribe(&m, &t, &receiver, json!({})).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let lease = Duration::from_secs(60);
    let head_a = append_handing(&m.db.pool, a, 1, lease).await.claimed[0].clone();
    let head_b = append_handing(&m.db.pool, b, 1, lease).await.claimed[0].clone();
    let mut holding = m.db.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM deliveries WHERE id = $1 FOR UPDATE")
        .bind(head_a.delivery_id.as_uuid())
        .execute(&mut *holding)
        .await
        .unwrap();
    let recording = tokio::spawn({
        let pool = m.db.pool.clone();
        let (head_a, head_b) = (head_a.clone(), head_b.clone());
        async move {
            let attempt = Attempt {
                started_at: chrono::Utc::now(),
                duration: std::time::Duration::from_millis(3),
                status: Some(204),
                error: None,
                key_ids: vec!["whk_a".into()],
            };
            motor_store::deliveries::record_delivered_many(
                &pool,
                &[
                    (&head_a, &attempt, Next::Claim(lease)),
                    (&head_b, &attempt, Next::Claim(lease)),
                ],
            )
            .await
        }
    });
    waits_for_a_lock(&m.db.pool).await;
    let behind = parked_ids(append_handing(&m.db.pool, b, 2, lease).await);
    assert_eq!(behind.len(), 1);
    let freed = motor_store::deliveries::claim_freed(&m.db.pool, &behind, lease)
        .await
        .unwrap();
    assert!(freed.is_empty(), "B's head is open and unheld");
    holding.commit().await.unwrap();

    // B's finish claims it: what follows a head is read once every head
    // is locked, after that commit.
    let recorded = recording.await.unwrap().unwrap();
    match &recorded[1] {
        Recorded::Done {
            next: Some(next), ..
        } => assert_eq!(next.delivery_id, behind[0]),
        other => panic!("B's next one was not claimed: {other:?}"),
    }
    m.stop().await;
}

/// A commit tells its process's relay whether its outbox records were
/// events alone (the relay may gather those longer): so with no
/// subscription, and with every delivery taken by the dispatcher here;
/// not when it wrote a delivery job, as a commit with no dispatcher does.
#[tokio::test]
async fn a_commit_says_whether_it_wrote_events_alone() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let lease = Duration::from_secs(60);
    let alone = append_taking(&m.db.pool, instance, (1, 1), lease, &[]).await;
    assert!(alone.handed.events_only, "no subscription: events alone");

    let receiver = Receiver::start().await;
    let sub = subscribe(&m, &t, &receiver, json!({})).await;
    let taken = append_taking(&m.db.pool, instance, (2, 1), lease, &[]).await;
    assert_eq!(taken.handed.claimed.len(), 1);
    assert!(taken.handed.events_only, "claimed at insert: no job");

    let events = [NewEvent::parse(&json!({"type": "message.sent", "data": {}}), "e").unwrap()];
    let mut tx = m.db.pool.begin().await.unwrap();
    let locked = motor_store::ledger::lock_instance(&mut tx, instance)
        .await
        .unwrap();
    let queued = motor_store::ledger::append_locked_handing(&mut tx, locked, &events, None)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        jobs_in_outbox(&m, sub).await,
        1,
        "no dispatcher here: a job"
    );
    assert!(!queued.handed.events_only, "a job for a dispatcher");
    m.stop().await;
}

/// The fan-out asks whether a subscription is held by its throttle once a
/// new delivery, and answers from what it inserted: 10 events to an
/// ordered and an unordered subscription, 20 deliveries, 20 probes, and
/// the claims it hands over as the rows hold them. `taken` as a lateral
/// of `placed`, pulled up into each of its uses, and the answer's own
/// probe after the insert, probed it 90 times.
#[tokio::test]
async fn the_fan_out_probes_the_throttle_once_a_delivery_and_answers_as_it_stored() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let receiver = Receiver::start().await;
    subscribe(&m, &t, &receiver, json!({})).await;
    subscribe(&m, &t, &receiver, json!({"ordenado": false})).await;
    let (events, taking) = (numbered(0, 10), taking_for(Duration::from_secs(30), &[]));
    let mut tx = m.db.pool.begin().await.unwrap();
    let locked = motor_store::ledger::lock_instance(&mut tx, t.instances[0])
        .await
        .unwrap();
    let before = scans(&mut tx, "subscription_throttle").await;
    let appended =
        motor_store::ledger::append_locked_handing(&mut tx, locked, &events, Some(&taking))
            .await
            .unwrap();
    let after = scans(&mut tx, "subscription_throttle").await;
    let created: i64 = sqlx::query_scalar("SELECT count(*) FROM deliveries")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    // The ordered lane's head and the unordered subscription's 8 (its
    // room), each as its row holds it.
    let claimed = &appended.handed.claimed;
    assert_eq!(claimed.len(), 9);
    for c in claimed {
        let stored: (
            chrono::DateTime<chrono::Utc>,
            chrono::DateTime<chrono::Utc>,
            i64,
        ) = sqlx::query_as("SELECT reservado_hasta, creado_en, seq FROM deliveries WHERE id = $1")
            .bind(c.delivery_id.as_uuid())
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        assert_eq!((c.lease_until, c.created_at, c.seq), stored);
    }
    tx.rollback().await.unwrap();
    assert_eq!(created, 20);
    assert_eq!(after - before, created, "one probe a delivery");
    m.stop().await;
}
