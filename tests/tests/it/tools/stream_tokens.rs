//! Stream tokens (`POST /v1/instances/{id}/stream-tokens`): a token opens
//! its instance's stream as `?token=` with no Authorization header, over
//! SSE and WebSocket, and nothing else — not another instance's stream,
//! not a write route (as `?token=` or as a bearer), not after it expired,
//! not after the key that asked for it was revoked.

use std::{
    collections::VecDeque,
    time::{Duration, Instant},
};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use super::call;
use crate::{
    streams::client::{parse_blocks, Frame, STUCK},
    util::{append_to_ledger, key, TestMotor, ALL_ROLES},
};

async fn token(
    m: &TestMotor,
    key: &str,
    instance: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    call(
        m,
        key,
        Method::POST,
        &format!("/v1/instances/{instance}/stream-tokens"),
        body,
    )
    .await
}

/// `GET` the stream with `?token=` and nothing else.
async fn open(m: &TestMotor, instance: &str, token: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(m.url(&format!("/v1/instances/{instance}/events/stream")))
        .query(&[("token", token)])
        .send()
        .await
        .unwrap()
}

/// The next SSE event of `res`: (seq, type).
async fn next_event(res: &mut reqwest::Response, buf: &mut Vec<u8>) -> (i64, String) {
    let mut frames = VecDeque::new();
    loop {
        let used = parse_blocks(buf, &mut frames);
        buf.drain(..used);
        while let Some(frame) = frames.pop_front() {
            if let Frame::Event { id, event, .. } = frame {
                return (id, event);
            }
        }
        let chunk = tokio::time::timeout(STUCK, res.chunk())
            .await
            .expect("an SSE frame in time")
            .unwrap()
            .expect("the stream is open");
        buf.extend_from_slice(&chunk);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_opens_its_instances_stream_over_sse_and_websocket() {
    let m = TestMotor::start(&ALL_ROLES).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0].to_string(), t.instances[1].to_string());

    let (status, issued) = token(&m, &t.token, &a, None).await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let tok = issued["token"].as_str().unwrap().to_owned();
    assert!(tok.starts_with("mst_"), "{issued}");
    assert_eq!(issued["instancia_id"], a);
    let expires: chrono::DateTime<chrono::Utc> =
        issued["vence_en"].as_str().unwrap().parse().unwrap();
    let left = expires - chrono::Utc::now();
    assert!(
        left <= chrono::TimeDelta::seconds(60) && left > chrono::TimeDelta::seconds(50),
        "{issued}"
    );

    // SSE with ?token= only.
    let mut sse = open(&m, &a, &tok).await;
    assert_eq!(sse.status(), StatusCode::OK);
    // WebSocket with ?token= only.
    let ws_url = m
        .url(&format!("/v1/instances/{a}/events/stream?token={tok}"))
        .replacen("http://", "ws://", 1);
    let (mut ws, res) = tokio_tungstenite::connect_async(ws_url).await.unwrap();
    assert_eq!(res.status(), 101);

    append_to_ledger(
        &m.db.pool,
        t.instances[0],
        &[json!({"type": "ficha.vista", "data": {"n": 1}})],
    )
    .await;
    let mut buf = Vec::new();
    assert_eq!(
        next_event(&mut sse, &mut buf).await,
        (1, "ficha.vista".into())
    );
    let envelope = loop {
        let frame = tokio::time::timeout(STUCK, futures::StreamExt::next(&mut ws))
            .await
            .expect("a WebSocket frame in time")
            .unwrap()
            .unwrap();
        if let Message::Text(text) = frame {
            break serde_json::from_str::<Value>(&text).unwrap();
        }
    };
    assert_eq!(envelope["seq"], 1);
    assert_eq!(envelope["type"], "ficha.vista");

    // Not another instance's stream.
    let other = open(&m, &b, &tok).await;
    assert_eq!(other.status(), StatusCode::FORBIDDEN);

    // Not a write route: ignored as a query parameter, unknown as a bearer.
    let write = m.url(&format!("/v1/instances/{a}/events"));
    let body = json!({"type": "x", "data": {}});
    let http = reqwest::Client::new();
    let res = http
        .post(&write)
        .query(&[("token", &tok)])
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let res = http
        .post(&write)
        .bearer_auth(&tok)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    // Nor a read route other than the stream.
    let res = http
        .get(m.url(&format!("/v1/instances/{a}/events")))
        .query(&[("token", &tok)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    // Nor a stream token made up or cut short.
    let res = open(&m, &a, &tok[..tok.len() - 4]).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_expire_and_follow_the_keys_rules() {
    let m = TestMotor::start(&ALL_ROLES).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0].to_string(), t.instances[1].to_string());

    // A one-second token works, then is refused as expired.
    let (status, issued) = token(&m, &t.token, &a, Some(json!({"segundos": 1}))).await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let tok = issued["token"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    let refusal = loop {
        let res = open(&m, &a, &tok).await;
        if res.status() == StatusCode::UNAUTHORIZED {
            break res.json::<Value>().await.unwrap();
        }
        assert_eq!(res.status(), StatusCode::OK);
        assert!(Instant::now() < deadline, "the token never expired");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{refusal}"
    );

    // Lifetimes past 60 s, and bodies that are not the contract, are 422.
    for body in [
        json!({"segundos": 61}),
        json!({"segundos": 0}),
        json!({"otro": 1}),
    ] {
        let (status, answer) = token(&m, &t.token, &a, Some(body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert!(answer["error"]["campo"]
            .as_str()
            .unwrap()
            .starts_with("body"));
    }

    // The key's rules: events:read, its own instances, its own app.
    let writer = key(&m.db.pool, t.app, &["events:write"], &[]).await;
    let (status, _) = token(&m, &writer, &a, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let only_b = key(&m.db.pool, t.app, &["events:read"], &[t.instances[1]]).await;
    let (status, _) = token(&m, &only_b, &a, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = token(&m, &only_b, &b, None).await;
    assert_eq!(status, StatusCode::CREATED);
    let stranger = m.tenant(1).await;
    let (status, _) = token(&m, &stranger.token, &a, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = token(&m, "nope", &a, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    m.stop().await;
}

/// A token stands for the key that asked for it: once that key is revoked
/// the token opens nothing (401 at open, before its own expiry), while a
/// stream it already opened goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_a_revoked_key_opens_nothing() {
    let m = TestMotor::start(&ALL_ROLES).await;
    let t = m.tenant(1).await;
    let a = t.instances[0].to_string();
    let (status, created) = call(
        &m,
        crate::util::ADMIN_TOKEN,
        Method::POST,
        &format!("/v1/admin/apps/{}/keys", t.app),
        Some(json!({"nombre": "reader", "scopes": ["events:read"]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let reader = created["token"].as_str().unwrap().to_owned();
    let key_id = created["key_id"].as_str().unwrap().to_owned();
    let (status, issued) = token(&m, &reader, &a, None).await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let tok = issued["token"].as_str().unwrap().to_owned();
    let mut open_before = open(&m, &a, &tok).await;
    assert_eq!(open_before.status(), StatusCode::OK);

    let (status, body) = call(
        &m,
        crate::util::ADMIN_TOKEN,
        Method::DELETE,
        &format!("/v1/admin/apps/{}/keys/{key_id}", t.app),
        None,
    )
    .await;
    assert!(status.is_success(), "{status} {body}");
    // Well within the token's 60 s: refused because of its key.
    let res = open(&m, &a, &tok).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let refusal = res.json::<Value>().await.unwrap();
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("revoked or expired"),
        "{refusal}"
    );
    // The stream opened before goes on.
    append_to_ledger(
        &m.db.pool,
        t.instances[0],
        &[json!({"type": "ficha.vista", "data": {"n": 1}})],
    )
    .await;
    let mut buf = Vec::new();
    assert_eq!(
        next_event(&mut open_before, &mut buf).await,
        (1, "ficha.vista".into())
    );
    m.stop().await;
}
