//! The sweeper's two command jobs, with the sweeper role running: a
//! command past `expires_at` ends `fallido` before any claim, a lease
//! that runs out ends `ambiguo`; a heartbeat extends a lease until then,
//! and is refused after.

use std::time::{Duration, Instant};

use motor::serve::Role;
use motor_domain::{
    command::{CommandId, CommandStatus, RawOptions},
    time,
};
use motor_store::Pool;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{claim, executor_key, ledger, post, report, send, stored, types_for};
use crate::util::TestMotor;

async fn wait_for(pool: &Pool, id: CommandId, status: CommandStatus) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if stored(pool, id).await.status == status {
            return;
        }
        assert!(Instant::now() < deadline, "{id} never became {status}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_command_past_expires_at_becomes_fallido_and_never_reaches_a_claim() {
    let m = TestMotor::start(&[Role::Api, Role::Sweeper]).await;
    let t = m.tenant(1).await;
    let (pool, instance) = (&m.db.pool, t.instances[0]);
    let exec = executor_key(&m, t.app).await;
    let expires = time::now_millis() + chrono::TimeDelta::milliseconds(1500);
    let id = send(
        pool,
        t.app,
        instance,
        "vence",
        RawOptions {
            expires_at: Some(&time::format(&expires)),
            ..Default::default()
        },
    )
    .await;
    wait_for(pool, id, CommandStatus::Failed).await;
    let command = stored(pool, id).await;
    assert!(command.updated_at >= expires, "failed before expires_at");
    assert_eq!(command.error_code.as_deref(), Some("comando_vencido"));
    assert_eq!(command.stage.map(|s| s.as_str()), Some("previa"));
    assert_eq!(command.claims, 0);
    let events = ledger(pool, instance).await;
    assert_eq!(
        types_for(&events, id),
        ["command.accepted", "command.failed"]
    );
    let failed = events
        .iter()
        .find(|e| e["type"] == "command.failed")
        .unwrap();
    assert_eq!(failed["data"]["error_code"], "comando_vencido");
    // No executor gets it now: not answered, not claimable.
    let res = m
        .http
        .get(m.url(&format!("/v1/executor/commands?instance={instance}")))
        .bearer_auth(&exec)
        .send()
        .await
        .unwrap();
    let page: serde_json::Value = res.json().await.unwrap();
    assert_eq!(page["commands"], json!([]));
    assert_eq!(claim(&m, &exec, id).await.0, StatusCode::CONFLICT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lease_that_runs_out_makes_the_command_ambiguo() {
    let m = TestMotor::start(&[Role::Api, Role::Sweeper]).await;
    let t = m.tenant(1).await;
    let (pool, instance) = (&m.db.pool, t.instances[0]);
    let exec = executor_key(&m, t.app).await;
    let id = send(
        pool,
        t.app,
        instance,
        "sin respuesta",
        RawOptions::default(),
    )
    .await;
    let (status, claimed) = claim(&m, &exec, id).await;
    assert_eq!(status, StatusCode::OK);
    // The executor went silent. Leases last 30 s: bring this one's end
    // forward rather than wait it out.
    sqlx::query("UPDATE commands SET reservado_hasta = now() - interval '1 second' WHERE id = $1")
        .bind(uuid::Uuid::from(id))
        .execute(pool)
        .await
        .unwrap();
    wait_for(pool, id, CommandStatus::Ambiguous).await;
    let command = stored(pool, id).await;
    assert_eq!(command.stage.map(|s| s.as_str()), Some("frontera"));
    assert_eq!(command.error_code.as_deref(), Some("reserva_vencida"));
    assert_eq!(command.lease_until, None);
    let events = ledger(pool, instance).await;
    assert_eq!(
        types_for(&events, id),
        ["command.accepted", "command.ambiguous"]
    );
    // The executor's late report is refused: Motor keeps ambiguo, and
    // never sends it again by itself.
    let (status, _) = report(
        &m,
        &exec,
        id,
        json!({"reserva": claimed["reserva"], "status": "enviado", "provider_message_id": "w",
               "chat": "549", "aceptado_en": "2026-10-24T15:10:01Z"}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(claim(&m, &exec, id).await.0, StatusCode::CONFLICT);
}

async fn heartbeat(m: &TestMotor, token: &str, id: CommandId, body: Value) -> (StatusCode, Value) {
    post(
        m,
        token,
        &format!("/v1/executor/commands/{id}/heartbeat"),
        body,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_heartbeat_extends_the_lease_and_is_refused_once_the_lease_is_lost() {
    let m = TestMotor::start(&[Role::Api, Role::Sweeper]).await;
    let t = m.tenant(1).await;
    let other = m.tenant(1).await;
    let (pool, instance) = (&m.db.pool, t.instances[0]);
    let exec = executor_key(&m, t.app).await;
    let foreign = executor_key(&m, other.app).await;
    let id = send(pool, t.app, instance, "lento", RawOptions::default()).await;
    let (status, claimed) = claim(&m, &exec, id).await;
    assert_eq!(status, StatusCode::OK);
    let lease = claimed["reserva"].clone();
    // The provider call has taken most of the lease: its end is near.
    sqlx::query(
        "UPDATE commands SET reservado_hasta = now() + interval '500 milliseconds' WHERE id = $1",
    )
    .bind(uuid::Uuid::from(id))
    .execute(pool)
    .await
    .unwrap();
    let before = time::now_millis();
    let (status, beat) = heartbeat(&m, &exec, id, json!({ "reserva": lease })).await;
    assert_eq!(status, StatusCode::OK, "{beat}");
    assert_eq!(beat["status"], "ejecutando");
    let command = stored(pool, id).await;
    let until = command.lease_until.expect("still leased");
    // One lease length (30 s) from the heartbeat, as answered.
    assert!(
        until >= before + chrono::TimeDelta::seconds(29),
        "lease until {until}"
    );
    assert_eq!(beat["reservado_hasta"], time::format(&until));
    assert_eq!(command.status, CommandStatus::Executing);

    // Refusals: the field named, another token 409, another app's 404.
    for (body, field) in [
        (json!({}), "body.reserva"),
        (json!({"reserva": "nope"}), "body.reserva"),
        (json!({"reserva": lease, "extra": 1}), "body.extra"),
    ] {
        let (status, answer) = heartbeat(&m, &exec, id, body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(answer["error"]["campo"], field, "{body}: {answer}");
    }
    let stranger = json!({ "reserva": uuid::Uuid::new_v4().to_string() });
    assert_eq!(
        heartbeat(&m, &exec, id, stranger).await.0,
        StatusCode::CONFLICT
    );
    assert_eq!(
        heartbeat(&m, &foreign, id, json!({ "reserva": lease }))
            .await
            .0,
        StatusCode::NOT_FOUND
    );

    // The executor goes silent and the lease runs out: the sweeper makes
    // the command ambiguo, and a heartbeat then is a 409 that changes
    // nothing.
    sqlx::query("UPDATE commands SET reservado_hasta = now() - interval '1 second' WHERE id = $1")
        .bind(uuid::Uuid::from(id))
        .execute(pool)
        .await
        .unwrap();
    wait_for(pool, id, CommandStatus::Ambiguous).await;
    let (status, body) = heartbeat(&m, &exec, id, json!({ "reserva": lease })).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "conflicto");
    let command = stored(pool, id).await;
    assert_eq!(command.status, CommandStatus::Ambiguous);
    assert_eq!(command.lease_until, None);

    // The metrics counted the claim, the one heartbeat taken and the
    // sweeper's ending.
    let text = m
        .http
        .get(m.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "motor_command_claims_total 1\n",
        "motor_command_heartbeats_total 1\n",
        "motor_command_sweeps_total{tipo=\"reserva_vencida\"} 1\n",
        "motor_command_poll_waiters 0\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}
