//! `POST /v1/subscriptions/{id}/replays`: every validation at its boundary,
//! the Idempotency-Key, what a replay creates (new deliveries of the same
//! events, in the replay's own lane, only what the subscription covers) and
//! which jobs it writes (the lane head when ordered, none when paused),
//! scopes and instance restrictions, and the operator's route.

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
    subscriptions::{assert_field, call, create_ok},
    util::{key, Tenant, TestMotor, ADMIN_TOKEN},
};

/// One replay request with an optional Idempotency-Key.
async fn replay_at(
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

async fn replay(
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
async fn replay_ok(m: &TestMotor, t: &Tenant, sub: SubscriptionId, body: Value) -> Value {
    let k = Uuid::new_v4().to_string();
    let (status, answer) = replay(m, &t.token, sub, Some(&k), &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    answer
}

fn replay_id(answer: &Value) -> ReplayId {
    answer["replay_id"].as_str().unwrap().parse().unwrap()
}

async fn subscribe(m: &TestMotor, t: &Tenant, extra: Value) -> SubscriptionId {
    create_ok(m, t, extra).await["suscripcion"]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Appends events of these types to an instance; their event ids in order.
async fn append(m: &TestMotor, t: &Tenant, instance: InstanceId, types: &[&str]) -> Vec<EventId> {
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

async fn set_estado(m: &TestMotor, t: &Tenant, sub: SubscriptionId, estado: &str) {
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

/// A replay's deliveries as (delivery id, instance, seq, event id), by
/// instance and seq.
async fn lane_deliveries(pool: &Pool, lane: ReplayId) -> Vec<(Uuid, Uuid, i64, Uuid)> {
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
async fn lane_jobs(pool: &Pool, lane: ReplayId) -> Vec<Uuid> {
    sqlx::query_scalar(
        "SELECT d.id FROM outbox o JOIN deliveries d ON d.id = (o.headers->>'delivery_id')::uuid
         WHERE o.topic = 'deliveries' AND d.lane = $1 ORDER BY o.id",
    )
    .bind(lane.to_string())
    .fetch_all(pool)
    .await
    .unwrap()
}

async fn count(pool: &Pool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

fn range(instance: InstanceId, desde: i64, hasta: i64) -> Value {
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
async fn every_limit_at_its_boundary() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    let events = append(&m, &t, a, &["t"; 3]).await;
    let k = || Uuid::new_v4().to_string();
    let bad = |body: Value| {
        let m = &m;
        let t = &t;
        async move { replay(m, &t.token, sub, Some(&k()), &body).await }
    };

    // The range: 10 000 events at most, desde <= hasta, desde >= 1.
    assert_eq!(
        replay_ok(&m, &t, sub, range(a, 1, 10_000)).await["entregas"],
        3
    );
    assert_field(&bad(range(a, 1, 10_001)).await, "body.hasta_seq");
    assert_eq!(replay_ok(&m, &t, sub, range(a, 3, 3)).await["entregas"], 1);
    assert_field(&bad(range(a, 3, 2)).await, "body.hasta_seq");
    assert_field(&bad(range(a, 0, 2)).await, "body.desde_seq");
    assert_field(
        &bad(json!({"instancia_id": a, "desde_seq": 1, "motivo": "m"})).await,
        "body.hasta_seq",
    );
    assert_field(
        &bad(json!({"desde_seq": 1, "hasta_seq": 2, "motivo": "m"})).await,
        "body.instancia_id",
    );
    assert_field(
        &bad(json!({"instancia_id": "x", "desde_seq": 1, "hasta_seq": 2, "motivo": "m"})).await,
        "body.instancia_id",
    );
    assert_field(
        &bad(json!({"instancia_id": a, "desde_seq": "1", "hasta_seq": 2, "motivo": "m"})).await,
        "body.desde_seq",
    );

    // event_ids: 1 to 500; repeats count once.
    let mut ids: Vec<String> = (0..497).map(|_| EventId::new().to_string()).collect();
    ids.extend(events.iter().map(ToString::to_string));
    assert_eq!(ids.len(), 500);
    let answer = replay_ok(&m, &t, sub, json!({"event_ids": ids, "motivo": "m"})).await;
    assert_eq!(answer["entregas"], 3);
    ids.push(EventId::new().to_string());
    assert_field(
        &bad(json!({"event_ids": ids, "motivo": "m"})).await,
        "body.event_ids",
    );
    assert_field(
        &bad(json!({"event_ids": [], "motivo": "m"})).await,
        "body.event_ids",
    );
    assert_field(
        &bad(json!({"event_ids": [events[0], "nope"], "motivo": "m"})).await,
        "body.event_ids[1]",
    );

    // Both forms, or neither.
    assert_field(
        &bad(json!({"instancia_id": a, "desde_seq": 1, "hasta_seq": 2,
                    "event_ids": [events[0]], "motivo": "m"}))
        .await,
        "body.event_ids",
    );
    assert_field(&bad(json!({"motivo": "m"})).await, "body");
    assert_field(
        &bad(json!({"event_ids": [events[0]], "motivo": "m", "otro": 1})).await,
        "body.otro",
    );

    // motivo: 1 to 300 characters, required.
    let with = |motivo: Value| json!({"event_ids": [events[0]], "motivo": motivo});
    assert_field(&bad(with(json!(""))).await, "body.motivo");
    assert_field(&bad(json!({"event_ids": [events[0]]})).await, "body.motivo");
    assert_eq!(
        replay_ok(&m, &t, sub, with(json!("x"))).await["entregas"],
        1
    );
    assert_eq!(
        replay_ok(&m, &t, sub, with(json!("ñ".repeat(300)))).await["entregas"],
        1
    );
    assert_field(&bad(with(json!("ñ".repeat(301)))).await, "body.motivo");

    // Idempotency-Key: required, 1 to 200 characters.
    let body = with(json!("m"));
    assert_field(
        &replay(&m, &t.token, sub, None, &body).await,
        "header.Idempotency-Key",
    );
    assert_field(
        &replay(&m, &t.token, sub, Some(""), &body).await,
        "header.Idempotency-Key",
    );
    assert_field(
        &replay(&m, &t.token, sub, Some(&"k".repeat(201)), &body).await,
        "header.Idempotency-Key",
    );
    let (status, answer) = replay(&m, &t.token, sub, Some(&"k".repeat(200)), &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");

    // Refused requests created nothing: 6 accepted replays above.
    assert_eq!(count(&m.db.pool, "SELECT count(*) FROM replays").await, 6);
    assert_eq!(
        count(
            &m.db.pool,
            "SELECT count(*) FROM deliveries WHERE lane <> 'live'"
        )
        .await,
        3 + 1 + 3 + 1 + 1 + 1
    );
}

#[tokio::test]
async fn the_same_key_answers_the_first_replay_again_and_another_request_is_a_conflict() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    let other_sub = subscribe(&m, &t, json!({})).await;
    append(&m, &t, a, &["t"; 4]).await;
    let deliveries = "SELECT count(*) FROM deliveries";
    let outbox = "SELECT count(*) FROM outbox WHERE topic = 'deliveries'";

    let (status, first) = replay(&m, &t.token, sub, Some("k-1"), &range(a, 1, 4)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    let before = (
        count(&m.db.pool, deliveries).await,
        count(&m.db.pool, outbox).await,
    );

    // Same key, same request (keys in another order, motivo with spaces):
    // the first answer, nothing new.
    let same = json!({"motivo": " caída ", "hasta_seq": 4, "desde_seq": 1, "instancia_id": a});
    let (status, again) = replay(&m, &t.token, sub, Some("k-1"), &same).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{again}");
    assert_eq!(again, first);
    let after = (
        count(&m.db.pool, deliveries).await,
        count(&m.db.pool, outbox).await,
    );
    assert_eq!(after, before, "a repeat creates nothing");
    assert_eq!(count(&m.db.pool, "SELECT count(*) FROM replays").await, 1);

    // Same key, another request: 409, nothing new.
    for (target, body) in [
        (sub, range(a, 1, 3)),
        (
            sub,
            json!({"instancia_id": a, "desde_seq": 1, "hasta_seq": 4, "motivo": "otro"}),
        ),
        (other_sub, range(a, 1, 4)),
    ] {
        let (status, answer) = replay(&m, &t.token, target, Some("k-1"), &body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{answer}");
        assert_eq!(answer["error"]["code"], "conflicto");
    }
    assert_eq!(count(&m.db.pool, deliveries).await, before.0);
    assert_eq!(count(&m.db.pool, "SELECT count(*) FROM replays").await, 1);

    // Another key, the same request: a second replay.
    let (status, second) = replay(&m, &t.token, sub, Some("k-2"), &range(a, 1, 4)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{second}");
    assert_ne!(second["replay_id"], first["replay_id"]);
    assert_eq!(count(&m.db.pool, deliveries).await, before.0 + 4);
}

#[tokio::test]
async fn a_paused_subscription_accumulates_a_replay_and_a_deleted_one_refuses_it() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    append(&m, &t, a, &["t"; 3]).await;
    set_estado(&m, &t, sub, "pausada").await;
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

#[tokio::test]
async fn scope_restriction_and_ownership() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let other = m.tenant(1).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let on_a = append(&m, &t, a, &["t"]).await;
    let on_b = append(&m, &t, b, &["t"]).await;
    let everything = subscribe(&m, &t, json!({})).await;
    let only_a = subscribe(&m, &t, json!({"instancias": [a]})).await;
    let both = subscribe(&m, &t, json!({"instancias": [a, b]})).await;

    // The scope is deliveries:replay; subscriptions:manage is not enough.
    let manager = key(
        &m.db.pool,
        t.app,
        &["subscriptions:manage", "events:read"],
        &[],
    )
    .await;
    let (status, answer) = replay(&m, &manager, everything, Some("k"), &range(a, 1, 1)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert_eq!(answer["error"]["code"], "sin_permiso");
    let (status, _) = replay(&m, "mtr_nope", everything, Some("k"), &range(a, 1, 1)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let replayer = key(&m.db.pool, t.app, &["deliveries:replay"], &[]).await;
    let (status, answer) = replay(&m, &replayer, everything, Some("k"), &range(a, 1, 1)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");

    // A key restricted to instance a.
    let restricted = key(&m.db.pool, t.app, &["deliveries:replay"], &[a]).await;
    let forbidden = [
        // a subscription it cannot see (all instances; a and b)
        (everything, range(a, 1, 1)),
        (both, range(a, 1, 1)),
        // an instance outside its restriction
        (only_a, range(b, 1, 1)),
        (
            only_a,
            json!({"event_ids": [on_a[0], on_b[0]], "motivo": "m"}),
        ),
    ];
    for (sub, body) in &forbidden {
        let (status, answer) = replay(&m, &restricted, *sub, Some("r"), body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{sub} {body}: {answer}");
    }
    let (status, answer) = replay(&m, &restricted, only_a, Some("r"), &range(a, 1, 1)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer["entregas"], 1);

    // Another app's subscription, or none at all: 404.
    let theirs = subscribe(&m, &other, json!({})).await;
    for sub in [theirs, SubscriptionId::new()] {
        let (status, _) = replay(&m, &t.token, sub, Some("x"), &range(a, 1, 1)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    let (status, _) = replay_at(
        &m,
        "/v1/subscriptions/not-an-id/replays",
        &t.token,
        Some("x"),
        &range(a, 1, 1),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_operator_replays_for_an_app() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    append(&m, &t, a, &["t"; 2]).await;
    let path = format!("/v1/admin/apps/{}/subscriptions/{sub}/replays", t.app);

    let (status, answer) = replay_at(&m, &path, &t.token, Some("op"), &range(a, 1, 2)).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "an API key is not the operator: {answer}"
    );
    let (status, answer) = replay_at(&m, &path, ADMIN_TOKEN, None, &range(a, 1, 2)).await;
    assert_field(&(status, answer), "header.Idempotency-Key");
    let (status, answer) = replay_at(&m, &path, ADMIN_TOKEN, Some("op"), &range(a, 1, 2)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer["entregas"], 2);
    let (status, again) = replay_at(&m, &path, ADMIN_TOKEN, Some("op"), &range(a, 1, 2)).await;
    assert_eq!((status, &again), (StatusCode::ACCEPTED, &answer));
    let by: String = sqlx::query_scalar("SELECT solicitado_por FROM replays WHERE id = $1")
        .bind(Uuid::from(replay_id(&answer)))
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(by, "operador");

    // Another app's subscription through this app's route: 404.
    let other = m.tenant(1).await;
    let path = format!("/v1/admin/apps/{}/subscriptions/{sub}/replays", other.app);
    let (status, _) = replay_at(&m, &path, ADMIN_TOKEN, Some("op2"), &range(a, 1, 2)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
