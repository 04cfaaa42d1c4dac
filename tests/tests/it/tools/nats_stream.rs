//! The README's NATS example without the `nats` CLI (issue 36, item 6):
//! `motor nats-stream` creates the JetStream stream, a subscription
//! publishes into it, and the delivery is `entregada` (the stream's ack);
//! run again with another subject it widens the stream instead of failing.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::call;
use crate::{
    dispatch::WAIT,
    util::{motor_bin, TestMotor, ALL_ROLES},
};

fn nats_stream(name: &str, subjects: &str) -> Value {
    let out = Command::new(motor_bin())
        .args(["nats-stream", "--name", name, "--subjects", subjects])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn motor_makes_the_stream_a_nats_subscription_needs() {
    let root = format!("motortools{}", uuid::Uuid::now_v7().simple());
    let name = root.to_uppercase();
    let shown = nats_stream(&name, &format!("{root}.>"));
    assert_eq!(shown["nombre"], name.as_str());
    assert_eq!(shown["sujetos"], json!([format!("{root}.>")]));

    let m = TestMotor::start(&ALL_ROLES).await;
    let t = m.tenant(1).await;
    let (status, created) = call(
        &m,
        &t.token,
        Method::POST,
        "/v1/subscriptions",
        Some(json!({"nombre": "stream", "url": format!("nats://127.0.0.1:4222/{root}.{{type}}")})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (status, _) = call(
        &m,
        &t.token,
        Method::POST,
        &format!("/v1/instances/{}/events", t.instances[0]),
        Some(json!({"type": "pedido.creado", "data": {}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, list) = call(&m, &t.token, Method::GET, "/v1/deliveries", None).await;
        if list["entregas"][0]["estado"] == "entregada" {
            break;
        }
        assert!(Instant::now() < deadline, "never delivered: {list}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    m.stop().await;

    // Again, with one more subject: widened, and the message is there.
    let shown = nats_stream(&name, &format!("{root}_b.>"));
    assert_eq!(
        shown["sujetos"],
        json!([format!("{root}.>"), format!("{root}_b.>")])
    );
    assert_eq!(shown["mensajes"], 1);
    let js = async_nats::jetstream::new(async_nats::connect("127.0.0.1:4222").await.unwrap());
    js.delete_stream(&name).await.unwrap();
}
