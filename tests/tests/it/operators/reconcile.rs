//! Reconciliation: a planted stuck lane (an ordered subscription whose
//! deliveries nothing works on: no dispatcher, relay or sweeper runs) is
//! found, its `reconciliacion` alert opens and closes once the lane moves;
//! `motor doctor` reports the same and exits 2, then 0 once healed, and 1
//! when it cannot check.

use std::{process::Command, time::Duration};

use motor::serve::Role;
use motor_domain::reconcile::Thresholds;
use motor_engine::{reconcile_once, ReconcileConfig};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::dispatch::subscribe;
use crate::{
    deliveries::post,
    dispatch::receiver::Receiver,
    subscriptions::call,
    util::{TestDb, TestMotor, ADMIN_TOKEN},
};

const ONE_SECOND: Thresholds = Thresholds {
    pending_seconds: 1,
    lane_seconds: 1,
    outbox_seconds: 1,
};

fn config() -> ReconcileConfig {
    ReconcileConfig {
        every: Duration::from_secs(60),
        thresholds: ONE_SECOND,
    }
}

async fn reconciliation_alerts(m: &TestMotor) -> Vec<Value> {
    let (status, body) = call(m, Method::GET, "/v1/admin/alerts", ADMIN_TOKEN, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["motivo"] == "reconciliacion")
        .cloned()
        .collect()
}

/// Marks a delivery `entregada` as a dispatcher would.
async fn deliver(m: &TestMotor, sub: impl std::fmt::Display, seq: i64) {
    let n = sqlx::query(
        "UPDATE deliveries SET estado = 'entregada', entregado_en = now(),
                proximo_intento = NULL, intentos = intentos + 1
         WHERE subscription_id = $1::uuid AND seq = $2 AND estado = 'pendiente'",
    )
    .bind(sub.to_string())
    .bind(seq)
    .execute(&m.db.pool)
    .await
    .unwrap()
    .rows_affected();
    assert_eq!(n, 1);
}

/// `motor doctor` against the test database: (exit code, report).
fn doctor(db_url: &str) -> (i32, Value) {
    let out = Command::new(crate::util::motor_bin())
        .arg("doctor")
        .env("MOTOR_DATABASE_URL", db_url)
        .env("MOTOR_RECONCILE_PENDIENTE_SECS", "1")
        .env("MOTOR_RECONCILE_CARRIL_SECS", "1")
        .env("MOTOR_RECONCILE_OUTBOX_SECS", "1")
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_lane_is_found_alerted_and_closed_when_healed() {
    // Only the API: nothing relays, dispatches or sweeps, so the lane is stuck.
    let m = TestMotor::start_on(TestDb::new().await, &[Role::Api]).await;
    let t = m.tenant(1).await;
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({"ordenado": true})).await;
    let instance = t.instances[0];
    for i in 0..2 {
        post(
            &m,
            &t,
            instance,
            json!({"type": "message.sent", "data": {"i": i}}),
        )
        .await;
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;

    // First pass: the head is due with no job and the outbox is behind; the
    // lane's head is seen for the first time (it has not been still long).
    let first = reconcile_once(&config(), &m.db.pool).await.unwrap();
    assert!(!first.ok);
    assert_eq!(first.stranded.len(), 1, "{first:#?}");
    assert_eq!(first.stranded[0].seq, 1);
    assert_eq!(first.stranded[0].subscription_id, sub.to_string());
    assert!(first.stalled_lanes.is_empty(), "{first:#?}");
    assert!(first.outbox_behind.as_ref().unwrap().rows >= 2);

    // A second pass more than the threshold later: the same head → stuck.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let second = reconcile_once(&config(), &m.db.pool).await.unwrap();
    assert_eq!(second.stalled_lanes.len(), 1, "{second:#?}");
    let lane = &second.stalled_lanes[0];
    assert_eq!(
        (
            lane.subscription_id.as_str(),
            lane.instance_id.as_str(),
            lane.lane.as_str(),
            lane.seq
        ),
        (
            sub.to_string().as_str(),
            instance.to_string().as_str(),
            "live",
            1
        )
    );
    let alerts = reconciliation_alerts(&m).await;
    assert_eq!(alerts.len(), 2, "{alerts:#?}");
    let of_sub = alerts
        .iter()
        .find(|a| a["suscripcion_id"] == sub.to_string())
        .expect("an alert for the subscription");
    assert_eq!(of_sub["app_id"], t.app.to_string());
    assert!(of_sub["cerrada_en"].is_null());
    assert!(of_sub["detalle"]
        .as_str()
        .unwrap()
        .contains("1 carriles detenidos"));
    let global = alerts
        .iter()
        .find(|a| a["suscripcion_id"].is_null())
        .expect("a global alert for the outbox");
    assert!(global["app_id"].is_null());
    assert!(global["detalle"].as_str().unwrap().contains("outbox"));

    // `motor doctor` reports the same and exits 2.
    let (code, report) = doctor(&m.db.url);
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["ok"], false);
    assert_eq!(
        report["carriles_detenidos"][0]["suscripcion_id"],
        sub.to_string()
    );

    // The head is delivered: the lane moved (a new head), though its next
    // delivery is still due with no job.
    deliver(&m, sub, 1).await;
    let moved = reconcile_once(&config(), &m.db.pool).await.unwrap();
    assert!(moved.stalled_lanes.is_empty(), "{moved:#?}");
    assert_eq!(moved.stranded.len(), 1);
    assert_eq!(moved.stranded[0].seq, 2);

    // Healed: everything delivered and relayed. Both alerts close.
    deliver(&m, sub, 2).await;
    sqlx::query("DELETE FROM outbox")
        .execute(&m.db.pool)
        .await
        .unwrap();
    let healed = reconcile_once(&config(), &m.db.pool).await.unwrap();
    assert!(healed.ok, "{healed:#?}");
    let alerts = reconciliation_alerts(&m).await;
    assert_eq!(alerts.len(), 2);
    assert!(
        alerts.iter().all(|a| !a["cerrada_en"].is_null()),
        "{alerts:#?}"
    );
    let seen: i64 = sqlx::query_scalar("SELECT count(*) FROM lane_heads_seen")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(seen, 0);
    let (code, report) = doctor(&m.db.url);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["ok"], true);
    m.stop().await;
}

#[test]
fn doctor_exits_1_when_it_cannot_check() {
    let (code, report) = doctor("postgres://nobody@127.0.0.1:1/nothing");
    assert_eq!(code, 1);
    assert!(report.is_null());
}

/// The sweeper role runs the job: with no relay, the outbox falls behind,
/// the finding shows in `/metrics` and a global alert opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_role_reconciles_and_counts_findings() {
    let m = TestMotor::start_configured(TestDb::new().await, &[Role::Api, Role::Sweeper], |c| {
        c.reconcile.reconcile_every_secs = 1;
        c.reconcile.reconcile_outbox_secs = 1;
    })
    .await;
    let t = m.tenant(1).await;
    let r = Receiver::start().await;
    subscribe(&m, &t, &r, json!({})).await;
    post(&m, &t, t.instances[0], json!({"type": "t", "data": {}})).await;
    let metrics = super::scrape_until(&m, "an outbox finding", |m| {
        m.get("motor_reconciliation_findings{tipo=\"outbox_atrasado\"}")
            .is_some_and(|n| *n >= 1.0)
    })
    .await;
    assert_eq!(
        metrics["motor_reconciliation_findings{tipo=\"carril_detenido\"}"],
        0.0
    );
    let alerts = reconciliation_alerts(&m).await;
    assert!(
        alerts
            .iter()
            .any(|a| a["suscripcion_id"].is_null() && a["cerrada_en"].is_null()),
        "{alerts:#?}"
    );
    m.stop().await;
}
