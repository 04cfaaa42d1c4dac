//! Deliveries: the fan-out in the ingest transaction (which subscriptions,
//! which jobs) here, with the helpers the other files share; claims and
//! lanes in `lanes.rs`, each decision in `outcomes.rs`, reactivation and the
//! sweeper in `sweep.rs`, the read API in `api.rs`.

mod api;
mod chain;
mod functions;
mod hints;
mod lanes;
mod outcomes;
mod plans;
mod retention;
mod sweep;

use std::{collections::BTreeSet, time::Duration};

use motor::serve::Role;
use motor_domain::{
    delivery::{DeliveryId, DeliveryJob, Lane},
    subscription::SubscriptionId,
    InstanceId,
};
use motor_store::Pool;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::Row;
use uuid::Uuid;

use crate::{
    subscriptions::{call, create_ok},
    util::{Tenant, TestMotor},
};

/// Posts events (one object or an array) to an instance; expects 200/201.
pub async fn post(m: &TestMotor, t: &Tenant, instance: InstanceId, body: Value) -> Value {
    let (status, answer) = call(
        m,
        Method::POST,
        &format!("/v1/instances/{instance}/events"),
        &t.token,
        Some(body),
    )
    .await;
    assert!(status.is_success(), "{status} {answer}");
    answer
}

/// Creates a subscription through the API (`extra` adds fields) and
/// returns its id.
pub async fn subscribe(m: &TestMotor, t: &Tenant, extra: Value) -> SubscriptionId {
    let created = create_ok(m, t, extra).await;
    created["suscripcion"]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// PATCHes a subscription's `estado`.
pub async fn set_state(m: &TestMotor, t: &Tenant, sub: SubscriptionId, estado: &str) {
    let (status, body) = call(
        m,
        Method::PATCH,
        &format!("/v1/subscriptions/{sub}"),
        &t.token,
        Some(json!({ "estado": estado })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// `(instance, seq)` of every delivery of a subscription, in that order.
pub async fn delivered_events(pool: &Pool, sub: SubscriptionId) -> Vec<(InstanceId, i64)> {
    sqlx::query(
        "SELECT instance_id, seq FROM deliveries WHERE subscription_id = $1
         ORDER BY instance_id, seq",
    )
    .bind(sub.as_uuid())
    .fetch_all(pool)
    .await
    .unwrap()
    .iter()
    .map(|r| (InstanceId::from_uuid(r.get("instance_id")), r.get("seq")))
    .collect()
}

/// The live delivery of (subscription, instance, seq).
pub async fn delivery(
    pool: &Pool,
    sub: SubscriptionId,
    instance: InstanceId,
    seq: i64,
) -> DeliveryId {
    let id: Uuid = sqlx::query_scalar(
        "SELECT id FROM deliveries
         WHERE subscription_id = $1 AND instance_id = $2 AND seq = $3 AND lane = 'live'",
    )
    .bind(sub.as_uuid())
    .bind(instance.as_uuid())
    .bind(seq)
    .fetch_one(pool)
    .await
    .unwrap();
    DeliveryId::from_uuid(id)
}

/// A job record in the outbox.
#[derive(Debug, Clone)]
pub struct OutJob {
    pub key: String,
    pub job: DeliveryJob,
    pub headers: Value,
}

/// The outbox records on `topic` (suffix), in id order, read as jobs.
pub async fn jobs(pool: &Pool, topic: &str) -> Vec<OutJob> {
    sqlx::query("SELECT key, payload, headers FROM outbox WHERE topic = $1 ORDER BY id")
        .bind(topic)
        .fetch_all(pool)
        .await
        .unwrap()
        .iter()
        .map(|r| OutJob {
            key: r.get("key"),
            job: DeliveryJob::from_json(&r.get::<Vec<u8>, _>("payload")).unwrap(),
            headers: r.get::<sqlx::types::Json<Value>, _>("headers").0,
        })
        .collect()
}

pub async fn clear_outbox(pool: &Pool) {
    sqlx::query("DELETE FROM outbox")
        .execute(pool)
        .await
        .unwrap();
}

fn ev(event_type: &str) -> Value {
    json!({"type": event_type, "data": {"x": 1}})
}

#[tokio::test]
async fn fan_out_covers_exactly_the_matching_subscriptions() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(3).await;
    let (a, b, c) = (t.instances[0], t.instances[1], t.instances[2]);
    let all = subscribe(&m, &t, json!({})).await;
    let only_a = subscribe(&m, &t, json!({"instancias": [a.to_string()]})).await;
    let received = subscribe(&m, &t, json!({"tipos": ["message.received"]})).await;
    let a_and_b_sent = subscribe(
        &m,
        &t,
        json!({"instancias": [a.to_string(), b.to_string()], "tipos": ["message.sent", "x.y"]}),
    )
    .await;
    let paused = subscribe(&m, &t, json!({"ordenado": false})).await;
    set_state(&m, &t, paused, "pausada").await;
    let suspended = subscribe(&m, &t, json!({})).await;
    let mut conn = m.db.pool.acquire().await.unwrap();
    assert!(motor_store::subscriptions::suspend(
        &mut conn,
        suspended,
        motor_domain::subscription::SuspensionReason::Rejected401,
        "test"
    )
    .await
    .unwrap());
    drop(conn);
    let deleted = subscribe(&m, &t, json!({})).await;
    let (status, _) = call(
        &m,
        Method::DELETE,
        &format!("/v1/subscriptions/{deleted}"),
        &t.token,
        None,
    )
    .await;
    assert!(status.is_success());
    // Another app's subscription never sees these events.
    let other = m.tenant(1).await;
    let foreign = subscribe(&m, &other, json!({})).await;

    post(
        &m,
        &t,
        a,
        json!([ev("message.received"), ev("message.sent")]),
    )
    .await; // a:1, a:2
    post(&m, &t, b, ev("message.sent")).await; // b:1
    post(&m, &t, c, json!([ev("message.received"), ev("other")])).await; // c:1, c:2

    let expect = |pairs: &[(InstanceId, i64)]| {
        let mut v = pairs.to_vec();
        v.sort();
        v
    };
    let everything = expect(&[(a, 1), (a, 2), (b, 1), (c, 1), (c, 2)]);
    assert_eq!(delivered_events(&m.db.pool, all).await, everything);
    assert_eq!(
        delivered_events(&m.db.pool, only_a).await,
        expect(&[(a, 1), (a, 2)])
    );
    assert_eq!(
        delivered_events(&m.db.pool, received).await,
        expect(&[(a, 1), (c, 1)])
    );
    assert_eq!(
        delivered_events(&m.db.pool, a_and_b_sent).await,
        expect(&[(a, 2), (b, 1)])
    );
    // Paused and suspended accumulate; deleted and foreign get none.
    assert_eq!(delivered_events(&m.db.pool, paused).await, everything);
    assert_eq!(delivered_events(&m.db.pool, suspended).await, everything);
    assert!(delivered_events(&m.db.pool, deleted).await.is_empty());
    assert!(delivered_events(&m.db.pool, foreign).await.is_empty());

    // Every delivery starts pendiente, no attempts, due now, unleased, live.
    let rows = sqlx::query(
        "SELECT d.estado, d.intentos, d.lane, d.reservado_hasta IS NULL AS free,
                d.proximo_intento <= now() AS due, d.app_id, e.event_id = d.event_id AS same_event
         FROM deliveries d JOIN events e ON e.instance_id = d.instance_id AND e.seq = d.seq",
    )
    .fetch_all(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 5 + 2 + 2 + 2 + 5 + 5);
    for r in &rows {
        assert_eq!(r.get::<String, _>("estado"), "pendiente");
        assert_eq!(r.get::<i32, _>("intentos"), 0);
        assert_eq!(r.get::<String, _>("lane"), "live");
        assert!(
            r.get::<bool, _>("free") && r.get::<bool, _>("due") && r.get::<bool, _>("same_event")
        );
        assert_eq!(r.get::<Uuid, _>("app_id"), *t.app.as_uuid());
    }

    // One first-attempt job per delivery of an activa subscription, keyed by
    // instance, none for paused or suspended ones.
    let out = jobs(&m.db.pool, "deliveries").await;
    let active: BTreeSet<SubscriptionId> = [all, only_a, received, a_and_b_sent].into();
    let ids: BTreeSet<Uuid> =
        sqlx::query_scalar("SELECT id FROM deliveries WHERE subscription_id = ANY ($1)")
            .bind(active.iter().map(|s| *s.as_uuid()).collect::<Vec<_>>())
            .fetch_all(&m.db.pool)
            .await
            .unwrap()
            .into_iter()
            .collect();
    assert_eq!(out.len(), ids.len());
    let job_ids: BTreeSet<Uuid> = out.iter().map(|j| *j.job.delivery_id.as_uuid()).collect();
    assert_eq!(job_ids, ids);
    for j in &out {
        assert_eq!(
            j.headers,
            json!({
                "delivery_id": j.job.delivery_id.to_string(),
                "subscription_id": j.job.subscription_id.to_string(),
                "seq": j.job.seq.to_string(),
                "attempt": "1",
                "due_at": motor_domain::time::format(&j.job.due_at),
            })
        );
        assert!(active.contains(&j.job.subscription_id));
        assert_eq!(j.key, j.job.instance_id.to_string());
        assert_eq!((j.job.attempt, j.job.lane.clone()), (1, Lane::Live));
        assert!(j.job.due_at <= chrono::Utc::now());
        assert_eq!(j.headers["delivery_id"], j.job.delivery_id.to_string());
        assert_eq!(j.headers["seq"], j.job.seq.to_string());
        assert_eq!(
            delivery(
                &m.db.pool,
                j.job.subscription_id,
                j.job.instance_id,
                j.job.seq
            )
            .await,
            j.job.delivery_id
        );
    }
    // Per instance, jobs leave in seq order.
    for instance in [a, b, c] {
        let seqs: Vec<i64> = out
            .iter()
            .filter(|j| j.job.instance_id == instance)
            .map(|j| j.job.seq)
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] <= w[1]), "{seqs:?}");
    }
    m.stop().await;
}

#[tokio::test]
async fn a_known_source_id_creates_no_delivery() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    let first = json!({"type": "message.received", "data": {}, "source_id": "wamid.1"});
    post(&m, &t, a, first.clone()).await;
    // Again alone, and again inside a batch with a new one and a repeat.
    post(&m, &t, a, first.clone()).await;
    let second = json!({"type": "message.received", "data": {}, "source_id": "wamid.2"});
    post(&m, &t, a, json!([first, second.clone(), second])).await;
    assert_eq!(delivered_events(&m.db.pool, sub).await, [(a, 1), (a, 2)]);
    assert_eq!(jobs(&m.db.pool, "deliveries").await.len(), 2);
    m.stop().await;
}

#[tokio::test]
async fn the_library_append_fans_out_in_the_callers_transaction() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    let events = vec![motor_domain::event::EventBatch::parse(&ev("a.b"))
        .unwrap()
        .events()[0]
        .clone()];
    let mut tx = m.db.pool.begin().await.unwrap();
    motor_store::ledger::append(&mut tx, a, &events)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    assert!(delivered_events(&m.db.pool, sub).await.is_empty());
    assert!(jobs(&m.db.pool, "deliveries").await.is_empty());
    let mut tx = m.db.pool.begin().await.unwrap();
    motor_store::ledger::append(&mut tx, a, &events)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(delivered_events(&m.db.pool, sub).await, [(a, 1)]);
    assert_eq!(jobs(&m.db.pool, "deliveries").await.len(), 1);
    m.stop().await;
}

/// How many sessions of this database wait for a lock now.
pub async fn sessions_waiting_for_a_lock(pool: &Pool) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Returns once a session of this database waits for a row lock.
pub async fn waits_for_a_lock(pool: &Pool) {
    for _ in 0..400 {
        if sessions_waiting_for_a_lock(pool).await > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no session waits for a lock");
}
