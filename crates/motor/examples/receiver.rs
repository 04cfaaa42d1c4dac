//! A webhook receiver written from the contract: it checks
//! `X-MW-Signature` (HMAC-SHA256 of `timestamp.delivery_id.body` with the
//! subscription's secret, constant-time), rejects requests older than five
//! minutes, dedupes by `X-MW-Delivery-Id`, and prints what it accepted.
//!
//!   MOTOR_WEBHOOK_SECRET=whsec_… cargo run --example receiver -- [--addr 127.0.0.1:8090]
//!
//! It answers 204 to a verified delivery and 401 to anything else (which
//! makes Motor suspend the subscription: give it the right secret).

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
};

use axum::{body::Bytes, extract::State, http::HeaderMap, http::StatusCode, routing::post, Router};
use hmac::{Hmac, Mac};
use sha2::Sha256;

#[derive(Clone)]
struct Receiver {
    secrets: Arc<Vec<String>>,
    seen: Arc<Mutex<HashSet<String>>>,
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

fn verified(secrets: &[String], headers: &HeaderMap, body: &[u8]) -> bool {
    let timestamp = header(headers, "x-mw-timestamp");
    let delivery = header(headers, "x-mw-delivery-id");
    let fresh = timestamp
        .parse::<i64>()
        .map(|ts| (chrono::Utc::now().timestamp() - ts).abs() <= 300)
        .unwrap_or(false);
    // During a rotation two signatures come, newest first: one match is enough.
    fresh
        && header(headers, "x-mw-signature")
            .split(',')
            .any(|signature| {
                let Some(Ok(expected)) = signature.trim().strip_prefix("v1=").map(hex::decode)
                else {
                    return false;
                };
                secrets.iter().any(|secret| {
                    let mut mac =
                        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
                    mac.update(format!("{timestamp}.{delivery}.").as_bytes());
                    mac.update(body);
                    mac.verify_slice(&expected).is_ok()
                })
            })
}

async fn webhook(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    if !verified(&r.secrets, &headers, &body) {
        eprintln!("rejected: bad or stale signature");
        return StatusCode::UNAUTHORIZED;
    }
    let delivery = header(&headers, "x-mw-delivery-id").to_owned();
    let first = r
        .seen
        .lock()
        .expect("not poisoned")
        .insert(delivery.clone());
    let envelope: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    println!(
        "{} delivery {delivery}: instance {} seq {} {} {}",
        if first { "verified" } else { "repeat  " },
        envelope["instance_id"].as_str().unwrap_or("?"),
        envelope["seq"],
        envelope["type"].as_str().unwrap_or("?"),
        envelope["data"],
    );
    StatusCode::NO_CONTENT
}

#[tokio::main]
async fn main() {
    let secrets: Vec<String> = std::env::var("MOTOR_WEBHOOK_SECRET")
        .expect("set MOTOR_WEBHOOK_SECRET to the subscription's whsec_… secret (comma-separate two during a rotation)")
        .split(',')
        .map(|s| s.trim().to_owned())
        .collect();
    let args: Vec<String> = std::env::args().collect();
    let addr = args
        .iter()
        .position(|a| a == "--addr")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "127.0.0.1:8090".into());
    let state = Receiver {
        secrets: Arc::new(secrets),
        seen: Arc::default(),
    };
    let app = Router::new()
        .route("/webhook", post(webhook))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .expect("binding the receiver");
    eprintln!("receiver listening on http://{addr}/webhook");
    axum::serve(listener, app).await.expect("serving");
}
