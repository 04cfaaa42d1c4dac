//! A clean SIGTERM logs no error (issue 36, item 6): a `motor serve`
//! process holding a RabbitMQ connection (a subscription delivering into
//! RabbitMQ) closes it before its runtime stops, so lapin does not log
//! "error doing IO" and "Connection error" on the way out. Those lines
//! came from a race with the runtime's shutdown: with the connections left
//! open this test failed in about half of its runs (measured: 1 of 2, and
//! the manual reproduction in 1 of 1); with them closed it has not failed.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{json, Value};

use crate::util::{topic_prefix, MotorProcess, Tenant, TestDb, ALL_ROLES_ARG};

fn log_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_a_broker_connection_open_logs_no_error() {
    let db = TestDb::new().await;
    let log_path = std::env::temp_dir().join(format!("motor-sigterm-{}.log", uuid::Uuid::now_v7()));
    let (mut child, base) = MotorProcess::serving(
        ALL_ROLES_ARG,
        &db,
        &topic_prefix(),
        &[("MOTOR_LOG_FORMAT", "json"), ("RUST_LOG", "info,sqlx=warn")],
        std::fs::File::create(&log_path).unwrap().into(),
    )
    .await;
    let t = Tenant::create(&db.pool, 1).await;
    let http = reqwest::Client::new();
    // amq.topic with a routing key no queue takes: the message comes back
    // (a retried `broker_sin_ruta`), and the connection stays open.
    let created: Value = http
        .post(format!("{base}/v1/subscriptions"))
        .bearer_auth(&t.token)
        .json(&json!({"nombre": "cola", "url": format!("amqp://127.0.0.1:5672/?exchange=amq.topic&routing_key=motor.sigterm.{}", uuid::Uuid::now_v7())}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(created["suscripcion"]["id"].is_string(), "{created}");
    let res = http
        .post(format!("{base}/v1/instances/{}/events", t.instances[0]))
        .bearer_auth(&t.token)
        .json(&json!({"type": "t", "data": {}}))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
    // Wait for an attempt: the connection was made.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let list: Value = http
            .get(format!("{base}/v1/deliveries"))
            .bearer_auth(&t.token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if list["entregas"][0]["intentos"].as_i64().unwrap_or(0) >= 1 {
            break;
        }
        assert!(Instant::now() < deadline, "no attempt: {list}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ok = Command::new("kill")
        .args(["-TERM", &child.pid().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap();
    assert!(status.success(), "motor serve exited with {status:?}");
    let lines = log_lines(&log_path);
    let _ = std::fs::remove_file(&log_path);
    let errors: Vec<&Value> = lines.iter().filter(|l| l["level"] == "ERROR").collect();
    assert!(
        errors.is_empty(),
        "errors logged at a clean SIGTERM: {errors:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["target"].as_str().is_some_and(|t| t.starts_with("lapin"))),
        "the broker connection was never made"
    );
}
