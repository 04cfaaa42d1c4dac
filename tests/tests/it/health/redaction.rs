//! Content retention (`retencion.dias_contenido`): events older than it
//! keep their seq and envelope fields with `data` =
//! `{"motivo":"retencion","redactado":true}`, and the ledger API, replays
//! and webhooks carry that form. Time is simulated honestly: the test
//! back-dates `received_at` of the events it wants old, then runs the
//! sweeper's retention pass (`motor_engine::redact_once`) itself instead
//! of waiting a minute for the running one.

use motor_domain::InstanceId;
use motor_engine::{redact_once, SweeperConfig};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::patch_settings;
use crate::{
    deliveries::post,
    dispatch::{motor, receiver::Receiver, subscribe, wait_state, WAIT},
    replays::replay_ok,
    subscriptions::call,
    util::{TestMotor, ADMIN_TOKEN},
};

async fn ledger(m: &TestMotor, token: &str, instance: InstanceId) -> Vec<Value> {
    let (_, page) = call(
        m,
        Method::GET,
        &format!("/v1/instances/{instance}/events?limit=10"),
        token,
        None,
    )
    .await;
    page["events"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn old_content_is_redacted_everywhere_it_is_read() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({})).await;

    // Off by default; 1–3650 or null, named in the 422.
    let (_, settings) = call(&m, Method::GET, "/v1/admin/settings", ADMIN_TOKEN, None).await;
    assert_eq!(settings["retencion.dias_contenido"], Value::Null);
    for bad in [json!(0), json!(3651), json!("30"), json!(2.5)] {
        let (status, body) = patch_settings(&m, json!({"retencion.dias_contenido": bad})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["error"]["campo"], "body.retencion.dias_contenido");
    }

    let events: Vec<Value> = (1..=3)
        .map(|i| json!({"type": "message.received", "data": {"texto": format!("secreto {i}")}, "command_id": format!("c{i}")}))
        .collect();
    post(&m, &t, instance, Value::Array(events)).await;
    wait_state(&m, sub, "entregada", 3).await;
    let before = ledger(&m, &t.token, instance).await;

    // Nothing happens while it is off, even to old events.
    sqlx::query(
        "UPDATE events SET recibido_en = recibido_en - interval '2 days'
         WHERE instance_id = $1 AND seq <= 2",
    )
    .bind(instance.as_uuid())
    .execute(&m.db.pool)
    .await
    .unwrap();
    let config = SweeperConfig::default();
    assert_eq!(redact_once(&config, &m.db.pool).await.unwrap(), 0);
    assert_eq!(ledger(&m, &t.token, instance).await, before);

    let (status, body) = patch_settings(&m, json!({"retencion.dias_contenido": 1})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["retencion.dias_contenido"], 1);
    let redacted = redact_once(&config, &m.db.pool).await.unwrap();
    assert!(redacted <= 2, "only the two old events: {redacted}");
    assert_eq!(redact_once(&config, &m.db.pool).await.unwrap(), 0, "once");

    let after = ledger(&m, &t.token, instance).await;
    let marker = json!({"motivo": "retencion", "redactado": true});
    for (old, new) in before.iter().zip(&after).take(2) {
        let mut expected = old.clone();
        expected["data"] = marker.clone();
        assert_eq!(*new, expected, "every field but data stays");
    }
    assert_eq!(after[2], before[2], "a young event keeps its content");
    assert_eq!(after[2]["data"]["texto"], "secreto 3");

    // A replay sends what the ledger now holds.
    replay_ok(
        &m,
        &t,
        sub,
        json!({"instancia_id": instance, "desde_seq": 1, "hasta_seq": 3, "motivo": "auditoría"}),
    )
    .await;
    r.wait_for("3 replayed deliveries", WAIT, |seen| {
        seen.iter().filter(|s| s.replay_of.is_some()).count() >= 3
    })
    .await;
    for s in r.seen().iter().filter(|s| s.replay_of.is_some()) {
        let body: Value = serde_json::from_slice(&s.body).unwrap();
        assert!(s.verified);
        assert_eq!(body, after[(s.seq - 1) as usize], "seq {}", s.seq);
    }

    // Back off: what was redacted stays redacted, nothing else changes.
    let (status, _) = patch_settings(&m, json!({"retencion.dias_contenido": null})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ledger(&m, &t.token, instance).await, after);
}
