//! `POST /v1/subscriptions/{id}/test` against a real receiver on this
//! machine: the signed request as a receiver sees it, both signatures during
//! a rotation, and each sanitised outcome (redirect not followed, HTTP
//! errors, timeout, refused connection, destination no longer allowed).

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{HeaderMap, StatusCode as AxumStatus},
    response::IntoResponse,
    routing::post,
    Router,
};
use hmac::{Hmac, Mac};
use motor::serve::Role;
use motor_system_tests::harness::services::free_port;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::{
    subscriptions::call,
    util::{key, Tenant, TestMotor, ADMIN_TOKEN},
};

#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

type Log = Arc<Mutex<Vec<Received>>>;

async fn hook(
    State(log): State<Log>,
    Path(mode): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    log.lock().unwrap().push(Received {
        path: mode.clone(),
        headers,
        body,
    });
    match mode.as_str() {
        "redirect" => (AxumStatus::FOUND, [("location", "/hook/ok")], String::new()),
        "fail" => (
            AxumStatus::INTERNAL_SERVER_ERROR,
            [("x", "")],
            String::new(),
        ),
        "reject" => (AxumStatus::UNAUTHORIZED, [("x", "")], String::new()),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            (AxumStatus::OK, [("x", "")], String::new())
        }
        "big" => (AxumStatus::OK, [("x", "")], "x".repeat(1 << 20)),
        _ => (AxumStatus::NO_CONTENT, [("x", "")], String::new()),
    }
}

/// A receiver on 127.0.0.1; its base URL and what it received.
async fn receiver() -> (String, Log) {
    let log: Log = Arc::default();
    let app = Router::new()
        .route("/hook/{mode}", post(hook))
        .with_state(log.clone());
    let addr = crate::util::serve_loopback(app).await;
    (format!("http://{addr}/hook"), log)
}

async fn subscribe(m: &TestMotor, t: &Tenant, url: &str) -> (String, Value) {
    let (status, body) = call(
        m,
        Method::POST,
        "/v1/subscriptions",
        &t.token,
        Some(json!({"nombre": "receptor", "url": url})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["suscripcion"]["id"].as_str().unwrap().to_owned();
    (id, body["secreto"].clone())
}

async fn test(m: &TestMotor, t: &Tenant, id: &str) -> Value {
    let (status, body) = call(
        m,
        Method::POST,
        &format!("/v1/subscriptions/{id}/test"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn header<'a>(r: &'a Received, name: &str) -> &'a str {
    r.headers.get(name).unwrap().to_str().unwrap()
}

fn hmac_hex(secret: &str, ts: &str, delivery: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{ts}.{delivery}.").as_bytes());
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

#[tokio::test]
async fn a_signed_test_event_reaches_the_receiver() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let (base, log) = receiver().await;
    let (id, secreto) = subscribe(&m, &t, &format!("{base}/ok")).await;

    let answer = test(&m, &t, &id).await;
    assert_eq!(
        (
            answer["ok"].clone(),
            answer["status"].clone(),
            answer["error"].clone()
        ),
        (json!(true), json!(204), Value::Null),
        "{answer}"
    );
    assert!(answer["duracion_ms"].is_u64());
    let keys: Vec<&str> = answer
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["ok", "status", "duracion_ms", "error"]);

    let got = log.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(header(r, "content-type"), "application/json");
    assert_eq!(header(r, "user-agent"), "motor-whatsapp/webhooks");
    let envelope: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(envelope["type"], "webhook.test");
    assert_eq!(envelope["origin"], "operator");
    assert_eq!(envelope["data"], json!({"prueba": true}));
    assert_eq!(envelope["instance_id"], json!(t.instances[0]));
    assert_eq!(header(r, "x-mw-event-id"), envelope["event_id"]);
    let ts = header(r, "x-mw-timestamp");
    let age = chrono::Utc::now().timestamp() - ts.parse::<i64>().unwrap();
    assert!((0..=5).contains(&age), "{ts}");
    assert_eq!(header(r, "x-mw-key-id"), secreto["key_id"]);
    let delivery = header(r, "x-mw-delivery-id");
    assert_eq!(
        header(r, "x-mw-signature"),
        format!(
            "v1={}",
            hmac_hex(secreto["valor"].as_str().unwrap(), ts, delivery, &r.body)
        )
    );
    // The test event is not in the ledger.
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(events, 0);

    // During a rotation: two of each, newest first, both valid.
    let (_, rotated) = call(
        &m,
        Method::POST,
        &format!("/v1/subscriptions/{id}/rotate"),
        &t.token,
        None,
    )
    .await;
    test(&m, &t, &id).await;
    let r = log.lock().unwrap()[1].clone();
    let (ts, delivery) = (header(&r, "x-mw-timestamp"), header(&r, "x-mw-delivery-id"));
    assert_ne!(delivery, got[0].headers["x-mw-delivery-id"]);
    let new = &rotated["secreto"];
    assert_eq!(
        header(&r, "x-mw-key-id"),
        format!(
            "{},{}",
            new["key_id"].as_str().unwrap(),
            secreto["key_id"].as_str().unwrap()
        )
    );
    assert_eq!(
        header(&r, "x-mw-signature"),
        format!(
            "v1={},v1={}",
            hmac_hex(new["valor"].as_str().unwrap(), ts, delivery, &r.body),
            hmac_hex(secreto["valor"].as_str().unwrap(), ts, delivery, &r.body)
        )
    );
    m.stop().await;
}

#[tokio::test]
async fn each_outcome_has_its_sanitised_code() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let (base, log) = receiver().await;

    for (mode, status, error) in [
        ("redirect", json!(302), "redireccion"),
        ("fail", json!(500), "http_500"),
        ("reject", json!(401), "http_401"),
    ] {
        let (id, _) = subscribe(&m, &t, &format!("{base}/{mode}")).await;
        let answer = test(&m, &t, &id).await;
        assert_eq!(
            (
                answer["ok"].clone(),
                answer["status"].clone(),
                answer["error"].clone()
            ),
            (json!(false), status, json!(error)),
            "{mode}: {answer}"
        );
        // A test never suspends.
        let (_, s) = call(
            &m,
            Method::GET,
            &format!("/v1/subscriptions/{id}"),
            &t.token,
            None,
        )
        .await;
        assert_eq!(s["estado"], "activa");
    }
    // The redirect was not followed.
    let paths: Vec<String> = log.lock().unwrap().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["redirect", "fail", "reject"]);

    // A large answer is cut short, not waited for.
    let (id, _) = subscribe(&m, &t, &format!("{base}/big")).await;
    assert_eq!(test(&m, &t, &id).await["ok"], true);

    // Timeout per attempt is the setting.
    let (status, _) = call(
        &m,
        Method::PATCH,
        "/v1/admin/settings",
        ADMIN_TOKEN,
        Some(json!({"webhooks.timeout_segundos": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (id, _) = subscribe(&m, &t, &format!("{base}/slow")).await;
    let answer = test(&m, &t, &id).await;
    assert_eq!(
        (answer["status"].clone(), answer["error"].clone()),
        (Value::Null, json!("timeout")),
        "{answer}"
    );
    let ms = answer["duracion_ms"].as_u64().unwrap();
    assert!((900..2900).contains(&ms), "{ms}");

    // Nobody listening.
    let port = free_port();
    let (id, _) = subscribe(&m, &t, &format!("http://127.0.0.1:{port}/x")).await;
    assert_eq!(test(&m, &t, &id).await["error"], "conexion_rechazada");

    // The host left the allowed destinations: nothing is sent.
    let (id, _) = subscribe(&m, &t, &format!("{base}/ok")).await;
    let before = log.lock().unwrap().len();
    let (status, _) = call(
        &m,
        Method::PATCH,
        &format!("/v1/admin/apps/{}", t.app),
        ADMIN_TOKEN,
        Some(json!({"destinos_permitidos": []})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let answer = test(&m, &t, &id).await;
    assert_eq!(
        (answer["ok"].clone(), answer["error"].clone()),
        (json!(false), json!("destino_no_permitido"))
    );
    assert_eq!(log.lock().unwrap().len(), before);
    m.stop().await;
}

#[tokio::test]
async fn test_needs_the_scope_and_a_live_subscription() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let (base, log) = receiver().await;
    let (id, _) = subscribe(&m, &t, &format!("{base}/ok")).await;
    let path = format!("/v1/subscriptions/{id}/test");
    let weak = key(
        &m.db.pool,
        t.app,
        &["events:read", "deliveries:replay"],
        &[],
    )
    .await;
    assert_eq!(
        call(&m, Method::POST, &path, &weak, None).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        call(&m, Method::POST, &path, "nope", None).await.0,
        StatusCode::UNAUTHORIZED
    );
    let restricted = key(&m.db.pool, t.app, &["subscriptions:manage"], &t.instances).await;
    assert_eq!(
        call(&m, Method::POST, &path, &restricted, None).await.0,
        StatusCode::FORBIDDEN
    );
    let other = m.tenant(1).await;
    assert_eq!(
        call(&m, Method::POST, &path, &other.token, None).await.0,
        StatusCode::NOT_FOUND
    );
    call(
        &m,
        Method::DELETE,
        &format!("/v1/subscriptions/{id}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(
        call(&m, Method::POST, &path, &t.token, None).await.0,
        StatusCode::CONFLICT
    );
    assert!(log.lock().unwrap().is_empty());
    m.stop().await;
}

/// `/test` and a real delivery go through one attempt: for the same
/// subscription the receiver sees the same request — method, path, every
/// header name in the same order and every value but the ones that are
/// per request (timestamp, signature, event and delivery ids, length) —
/// and both bodies are envelopes with the same fields, each signed over
/// its own bytes.
#[tokio::test]
async fn the_test_probe_sends_what_a_real_delivery_sends() {
    let m = TestMotor::start(&Role::ALL).await;
    let t = m.tenant(1).await;
    let (base, log) = receiver().await;
    let (id, secreto) = subscribe(&m, &t, &format!("{base}/ok")).await;
    let secret = secreto["valor"].as_str().unwrap();

    test(&m, &t, &id).await;
    let (status, body) = call(
        &m,
        Method::POST,
        &format!("/v1/instances/{}/events", t.instances[0]),
        &t.token,
        Some(json!({"type": "message.received", "data": {"texto": "hola"}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while log.lock().unwrap().len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the delivery did not arrive"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let got = log.lock().unwrap().clone();
    let (probe, delivery) = (&got[0], &got[1]);

    let per_request = [
        "x-mw-timestamp",
        "x-mw-signature",
        "x-mw-event-id",
        "x-mw-delivery-id",
        "content-length",
    ];
    let shown = |r: &Received| -> Vec<(String, String)> {
        r.headers
            .iter()
            .map(|(name, value)| {
                let value = if per_request.contains(&name.as_str()) {
                    "…".to_owned()
                } else {
                    value.to_str().unwrap().to_owned()
                };
                (name.as_str().to_owned(), value)
            })
            .collect()
    };
    assert_eq!(probe.path, delivery.path);
    assert_eq!(shown(probe), shown(delivery));
    for name in per_request {
        assert!(probe.headers.contains_key(name), "{name}");
    }

    let fields = |r: &Received| -> Vec<String> {
        let envelope: Value = serde_json::from_slice(&r.body).unwrap();
        envelope.as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(fields(probe), fields(delivery));
    for r in [probe, delivery] {
        let ts = header(r, "x-mw-timestamp");
        let delivery_id = header(r, "x-mw-delivery-id");
        assert_eq!(
            header(r, "x-mw-signature"),
            format!("v1={}", hmac_hex(secret, ts, delivery_id, &r.body))
        );
    }
    m.stop().await;
}
