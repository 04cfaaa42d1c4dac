//! OTLP export (the `otlp` feature; run with `cargo test -p
//! motor-system-tests --features otlp --test it operators::otlp`): a
//! `motor serve` built with it and given `OTEL_EXPORTER_OTLP_ENDPOINT`
//! posts its spans to `<endpoint>/v1/traces` as OTLP/HTTP protobuf; the
//! attempt span arrives with the event's id.

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{body::Bytes, extract::State, routing::post, Router};

use super::subscribe_and_post;
use crate::{
    dispatch::receiver::Receiver,
    util::{serve_loopback, topic_prefix, MotorProcess, Tenant, TestDb, ALL_ROLES_ARG},
};

type Bodies = Arc<Mutex<Vec<Vec<u8>>>>;

async fn collect(State(bodies): State<Bodies>, body: Bytes) -> &'static str {
    bodies.lock().unwrap().push(body.to_vec());
    ""
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_are_exported_over_otlp_http() {
    let bodies: Bodies = Arc::default();
    let collector_addr = serve_loopback(
        Router::new()
            .route("/v1/traces", post(collect))
            .with_state(bodies.clone()),
    )
    .await;

    let db = TestDb::new().await;
    let endpoint = format!("http://{collector_addr}");
    let (child, base) = MotorProcess::serving(
        ALL_ROLES_ARG,
        &db,
        &topic_prefix(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
            ("RUST_LOG", "info,sqlx=warn"),
        ],
        Stdio::null(),
    )
    .await;
    let t = Tenant::create(&db.pool, 1).await;
    let r = Receiver::start().await;
    let (_, event_id) = subscribe_and_post(&base, &t, &r).await;
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
    drop(child);
}
