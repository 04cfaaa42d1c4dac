//! `POST /v1/subscriptions/{id}/replays`: what a replay creates (new
//! deliveries of the same events, in the replay's own lane, only what the
//! subscription covers) and which jobs it writes (the lane head when
//! ordered, none when paused). Every limit and the Idempotency-Key are in
//! `replays/limits.rs`; scopes, restrictions and the operator's route in
//! `replays/access.rs`.

mod access;
mod limits;

use std::time::Duration;

use motor::serve::Role;
use motor_domain::{
    delivery::{DeliveryId, Lane, ReplayId},
    subscription::SubscriptionId,
    EventId, InstanceId,
};
use motor_store::{
    deliveries::{claim, release_lane_heads, Claim},
    Pool,
};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::Row;
use uuid::Uuid;

use crate::{
    deliveries::{set_state, subscribe},
    subscriptions::{assert_field, call},
    util::{Tenant, TestMotor},
};

/// One replay request with an optional Idempotency-Key.
pub async fn replay_at(
    m: &TestMotor,
    path: &str,
    token: &str,
    idempotency_key: Option<&str>,
    body: &Value,
) -> (StatusCode, Value) {
    let mut req = m.http.post(m.url(path)).bearer_auth(token).json(body);
    if let Some(k) = idempotency_key {
        req = req.header("Idempotency-Key", k);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")),
    )
}

pub async fn replay(
    m: &TestMotor,
    token: &str,
    sub: SubscriptionId,
    idempotency_key: Option<&str>,
    body: &Value,
) -> (StatusCode, Value) {
    let path = format!("/v1/subscriptions/{sub}/replays");
    replay_at(m, &path, token, idempotency_key, body).await
}

/// A replay that must be accepted; its answer.
pub async fn replay_ok(m: &TestMotor, t: &Tenant, sub: SubscriptionId, body: Value) -> Value {
    let k = Uuid::new_v4().to_string();
    let (status, answer) = replay(m, &t.token, sub, Some(&k), &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    answer
}

pub fn replay_id(answer: &Value) -> ReplayId {
    answer["replay_id"].as_str().unwrap().parse().unwrap()
}

/// Appends events of these types to an instance; their event ids in order.
pub async fn append(
    m: &TestMotor,
    t: &Tenant,
    instance: InstanceId,
    types: &[&str],
) -> Vec<EventId> {
    let events: Vec<Value> = types
        .iter()
        .map(|ty| json!({"type": ty, "data": {"n": 1}}))
        .collect();
    let (status, answer) = call(
        m,
        Method::POST,
        &format!("/v1/instances/{instance}/events"),
        &t.token,
        Some(Value::Array(events)),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().parse().unwrap())
        .collect()
}

/// A replay's deliveries as (delivery id, instance, seq, event id), by
/// instance and seq.
pub async fn lane_deliveries(pool: &Pool, lane: ReplayId) -> Vec<(Uuid, Uuid, i64, Uuid)> {
    sqlx::query(
        "SELECT id, instance_id, seq, event_id FROM deliveries WHERE lane = $1
         ORDER BY instance_id, seq",
    )
    .bind(lane.to_string())
    .fetch_all(pool)
    .await
    .unwrap()
    .iter()
    .map(|r| {
        (
            r.get("id"),
            r.get("instance_id"),
            r.get("seq"),
            r.get("event_id"),
        )
    })
    .collect()
}

/// The delivery ids the outbox holds jobs for on the `deliveries` topic
/// in one lane, in outbox order.
pub async fn lane_jobs(pool: &Pool, lane: ReplayId) -> Vec<Uuid> {
    sqlx::query_scalar(
        "SELECT d.id FROM outbox o JOIN deliveries d ON d.id = (o.headers->>'delivery_id')::uuid
         WHERE o.topic = 'deliveries' AND d.lane = $1 ORDER BY o.id",
    )
    .bind(lane.to_string())
    .fetch_all(pool)
    .await
    .unwrap()
}

pub async fn count(pool: &Pool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

pub fn range(instance: InstanceId, desde: i64, hasta: i64) -> Value {
    json!({"instancia_id": instance, "desde_seq": desde, "hasta_seq": hasta, "motivo": "caída"})
}

#[tokio::test]
async fn a_replay_makes_new_deliveries_of_the_same_events_in_its_own_lane() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let sub = subscribe(&m, &t, json!({})).await;
    let events = append(&m, &t, a, &["t"; 5]).await;
    append(&m, &t, b, &["t"; 2]).await;

    let answer = replay_ok(&m, &t, sub, range(a, 2, 4)).await;
    let fields: Vec<&str> = answer
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        ["replay_id", "suscripcion_id", "entregas", "creado_en"]
    );
    assert_eq!(answer["suscripcion_id"], sub.to_string());
    assert_eq!(answer["entregas"], 3);
    assert!(motor_domain::time::parse(answer["creado_en"].as_str().unwrap()).is_some());

    let id = replay_id(&answer);
    let replayed = lane_deliveries(&m.db.pool, id).await;
    let seqs: Vec<i64> = replayed.iter().map(|d| d.2).collect();
    assert_eq!(seqs, [2, 3, 4]);
    for (delivery, instance, seq, event) in &replayed {
        assert_eq!(*instance, Uuid::from(a));
        assert_eq!(*event, Uuid::from(events[*seq as usize - 1]));
        let live: Uuid =
            sqlx::query_scalar("SELECT id FROM deliveries WHERE event_id = $1 AND lane = 'live'")
                .bind(event)
                .fetch_one(&m.db.pool)
                .await
                .unwrap();
        assert_ne!(*delivery, live, "a replay makes a new delivery id");
    }
    let row = sqlx::query(
        "SELECT subscription_id, app_id, idempotency_key, motivo, entregas, solicitado_por, pedido
         FROM replays WHERE id = $1",
    )
    .bind(Uuid::from(id))
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(row.get::<Uuid, _>("subscription_id"), *sub.as_uuid());
    assert_eq!(row.get::<Uuid, _>("app_id"), Uuid::from(t.app));
    assert_eq!(row.get::<String, _>("motivo"), "caída");
    assert_eq!(row.get::<i32, _>("entregas"), 3);
    assert!(row.get::<String, _>("solicitado_por").starts_with("key_"));
    assert_eq!(
        row.get::<Value, _>("pedido"),
        json!({"range": {"instancia_id": a, "desde_seq": 2, "hasta_seq": 4}})
    );

    // Ordered: one job, for the head of the lane; the rest would park.
    let jobs = lane_jobs(&m.db.pool, id).await;
    assert_eq!(jobs, [replayed[0].0]);
    let Claim::Claimed(head) = claim(
        &m.db.pool,
        DeliveryId::from_uuid(replayed[0].0),
        1,
        Duration::from_secs(30),
    )
    .await
    .unwrap() else {
        panic!("the replay's head is claimable although the live lane is open")
    };
    assert_eq!(head.lane, Lane::Replay(id));
    // The stored envelope, byte for byte: same event_id and occurred_at.
    let stored: String = sqlx::query_scalar("SELECT envelope FROM events WHERE event_id = $1")
        .bind(replayed[0].3)
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(head.envelope, stored);
    let second = claim(
        &m.db.pool,
        DeliveryId::from_uuid(replayed[1].0),
        1,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    assert_eq!(second, Claim::Parked, "the lane keeps seq order");
}

#[tokio::test]
async fn an_ordered_replay_over_instances_gets_one_job_per_head_and_an_unordered_one_per_delivery()
{
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let ordered = subscribe(&m, &t, json!({})).await;
    let unordered = subscribe(&m, &t, json!({"ordenado": false})).await;
    let mut ids = append(&m, &t, a, &["t"; 3]).await;
    ids.extend(append(&m, &t, b, &["t"; 2]).await);
    let body = json!({"event_ids": ids, "motivo": "re-cargar"});

    let answer = replay_ok(&m, &t, ordered, body.clone()).await;
    assert_eq!(answer["entregas"], 5);
    let lane = lane_deliveries(&m.db.pool, replay_id(&answer)).await;
    let mut heads: Vec<Uuid> = lane.iter().filter(|d| d.2 == 1).map(|d| d.0).collect();
    heads.sort();
    let mut jobs = lane_jobs(&m.db.pool, replay_id(&answer)).await;
    jobs.sort();
    assert_eq!(jobs, heads, "one job per instance: the lane's head");

    let answer = replay_ok(&m, &t, unordered, body).await;
    assert_eq!(answer["entregas"], 5);
    let lane = lane_deliveries(&m.db.pool, replay_id(&answer)).await;
    let mut all: Vec<Uuid> = lane.iter().map(|d| d.0).collect();
    all.sort();
    let mut jobs = lane_jobs(&m.db.pool, replay_id(&answer)).await;
    jobs.sort();
    assert_eq!(jobs, all, "unordered: every delivery goes out at once");
}

#[tokio::test]
async fn only_what_the_subscription_covers_is_replayed() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let other = m.tenant(1).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let sub = subscribe(&m, &t, json!({"instancias": [a], "tipos": ["si"]})).await;
    let on_a = append(&m, &t, a, &["si", "no", "si"]).await;
    let on_b = append(&m, &t, b, &["si"]).await;
    let foreign = append(&m, &other, other.instances[0], &["si"]).await;

    let mut listed: Vec<EventId> = on_a.clone();
    listed.extend(&on_b);
    listed.extend(&foreign);
    listed.push(EventId::new()); // unknown: skipped like the others
    let answer = replay_ok(&m, &t, sub, json!({"event_ids": listed, "motivo": "m"})).await;
    assert_eq!(answer["entregas"], 2);
    let got: Vec<Uuid> = lane_deliveries(&m.db.pool, replay_id(&answer))
        .await
        .iter()
        .map(|d| d.3)
        .collect();
    assert_eq!(got, [Uuid::from(on_a[0]), Uuid::from(on_a[2])]);

    // A range of an instance the subscription does not name: nothing.
    let answer = replay_ok(&m, &t, sub, range(b, 1, 10)).await;
    assert_eq!(answer["entregas"], 0);
    // A range past the end of the ledger: what exists.
    let answer = replay_ok(&m, &t, sub, range(a, 2, 10_001)).await;
    assert_eq!(answer["entregas"], 1);
    // An instance of another app.
    let k = Uuid::new_v4().to_string();
    let answer = replay(
        &m,
        &t.token,
        sub,
        Some(&k),
        &range(other.instances[0], 1, 1),
    )
    .await;
    assert_field(&answer, "body.instancia_id");
    // Nothing of the other app was touched.
    assert_eq!(
        count(
            &m.db.pool,
            &format!(
                "SELECT count(*) FROM deliveries WHERE app_id = '{}' AND lane <> 'live'",
                other.app
            )
        )
        .await,
        0
    );
}

#[tokio::test]
async fn a_paused_subscription_accumulates_a_replay_and_a_deleted_one_refuses_it() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    append(&m, &t, a, &["t"; 3]).await;
    set_state(&m, &t, sub, "pausada").await;
    let jobs_before = count(
        &m.db.pool,
        "SELECT count(*) FROM outbox WHERE topic = 'deliveries'",
    )
    .await;

    let answer = replay_ok(&m, &t, sub, range(a, 1, 3)).await;
    assert_eq!(answer["entregas"], 3);
    let id = replay_id(&answer);
    assert_eq!(lane_deliveries(&m.db.pool, id).await.len(), 3);
    assert!(lane_jobs(&m.db.pool, id).await.is_empty());
    assert_eq!(
        count(
            &m.db.pool,
            "SELECT count(*) FROM outbox WHERE topic = 'deliveries'"
        )
        .await,
        jobs_before,
        "no job while paused"
    );
    assert_eq!(
        count(
            &m.db.pool,
            &format!(
                "SELECT count(*) FROM deliveries WHERE lane = '{id}' AND estado = 'pendiente'"
            )
        )
        .await,
        3
    );

    // Reactivation releases the replay's head like any lane's (what the
    // reactivating transaction runs, after the change).
    let mut conn = m.db.pool.acquire().await.unwrap();
    sqlx::query("UPDATE subscriptions SET estado = 'activa' WHERE id = $1")
        .bind(*sub.as_uuid())
        .execute(&mut *conn)
        .await
        .unwrap();
    let released = release_lane_heads(&mut conn, sub).await.unwrap();
    assert!(released
        .iter()
        .any(|j| j.lane == Lane::Replay(id) && j.seq == 1));
    assert_eq!(lane_jobs(&m.db.pool, id).await.len(), 1);

    let (status, _) = call(
        &m,
        Method::DELETE,
        &format!("/v1/subscriptions/{sub}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, answer) = replay(&m, &t.token, sub, Some("late"), &range(a, 1, 3)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(count(&m.db.pool, "SELECT count(*) FROM replays").await, 1);
}

/// Replays created while producers append to the same instance: the
/// appends lock the instance and both write deliveries of one subscription
/// (until migration 0014, foreign keys also share-locked the subscription
/// and the event), so neither may wait for a lock the other holds while
/// holding one the other waits for. Every replay is accepted, every append
/// stored — no deadlock answered as a 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replays_during_live_appends_never_deadlock() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let sub = subscribe(&m, &t, json!({})).await;
    let instance = t.instances[0];
    append(&m, &t, instance, &["message.sent"; 20]).await;

    let mut tasks = Vec::new();
    for w in 0..4 {
        let (http, url, token) = (m.http.clone(), m.url(""), t.token.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..40 {
                let res = http
                    .post(format!("{url}/v1/instances/{instance}/events"))
                    .bearer_auth(&token)
                    .json(&json!([{"type": "message.sent", "data": {"w": w, "i": i}},
                                  {"type": "message.sent", "data": {"w": w, "i": i}}]))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), StatusCode::CREATED);
            }
        }));
    }
    for r in 0..30 {
        let body = json!({"instancia_id": instance, "desde_seq": 1, "hasta_seq": 20,
                          "motivo": format!("replay {r}")});
        let (status, answer) = replay(&m, &t.token, sub, Some(&format!("k{r}")), &body).await;
        assert_eq!(status, StatusCode::ACCEPTED, "replay {r}: {answer}");
    }
    for task in tasks {
        task.await.unwrap();
    }
    m.stop().await;
}
