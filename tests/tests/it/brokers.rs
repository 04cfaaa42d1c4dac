//! Broker destinations end to end: events posted to the API reach a real
//! RabbitMQ queue and a real JetStream stream (each made and deleted by its
//! test) through the same dispatcher, lanes, retries and suspension rules
//! as webhooks; what arrives is checked with plain clients and the
//! contract's signature recipe.

pub(crate) mod clients;
mod faults;
mod lease;

use std::{collections::HashMap, time::Duration};

use motor::serve::Role;
use motor_domain::subscription::SubscriptionId;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use self::clients::{Got, NatsSetup, RabbitSetup};
use crate::{
    deliveries::set_state,
    dispatch::{post_many, states},
    subscriptions::{allow, assert_field, call, create},
    util::{Tenant, TestDb, TestMotor, ADMIN_TOKEN, ALL_ROLES},
};

/// Motor with every role and a retry schedule of 200 ms … 1.2 s. Jobs in
/// flight are bounded near the lanes these tests run (20 at most), so a
/// backlog of thousands does not queue the API's requests behind the
/// dispatcher's on the test's small Postgres pool.
async fn motor() -> TestMotor {
    TestMotor::start_configured(TestDb::new().await, &ALL_ROLES, |c| {
        c.retry_schedule_ms = Some(vec![200, 400, 600, 800, 1000, 1200]);
        c.dispatch_in_flight = 64;
    })
    .await
}

/// A created subscription: its id and secret.
struct Sub {
    id: SubscriptionId,
    key_id: String,
    secret: String,
}

async fn subscribe(m: &TestMotor, t: &Tenant, body: Value) -> Sub {
    let (status, created) = create(m, &t.token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    Sub {
        id: created["suscripcion"]["id"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap(),
        key_id: created["secreto"]["key_id"].as_str().unwrap().to_owned(),
        secret: created["secreto"]["valor"].as_str().unwrap().to_owned(),
    }
}

/// Waits until the subscription has `n` deliveries in `estado`, failing
/// when nothing moved for `stall`.
async fn wait_state(m: &TestMotor, sub: SubscriptionId, estado: &str, n: i64, stall: Duration) {
    let mut last = None;
    let mut moved = std::time::Instant::now();
    loop {
        let now = states(m, sub).await;
        if now.get(estado) == Some(&n) {
            return;
        }
        if last.as_ref() != Some(&now) {
            last = Some(now.clone());
            moved = std::time::Instant::now();
        }
        assert!(
            moved.elapsed() < stall,
            "waiting for {n} {estado}: stuck at {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The error codes of every attempt of the subscription's deliveries.
async fn attempt_errors(m: &TestMotor, sub: SubscriptionId) -> HashMap<Option<String>, i64> {
    let rows: Vec<(Option<String>, i64)> = sqlx::query_as(
        "SELECT a.error, count(*) FROM delivery_attempts a
         JOIN deliveries d ON d.id = a.delivery_id
         WHERE d.subscription_id = $1 GROUP BY a.error",
    )
    .bind(sub.as_uuid())
    .fetch_all(&m.db.pool)
    .await
    .unwrap();
    rows.into_iter().collect()
}

/// The ledger's bytes of every event of the app, by event id.
async fn ledger(m: &TestMotor) -> HashMap<String, String> {
    let rows: Vec<(uuid::Uuid, String)> = sqlx::query_as("SELECT event_id, envelope FROM events")
        .fetch_all(&m.db.pool)
        .await
        .unwrap();
    rows.into_iter()
        .map(|(id, e)| (id.to_string(), e))
        .collect()
}

/// Checks what a queue or stream got for one subscription: every message
/// verifies with its secret, carries the delivery's headers and the
/// ledger's bytes; per instance the first occurrences are seq 1..=n in
/// order (a retry may repeat a delivery id, nothing else repeats).
fn check_arrivals(got: &[Got], sub: &Sub, ledger: &HashMap<String, String>, per_instance: usize) {
    let mut order: HashMap<String, Vec<i64>> = HashMap::new();
    let mut seen = std::collections::HashSet::new();
    for g in got {
        assert!(
            g.verifies_with(&sub.key_id, &sub.secret),
            "signature: {:?}",
            g.headers
        );
        let envelope = g.envelope();
        let event_id = envelope["event_id"].as_str().unwrap();
        assert_eq!(g.header("x-mw-event-id"), event_id);
        assert_eq!(
            std::str::from_utf8(&g.body).unwrap(),
            ledger[event_id],
            "the body is the ledger's bytes"
        );
        let instance = envelope["instance_id"].as_str().unwrap().to_owned();
        let seq = envelope["seq"].as_i64().unwrap();
        if seen.insert((instance.clone(), seq)) {
            order.entry(instance).or_default().push(seq);
        }
    }
    for (instance, seqs) in &order {
        let expected: Vec<i64> = (1..=per_instance as i64).collect();
        assert_eq!(seqs, &expected, "order of instance {instance}");
    }
}

#[tokio::test]
async fn broker_urls_and_credentials_follow_the_rules() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let ok_amqp = "amqp://127.0.0.1:5672/?exchange=motor";
    // The host must be allowed, and a loopback name is refused even when
    // listed.
    allow(&m, &["localhost"]).await;
    for url in [
        "amqp://rabbit.example.com/?exchange=x",
        "nats://nats.example.com:4222/motor.{type}",
        "amqp://localhost:5672/?exchange=x",
        "nats://localhost:4222/s",
        "amqp://127.0.0.1:5672/",
        "amqp://guest:guest@127.0.0.1:5672/?exchange=x",
        "nats://u:p@127.0.0.1:4222/s",
        "nats://127.0.0.1:4222/a.*",
        "amqp://127.0.0.1/?exchange=x&routing_key={tipo}",
    ] {
        let answer = create(&m, &t.token, json!({"nombre": "b", "url": url})).await;
        assert_field(&answer, "body.url");
    }
    for (credenciales, field) in [
        (
            json!({"usuario": "", "clave": "p"}),
            "body.credenciales.usuario",
        ),
        (json!({"usuario": "u"}), "body.credenciales.clave"),
        (json!({"clave": "p"}), "body.credenciales.usuario"),
        (json!({"token": "t"}), "body.credenciales.token"),
        (json!({}), "body.credenciales"),
    ] {
        let answer = create(
            &m,
            &t.token,
            json!({"nombre": "b", "url": ok_amqp, "credenciales": credenciales}),
        )
        .await;
        assert_field(&answer, field);
    }
    let answer = create(
        &m,
        &t.token,
        json!({"nombre": "w", "url": "http://127.0.0.1:9/h", "credenciales": {"usuario": "u", "clave": "p"}}),
    )
    .await;
    assert_field(&answer, "body.credenciales");

    // Sealed, never shown: the answers say only whether there are any.
    let (status, created) = create(
        &m,
        &t.token,
        json!({"nombre": "b", "url": ok_amqp, "credenciales": {"usuario": "ana", "clave": "clave-secreta-1"}}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["suscripcion"]["credenciales"], true);
    assert!(!created.to_string().contains("clave-secreta-1"));
    let id = created["suscripcion"]["id"].as_str().unwrap();
    let path = format!("/v1/subscriptions/{id}");
    let (_, got) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(got["credenciales"], true);
    assert!(!got.to_string().contains("clave-secreta-1"));
    let stored: Vec<u8> =
        sqlx::query_scalar("SELECT credenciales FROM subscriptions WHERE id = $1")
            .bind(id.parse::<uuid::Uuid>().unwrap())
            .fetch_one(&m.db.pool)
            .await
            .unwrap();
    assert!(!String::from_utf8_lossy(&stored).contains("clave-secreta-1"));
    // NATS takes a token; RabbitMQ does not.
    let answer = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"credenciales": {"token": "t"}})),
    )
    .await;
    assert_field(&answer, "body.credenciales.token");
    let (status, patched) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"url": "nats://127.0.0.1:4222/motor.{type}", "credenciales": {"token": "t0k3n"}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(patched["credenciales"], true);
    // null removes them; a move to a webhook drops them too.
    let (_, patched) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"credenciales": null})),
    )
    .await;
    assert_eq!(patched["credenciales"], false);
    let (_, patched) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"credenciales": {"usuario": "u", "clave": "p"}})),
    )
    .await;
    assert_eq!(patched["credenciales"], true);
    let (_, patched) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"url": "http://127.0.0.1:9/h"})),
    )
    .await;
    assert_eq!(patched["credenciales"], false, "{patched}");
    m.stop().await;
}

#[tokio::test]
async fn test_publishes_a_signed_webhook_test_to_each_broker() {
    let _rabbit = clients::RABBIT.read().await;
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let rabbit = RabbitSetup::new("probe", true, Default::default()).await;
    let stream = NatsSetup::new("probe").await;
    let probe = |id: SubscriptionId| {
        let path = format!("/v1/subscriptions/{id}/test");
        let m = &m;
        let token = t.token.clone();
        async move { call(m, Method::POST, &path, &token, None).await }
    };

    // RabbitMQ: the broker's confirm is status 200.
    let sub = subscribe(&m, &t, json!({"nombre": "r", "url": rabbit.url("")})).await;
    let (status, result) = probe(sub.id).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["status"], 200);
    assert_eq!(result["error"], Value::Null);
    let got = rabbit.take(10).await;
    assert_eq!(got.len(), 1);
    let g = &got[0];
    assert!(g.verifies_with(&sub.key_id, &sub.secret));
    assert_eq!(g.envelope()["type"], "webhook.test");
    assert_eq!(g.message_id.as_deref(), Some(g.header("x-mw-delivery-id")));
    assert_eq!(g.content_type.as_deref(), Some("application/json"));
    assert_eq!(g.delivery_mode, Some(2), "persistent");

    // No queue bound for the routing key: returned, not delivered.
    let unrouted = subscribe(
        &m,
        &t,
        json!({"nombre": "r2", "url": format!("amqp://127.0.0.1:5672/?exchange=amq.direct&routing_key=nadie-{}", uuid::Uuid::new_v4())}),
    )
    .await;
    let (_, result) = probe(unrouted.id).await;
    assert_eq!(
        (&result["ok"], &result["status"], &result["error"]),
        (&json!(false), &Value::Null, &json!("broker_sin_ruta")),
        "{result}"
    );
    // An exchange that does not exist: the same.
    let missing = subscribe(
        &m,
        &t,
        json!({"nombre": "r3", "url": format!("amqp://127.0.0.1:5672/?exchange=nada-{}", uuid::Uuid::new_v4())}),
    )
    .await;
    let (_, result) = probe(missing.id).await;
    assert_eq!(result["error"], "broker_sin_ruta", "{result}");

    // NATS: JetStream's ack is status 200.
    let sub = subscribe(&m, &t, json!({"nombre": "n", "url": stream.url("{type}")})).await;
    let (_, result) = probe(sub.id).await;
    assert_eq!(
        (&result["ok"], &result["status"]),
        (&json!(true), &json!(200)),
        "{result}"
    );
    let got = stream.read_all(1, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 1);
    assert!(got[0].verifies_with(&sub.key_id, &sub.secret));
    assert_eq!(
        got[0].header("nats-msg-id"),
        got[0].header("x-mw-delivery-id")
    );
    assert_eq!(got[0].header("content-type"), "application/json");
    assert_eq!(got[0].envelope()["type"], "webhook.test");

    // A subject no stream captures: sin_stream, unless the operator allows
    // core NATS (status 202: the server took it, nothing stored it).
    let loose = subscribe(
        &m,
        &t,
        json!({"nombre": "n2", "url": format!("nats://127.0.0.1:4222/suelto-{}", uuid::Uuid::new_v4().simple())}),
    )
    .await;
    let (_, result) = probe(loose.id).await;
    assert_eq!(
        (&result["ok"], &result["error"]),
        (&json!(false), &json!("sin_stream")),
        "{result}"
    );
    let (status, _) = call(
        &m,
        Method::PATCH,
        "/v1/admin/settings",
        ADMIN_TOKEN,
        Some(json!({"brokers.nats_sin_jetstream": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, result) = probe(loose.id).await;
    assert_eq!(
        (&result["ok"], &result["status"]),
        (&json!(true), &json!(202)),
        "{result}"
    );

    // A broker that is not there: a retryable network failure, at once.
    for url in [
        "amqp://127.0.0.1:1/?exchange=x",
        "nats://127.0.0.1:1/motor.x",
    ] {
        let down = subscribe(&m, &t, json!({"nombre": "d", "url": url})).await;
        let (_, result) = probe(down.id).await;
        assert_eq!(result["ok"], false, "{result}");
        assert_eq!(result["error"], "conexion_rechazada", "{url}: {result}");
    }

    // A name that resolves to loopback is refused at connect, even listed.
    allow(&m, &["vm"]).await;
    let named = subscribe(
        &m,
        &t,
        json!({"nombre": "v", "url": "amqp://vm:5672/?exchange=amq.topic"}),
    )
    .await;
    let (_, result) = probe(named.id).await;
    assert_eq!(result["error"], "destino_bloqueado", "{result}");

    rabbit.delete().await;
    stream.delete().await;
    m.stop().await;
}

/// 10,000 events over 10 instances, to a RabbitMQ queue and a JetStream
/// stream at once (two ordered subscriptions of one app). The events are
/// posted while both subscriptions are paused, then both are activated:
/// posting 10,000 events while 20 lanes deliver makes the API's requests
/// wait on the test's 12-connection pool beyond its acquire timeout on a
/// loaded 2-core machine (a 500 on ingest, not a delivery problem); the
/// fault tests below post while delivering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_events_reach_rabbitmq_and_jetstream_in_order() {
    let _rabbit = clients::RABBIT.read().await;
    const PER_INSTANCE: usize = 1_000;
    let m = motor().await;
    let t = m.tenant(10).await;
    let rabbit = RabbitSetup::new("bulk", true, Default::default()).await;
    let stream = NatsSetup::new("bulk").await;
    let to_rabbit = subscribe(
        &m,
        &t,
        json!({"nombre": "rabbit", "url": rabbit.url("&routing_key=motor.{instance_id}.{type}")}),
    )
    .await;
    let to_nats = subscribe(
        &m,
        &t,
        json!({"nombre": "nats", "url": stream.url("{instance_id}.{type}")}),
    )
    .await;
    set_state(&m, &t, to_rabbit.id, "pausada").await;
    set_state(&m, &t, to_nats.id, "pausada").await;
    for instance in &t.instances {
        post_many(&m, &t, *instance, PER_INSTANCE, "brokers").await;
    }
    set_state(&m, &t, to_rabbit.id, "activa").await;
    set_state(&m, &t, to_nats.id, "activa").await;
    let total = (PER_INSTANCE * t.instances.len()) as i64;
    let stall = Duration::from_secs(60);
    wait_state(&m, to_rabbit.id, "entregada", total, stall).await;
    wait_state(&m, to_nats.id, "entregada", total, stall).await;

    let ledger = ledger(&m).await;
    let got = rabbit
        .take_all(total as usize, Duration::from_secs(60))
        .await;
    assert!(
        rabbit.take(1).await.is_empty(),
        "nothing beyond the deliveries"
    );
    check_arrivals(&got, &to_rabbit, &ledger, PER_INSTANCE);
    for g in &got {
        assert_eq!(g.message_id.as_deref(), Some(g.header("x-mw-delivery-id")));
        assert_eq!(g.content_type.as_deref(), Some("application/json"));
    }
    let got = stream
        .read_all(total as usize, Duration::from_secs(60))
        .await;
    // JetStream dedups a retried delivery id: exactly one message each.
    assert_eq!(got.len(), total as usize);
    check_arrivals(&got, &to_nats, &ledger, PER_INSTANCE);
    for g in &got {
        assert_eq!(g.header("nats-msg-id"), g.header("x-mw-delivery-id"));
    }
    rabbit.delete().await;
    stream.delete().await;
    m.stop().await;
}
