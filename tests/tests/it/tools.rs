//! Issue 36's tools as their users use them: `POST
//! /v1/subscriptions/{id}/check` against real loopback receivers (`check`),
//! stream tokens on the SSE and WebSocket streams and the example page in
//! Chromium (`stream_tokens`, `stream_page`), and the real `motor` binary's
//! `replay` and `tail` against a real Motor and receiver (`replay`, `tail`).

mod check;
mod nats_stream;
mod replay;
mod shutdown;
mod stream_page;
mod stream_tokens;
mod stream_wire;
mod tail;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::util::TestMotor;

/// A call to Motor's API with `token`; the status and the JSON answer.
pub(crate) async fn call(
    m: &TestMotor,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = m.http.request(method, m.url(path)).bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}
