//! Tracing: a real `motor serve` process with `MOTOR_LOG_FORMAT=json`
//! writes one JSON object per line; an event's ingest and its attempt can
//! be joined by ids — the attempt's span carries event_id, delivery_id,
//! subscription_id and instance_id.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::subscribe_and_post;
use crate::{
    dispatch::receiver::Receiver,
    util::{topic_prefix, MotorProcess, Tenant, TestDb, ALL_ROLES_ARG},
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_join_ingest_and_attempt_by_ids() {
    let db = TestDb::new().await;
    let log_path = std::env::temp_dir().join(format!("motor-json-{}.log", uuid::Uuid::now_v7()));
    let (child, base) = MotorProcess::serving(
        ALL_ROLES_ARG,
        &db,
        &topic_prefix(),
        &[
            ("MOTOR_LOG_FORMAT", "json"),
            (
                "RUST_LOG",
                "info,motor_engine=debug,motor_api=debug,sqlx=warn",
            ),
        ],
        std::fs::File::create(&log_path).unwrap().into(),
    )
    .await;
    let t = Tenant::create(&db.pool, 1).await;
    let r = Receiver::start().await;
    let (sub, event_id) = subscribe_and_post(&base, &t, &r).await;
    let instance = t.instances[0].to_string();
    r.wait_for("the delivery", Duration::from_secs(60), |s| !s.is_empty())
        .await;
    let delivery_id = r.seen()[0].delivery_id.clone();

    // The record of the attempt is written after the answer: wait for it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let lines: Vec<Value> = loop {
        let text = std::fs::read_to_string(&log_path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect();
        if lines
            .iter()
            .any(|l| l["fields"]["message"] == "attempt recorded")
        {
            break lines;
        }
        assert!(Instant::now() < deadline, "no attempt logged:\n{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    drop(child);
    let _ = std::fs::remove_file(&log_path);

    assert!(lines
        .iter()
        .all(|l| l["level"].is_string() && l["timestamp"].is_string()));
    let accepted = lines
        .iter()
        .find(|l| l["fields"]["message"] == "event accepted")
        .expect("an ingest line");
    assert_eq!(accepted["fields"]["event_id"], event_id);
    assert_eq!(accepted["fields"]["instance_id"], instance);
    let attempt = lines
        .iter()
        .find(|l| l["fields"]["message"] == "attempt recorded")
        .unwrap();
    let span = &attempt["span"];
    assert_eq!(span["name"], "attempt");
    assert_eq!(span["event_id"], event_id);
    assert_eq!(span["delivery_id"], delivery_id);
    assert_eq!(span["subscription_id"], sub);
    assert_eq!(span["instance_id"], instance);
    assert_eq!(attempt["fields"]["estado"], "entregada");
    assert_eq!(attempt["fields"]["clase"], "2xx");
}
