//! OTLP export (the `otlp` feature; run with
//! `cargo test -p motor --features otlp --test it operators::otlp`): a
//! `motor serve` built with it and given `OTEL_EXPORTER_OTLP_ENDPOINT`
//! posts its spans to `<endpoint>/v1/traces` as OTLP/HTTP protobuf; the
//! attempt span arrives with the event's id.

use std::{
    net::TcpListener,
    process::{Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{body::Bytes, extract::State, routing::post, Router};
use serde_json::{json, Value};

use crate::{
    dispatch::receiver::Receiver,
    util::{brokers, topic_prefix, Tenant, TestDb},
};

type Bodies = Arc<Mutex<Vec<Vec<u8>>>>;

async fn collect(State(bodies): State<Bodies>, body: Bytes) -> &'static str {
    bodies.lock().unwrap().push(body.to_vec());
    ""
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_are_exported_over_otlp_http() {
    let bodies: Bodies = Arc::default();
    let collector = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let collector_addr = collector.local_addr().unwrap();
    let app = Router::new()
        .route("/v1/traces", post(collect))
        .with_state(bodies.clone());
    tokio::spawn(async move { axum::serve(collector, app).await.unwrap() });

    let db = TestDb::new().await;
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_motor"))
        .arg("serve")
        .env("MOTOR_DATABASE_URL", &db.url)
        .env("MOTOR_KAFKA_BROKERS", brokers())
        .env("MOTOR_TOPIC_PREFIX", topic_prefix())
        .env("MOTOR_KAFKA_PARTITIONS", "4")
        .env("MOTOR_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://{collector_addr}"),
        )
        .env("OTEL_BSP_SCHEDULE_DELAY", "200")
        .env("RUST_LOG", "info,sqlx=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while http.get(format!("{base}/readyz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "motor did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let t = Tenant::create(&db.pool, 1).await;
    let r = Receiver::start().await;
    let created: Value = http
        .post(format!("{base}/v1/subscriptions"))
        .bearer_auth(&t.token)
        .json(&json!({"nombre": "r", "url": r.url()}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(created["suscripcion"]["id"].is_string(), "{created}");
    let envelope: Value = http
        .post(format!("{base}/v1/instances/{}/events", t.instances[0]))
        .bearer_auth(&t.token)
        .json(&json!({"type": "t", "data": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let event_id = envelope["event_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    let contains =
        |haystack: &[u8], needle: &[u8]| haystack.windows(needle.len()).any(|w| w == needle);
    loop {
        let found = bodies
            .lock()
            .unwrap()
            .iter()
            .any(|b| contains(b, b"attempt") && contains(b, event_id.as_bytes()));
        if found {
            break;
        }
        assert!(Instant::now() < deadline, "no attempt span exported");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
}
