//! Disabling on sustained failure (seed 003 §8): a receiver that answers
//! 503 for a (simulated) week is suspended with `fallos_sostenidos`, an
//! alert opens, and every other `activa` subscription of the app receives
//! `webhook_endpoint.disabled` through the normal pipeline, from the
//! ledger of the app's system instance. Nothing pending is lost and
//! reactivation sends it in order.
//!
//! How the week is simulated, honestly: the thresholds are set low (1 hour,
//! 5 attempts — the settings' real lower bounds) and, once the receiver
//! has failed more than 5 times within seconds, the test moves the start
//! of the failures (`subscription_health.fallando_desde`) a week back in
//! the database. The next failed attempt then finds both conditions met.

use std::time::{Duration, Instant};

use motor_domain::{subscription::SubscriptionId, InstanceId};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{patch_settings, subscription, wait_suspended};
use crate::{
    deliveries::{post, set_state},
    dispatch::{
        motor, post_many,
        receiver::{Receiver, Reply, Seen},
        states, subscribe, wait_state, WAIT,
    },
    subscriptions::call,
    util::TestMotor,
};

fn event_type(s: &Seen) -> String {
    serde_json::from_slice::<Value>(&s.body).unwrap()["type"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn system_instance(m: &TestMotor, app: motor_domain::AppId) -> InstanceId {
    let id: Uuid = sqlx::query_scalar("SELECT id FROM instances WHERE app_id = $1 AND sistema")
        .bind(app.as_uuid())
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    InstanceId::from_uuid(id)
}

async fn health_row(m: &TestMotor, sub: SubscriptionId) -> Option<i64> {
    sqlx::query_scalar(
        "SELECT fallos_consecutivos FROM subscription_health WHERE subscription_id = $1",
    )
    .bind(sub.as_uuid())
    .fetch_optional(&m.db.pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_receiver_down_for_a_week_is_disabled_and_the_others_are_told() {
    let m = motor(None).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0], t.instances[1]);

    // The settings, validated and named in the 422.
    for (key, bad) in [
        ("webhooks.desactivar_tras_horas", json!(0)),
        ("webhooks.desactivar_tras_horas", json!(721)),
        ("webhooks.desactivar_tras_horas", json!("120")),
        ("webhooks.desactivar_tras_fallos", json!(0)),
        ("webhooks.desactivar_tras_fallos", json!(1.5)),
    ] {
        let (status, body) = patch_settings(&m, json!({ key: bad })).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{key} {bad}: {body}"
        );
        assert_eq!(body["error"]["campo"], format!("body.{key}"));
    }
    let (status, body) = patch_settings(
        &m,
        json!({"webhooks.desactivar_tras_horas": 1, "webhooks.desactivar_tras_fallos": 5}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let dead = Receiver::start().await;
    dead.script(|_| Reply::status(503));
    let oncall = Receiver::start().await;
    let paused = Receiver::start().await;
    let dead_sub = subscribe(&m, &t, &dead, json!({})).await;
    // The on-call subscription names other instances and types: it is
    // told anyway.
    let oncall_sub = subscribe(
        &m,
        &t,
        &oncall,
        json!({"instancias": [b], "tipos": ["pedido.creado"]}),
    )
    .await;
    let paused_sub = subscribe(&m, &t, &paused, json!({})).await;
    set_state(&m, &t, paused_sub, "pausada").await;

    post_many(&m, &t, a, 3, "down").await;
    // Many failures within seconds: the count is met, the time is not.
    dead.wait_for("6 failed attempts", WAIT, |seen| seen.len() >= 6)
        .await;
    assert_eq!(
        subscription(&m, &t.token, dead_sub).await["estado"],
        "activa"
    );
    assert!(health_row(&m, dead_sub).await.unwrap() >= 5);

    // A week passes.
    sqlx::query(
        "UPDATE subscription_health SET fallando_desde = fallando_desde - interval '7 days'
         WHERE subscription_id = $1",
    )
    .bind(dead_sub.as_uuid())
    .execute(&m.db.pool)
    .await
    .unwrap();
    wait_suspended(&m, &t.token, dead_sub, "fallos_sostenidos").await;
    let attempts_when_disabled = dead.seen().len();

    // The on-call receiver is told, signed, from the system instance.
    oncall
        .wait_for("webhook_endpoint.disabled", WAIT, |seen| !seen.is_empty())
        .await;
    let told = oncall.seen();
    assert_eq!(told.len(), 1, "once");
    assert!(told[0].verified);
    let envelope: Value = serde_json::from_slice(&told[0].body).unwrap();
    let system = system_instance(&m, t.app).await;
    assert_eq!(envelope["type"], "webhook_endpoint.disabled");
    assert_eq!(envelope["instance_id"], system.to_string());
    assert_eq!(envelope["seq"], 1);
    let data = &envelope["data"];
    assert_eq!(data["suscripcion_id"], dead_sub.to_string());
    assert_eq!(data["nombre"], "receptor");
    assert_eq!(data["url_host"], "127.0.0.1");
    assert!(data["fallos_consecutivos"].as_i64().unwrap() >= 5, "{data}");
    assert_eq!(data["pendientes"], 3, "{data}");
    let since =
        chrono::DateTime::parse_from_rfc3339(data["fallando_desde"].as_str().unwrap()).unwrap();
    assert!(chrono::Utc::now().signed_duration_since(since) > chrono::Duration::days(7));
    wait_state(&m, oncall_sub, "entregada", 1).await;
    // Not the disabled one, not a paused one.
    assert!(dead
        .seen()
        .iter()
        .all(|s| event_type(s) != "webhook_endpoint.disabled"));
    assert!(paused.seen().is_empty());

    // The event is in the system instance's ledger, readable; only Motor
    // writes there.
    let (status, page) = call(
        &m,
        Method::GET,
        &format!("/v1/instances/{system}/events"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["events"][0], envelope);
    let (status, body) = call(
        &m,
        Method::POST,
        &format!("/v1/instances/{system}/events"),
        &t.token,
        Some(json!({"type": "webhook_endpoint.disabled", "data": {}})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (_, instances) = call(
        &m,
        Method::GET,
        &format!("/v1/admin/apps/{}/instances", t.app),
        crate::util::ADMIN_TOKEN,
        None,
    )
    .await;
    assert_eq!(
        instances["instances"].as_array().unwrap().len(),
        2,
        "hidden from the list"
    );

    // Nothing is lost: more events wait, nothing is sent.
    post(
        &m,
        &t,
        a,
        json!([{"type": "t", "data": 4}, {"type": "t", "data": 5}]),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(dead.seen().len(), attempts_when_disabled);
    assert_eq!(states(&m, dead_sub).await.get("pendiente"), Some(&5));

    // The receiver is back; reactivation sends everything, in order, and
    // starts the count afresh.
    dead.script(|_| Reply::status(204));
    let back = Instant::now();
    set_state(&m, &t, dead_sub, "activa").await;
    wait_state(&m, dead_sub, "entregada", 5).await;
    let order: Vec<i64> = dead
        .seen()
        .iter()
        .filter(|s| s.at >= back)
        .map(|s| s.seq)
        .collect();
    assert_eq!(order, [1, 2, 3, 4, 5]);
    assert_eq!(health_row(&m, dead_sub).await, None);
    let (_, alerts) = call(
        &m,
        Method::GET,
        "/v1/admin/alerts?estado=abierta",
        crate::util::ADMIN_TOKEN,
        None,
    )
    .await;
    assert_eq!(alerts["alerts"], json!([]), "reactivation closes the alert");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_success_resets_the_count_and_every_app_has_a_system_instance() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let r = Receiver::start().await;
    // Fails twice, then succeeds: the success forgets the failures.
    r.script(|s| Reply::status(if s.previous < 2 { 503 } else { 204 }));
    let sub = subscribe(&m, &t, &r, json!({})).await;
    post_many(&m, &t, t.instances[0], 1, "x").await;
    r.wait_for("2 failures", WAIT, |seen| seen.len() >= 2).await;
    wait_state(&m, sub, "entregada", 1).await;
    assert_eq!(health_row(&m, sub).await, None);

    // New apps get one with the app (apps that existed before this
    // version get theirs from migration 0009). Exactly one each.
    let per_app: Vec<i64> = sqlx::query_scalar(
        "SELECT count(*) FILTER (WHERE i.sistema) FROM apps a
         LEFT JOIN instances i ON i.app_id = a.id GROUP BY a.id",
    )
    .fetch_all(&m.db.pool)
    .await
    .unwrap();
    assert!(
        !per_app.is_empty() && per_app.iter().all(|n| *n == 1),
        "{per_app:?}"
    );
}
