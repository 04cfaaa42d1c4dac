//! The long-poll: due commands in acceptance order, waiting for one to be
//! committed, empty after `wait`, its parameters checked.

use std::time::{Duration, Instant};

use motor::serve::Role;
use motor_domain::command::RawOptions;
use reqwest::StatusCode;
use serde_json::Value;

use super::{claim, executor_key, operation, send};
use crate::util::TestMotor;

async fn poll(m: &TestMotor, token: &str, query: &str) -> (StatusCode, Value) {
    let res = m
        .http
        .get(m.url(&format!("/v1/executor/commands?{query}")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = res.status();
    (status, res.json().await.unwrap())
}

fn ids(page: &Value) -> Vec<String> {
    page["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_waiting_long_poll_returns_when_a_command_is_committed() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let (pool, instance) = (m.db.pool.clone(), t.instances[0]);
    let exec = executor_key(&m, t.app).await;
    let started = Instant::now();
    let query = format!("instance={instance}&wait=20");
    let waiting = poll(&m, &exec, &query);
    let commit = async {
        // Let the long-poll find nothing and start waiting first.
        tokio::time::sleep(Duration::from_millis(500)).await;
        send(&pool, t.app, instance, "ahora", RawOptions::default()).await
    };
    let ((status, page), id) = tokio::join!(waiting, commit);
    let took = started.elapsed();
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(ids(&page), [id.to_string()]);
    assert_eq!(page["commands"][0]["tipo"], "mensaje");
    assert_eq!(page["commands"][0]["instance_id"], instance.to_string());
    assert!(
        took >= Duration::from_millis(500),
        "answered before the commit: {took:?}"
    );
    assert!(took < Duration::from_secs(5), "woke late: {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_long_poll_with_nothing_due_answers_empty_after_wait() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let exec = executor_key(&m, t.app).await;
    let started = Instant::now();
    let (status, page) = poll(&m, &exec, &format!("instance={}&wait=1", t.instances[0])).await;
    let took = started.elapsed();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["commands"], serde_json::json!([]));
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    // wait=0 (the default) answers at once.
    let started = Instant::now();
    let (_, page) = poll(&m, &exec, &format!("instance={}", t.instances[0])).await;
    assert_eq!(page["commands"], serde_json::json!([]));
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_long_poll_answers_only_claimable_commands_in_acceptance_order() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let (pool, instance) = (&m.db.pool, t.instances[0]);
    let exec = executor_key(&m, t.app).await;
    let a = send(pool, t.app, instance, "a", RawOptions::default()).await;
    let b = operation(pool, t.app, instance, "reconectar").await;
    let c = send(pool, t.app, instance, "c", RawOptions::default()).await;
    let d = send(pool, t.app, instance, "d", RawOptions::default()).await;
    // Another instance's command is not answered here.
    send(pool, t.app, t.instances[1], "otra", RawOptions::default()).await;
    // Claimed: no longer answered.
    assert_eq!(claim(&m, &exec, c).await.0, StatusCode::OK);
    let (_, page) = poll(&m, &exec, &format!("instance={instance}")).await;
    assert_eq!(ids(&page), [a.to_string(), b.to_string(), d.to_string()]);
    assert_eq!(page["commands"][1]["tipo"], "reconectar");
    assert_eq!(page["commands"][1]["next_try"], Value::Null);
    let (_, page) = poll(&m, &exec, &format!("instance={instance}&limit=2")).await;
    assert_eq!(ids(&page), [a.to_string(), b.to_string()]);

    // Parameters are checked and named.
    let other = m.tenant(1).await;
    for (query, status, field) in [
        ("".to_owned(), 422, Some("query.instance")),
        ("instance=x".to_owned(), 422, Some("query.instance")),
        (
            format!("instance={instance}&wait=31"),
            422,
            Some("query.wait"),
        ),
        (
            format!("instance={instance}&wait=-1"),
            422,
            Some("query.wait"),
        ),
        (
            format!("instance={instance}&limit=0"),
            422,
            Some("query.limit"),
        ),
        (
            format!("instance={instance}&limit=101"),
            422,
            Some("query.limit"),
        ),
        (format!("instance={}", other.instances[0]), 404, None),
        (
            format!("instance={}", motor_domain::InstanceId::new()),
            404,
            None,
        ),
    ] {
        let (got, body) = poll(&m, &exec, &query).await;
        assert_eq!(got.as_u16(), status, "{query} → {body}");
        assert_eq!(body["error"]["campo"].as_str(), field, "{query} → {body}");
    }
    // A key restricted to another instance: 403.
    let restricted = crate::util::key(pool, t.app, &["commands:execute"], &[t.instances[1]]).await;
    let (got, _) = poll(&m, &restricted, &format!("instance={instance}")).await;
    assert_eq!(got, StatusCode::FORBIDDEN);
}
