//! Endpoint health and recovery (issue 14), end to end against a running
//! Motor and real receivers on loopback: the manual retry of a `fallida`
//! delivery and `replay_of` (`health/retry.rs`), the body cap
//! (`health/body_cap.rs`), the destination policy and the answer's limits
//! (`health/policy.rs`, with a raw TCP receiver in `health/raw.rs`), and
//! a change of the app, the settings or a subscription's ordering taking
//! effect at the next attempt (`health/changes.rs`).

mod body_cap;
mod changes;
mod disabling;
mod policy;
mod rate;
mod raw;
mod redaction;
mod retry;
mod suspension;
mod throttle;

use std::time::Duration;

use motor_domain::{delivery::DeliveryId, subscription::SubscriptionId, AppId};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::{
    dispatch::WAIT,
    subscriptions::call,
    util::{TestMotor, ADMIN_TOKEN},
};

/// `POST /v1/deliveries/{id}/retry` with an optional Idempotency-Key and
/// body.
pub async fn retry(
    m: &TestMotor,
    token: &str,
    delivery: &str,
    idempotency_key: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = m
        .http
        .post(m.url(&format!("/v1/deliveries/{delivery}/retry")))
        .bearer_auth(token);
    if let Some(k) = idempotency_key {
        req = req.header("Idempotency-Key", k);
    }
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")),
    )
}

pub fn delivery_id(v: &Value) -> DeliveryId {
    v["delivery_id"].as_str().unwrap().parse().unwrap()
}

/// The subscription as the API shows it.
pub async fn subscription(m: &TestMotor, token: &str, sub: SubscriptionId) -> Value {
    let (status, s) = call(
        m,
        Method::GET,
        &format!("/v1/subscriptions/{sub}"),
        token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{s}");
    s
}

/// Waits until the subscription is `suspendida` with `motivo`, and checks
/// that an open alert names it with that motivo.
pub async fn wait_suspended(m: &TestMotor, token: &str, sub: SubscriptionId, motivo: &str) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let s = subscription(m, token, sub).await;
        if s["estado"] == "suspendida" {
            assert_eq!(s["motivo"], motivo, "{s}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never suspended: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, alerts) = call(
        m,
        Method::GET,
        "/v1/admin/alerts?estado=abierta",
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert!(
        alerts["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["suscripcion_id"] == sub.to_string() && a["motivo"] == motivo),
        "an open alert names it: {alerts}"
    );
}

/// `PATCH /v1/admin/apps/{app}`.
pub async fn patch_app(m: &TestMotor, app: AppId, body: Value) -> (StatusCode, Value) {
    call(
        m,
        Method::PATCH,
        &format!("/v1/admin/apps/{app}"),
        ADMIN_TOKEN,
        Some(body),
    )
    .await
}

/// `PATCH /v1/admin/settings`.
pub async fn patch_settings(m: &TestMotor, body: Value) -> (StatusCode, Value) {
    call(
        m,
        Method::PATCH,
        "/v1/admin/settings",
        ADMIN_TOKEN,
        Some(body),
    )
    .await
}
