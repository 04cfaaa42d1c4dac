//! Claim and report: each status with its ledger event, deferral and
//! re-claim, the lease, bad reports, other apps, scopes, races.

use std::time::Duration;

use motor::serve::Role;
use motor_domain::{command::RawOptions, time};
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{claim, executor_key, ledger, operation, post, report, send, stored, types_for};
use crate::util::TestMotor;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_report_records_its_status_and_its_event_in_the_same_commit() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let (pool, instance) = (&m.db.pool, t.instances[0]);
    let exec = executor_key(&m, t.app).await;

    // enviado → message.sent, with what the provider said.
    let id = send(pool, t.app, instance, "hola", RawOptions::default()).await;
    let (status, claimed) = claim(&m, &exec, id).await;
    assert_eq!(status, StatusCode::OK, "{claimed}");
    assert_eq!(claimed["comando"]["status"], "ejecutando");
    assert_eq!(claimed["comando"]["contenido"], json!({"texto": "hola"}));
    assert_eq!(claimed["comando"]["tipo"], "mensaje");
    assert_eq!(claimed["comando"]["reclamos"], 1);
    assert_eq!(
        claimed["reservado_hasta"],
        claimed["comando"]["reservado_hasta"]
    );
    let lease = claimed["reserva"].as_str().unwrap().to_owned();
    let (status, body) = report(
        &m,
        &exec,
        id,
        json!({"reserva": lease, "status": "enviado", "provider_message_id": "wamid.1",
               "chat": "5491100000000", "aceptado_en": "2026-10-24T15:10:01Z"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "enviado");
    assert_eq!(body["provider_message_id"], "wamid.1");
    // The answer came after the commit: the event is there already.
    let events = ledger(pool, instance).await;
    assert_eq!(types_for(&events, id), ["command.accepted", "message.sent"]);
    let sent = events.iter().find(|e| e["type"] == "message.sent").unwrap();
    assert_eq!(sent["data"]["provider_message_id"], "wamid.1");
    assert_eq!(sent["data"]["chat"], "5491100000000");
    assert_eq!(sent["occurred_at"], "2026-10-24T15:10:01Z");
    assert_eq!(sent["origin"], "operator");

    // completado (a remote operation) appends nothing more.
    let id = operation(pool, t.app, instance, "grupos").await;
    let (_, claimed) = claim(&m, &exec, id).await;
    assert_eq!(claimed["comando"]["parametros"], json!({"op": "join"}));
    let (status, body) = report(
        &m,
        &exec,
        id,
        json!({"reserva": claimed["reserva"], "status": "completado"}),
    )
    .await;
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::OK, Some("completado"))
    );
    assert_eq!(
        types_for(&ledger(pool, instance).await, id),
        ["command.accepted"]
    );

    // fallido at the server → command.failed with its codes.
    let id = send(pool, t.app, instance, "chau", RawOptions::default()).await;
    let (_, claimed) = claim(&m, &exec, id).await;
    let (status, body) = report(
        &m,
        &exec,
        id,
        json!({"reserva": claimed["reserva"], "status": "fallido", "error_code": "rechazado",
               "stage": "servidor", "server_code": "131026"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let events = ledger(pool, instance).await;
    assert_eq!(
        types_for(&events, id),
        ["command.accepted", "command.failed"]
    );
    let failed = events
        .iter()
        .find(|e| e["type"] == "command.failed")
        .unwrap();
    assert_eq!(failed["data"]["stage"], "servidor");
    assert_eq!(failed["data"]["server_code"], "131026");
    assert_eq!(failed["data"]["error_code"], "rechazado");

    // ambiguo → command.ambiguous at the frontera.
    let id = send(pool, t.app, instance, "quizás", RawOptions::default()).await;
    let (_, claimed) = claim(&m, &exec, id).await;
    let (status, body) = report(
        &m,
        &exec,
        id,
        json!({"reserva": claimed["reserva"], "status": "ambiguo", "error_code": "timeout"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["stage"], "frontera");
    let events = ledger(pool, instance).await;
    assert_eq!(
        types_for(&events, id),
        ["command.accepted", "command.ambiguous"]
    );
    // A finished command takes no second report, even under its lease.
    let (status, _) = report(
        &m,
        &exec,
        id,
        json!({"reserva": claimed["reserva"], "status": "fallido", "error_code": "x", "stage": "previa"}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    // Seqs stay gapless across all of it.
    let seqs: Vec<i64> = events.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deferral_waits_for_next_try_and_is_claimed_again_under_a_new_lease() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let (pool, instance) = (&m.db.pool, t.instances[0]);
    let exec = executor_key(&m, t.app).await;
    let id = send(pool, t.app, instance, "luego", RawOptions::default()).await;
    let (_, first) = claim(&m, &exec, id).await;
    let next_try = time::now_millis() + chrono::TimeDelta::milliseconds(1500);
    let (status, body) = report(
        &m,
        &exec,
        id,
        json!({"reserva": first["reserva"], "status": "en_cola", "next_try": time::format(&next_try)}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "en_cola");
    assert_eq!(body["reservado_hasta"], Value::Null);
    // Not claimable before next_try.
    let (status, body) = claim(&m, &exec, id).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // The long-poll answers it once due (it waits for next_try).
    let res = m
        .http
        .get(m.url(&format!(
            "/v1/executor/commands?instance={instance}&wait=10"
        )))
        .bearer_auth(&exec)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(time::now_millis() >= next_try, "answered before next_try");
    let page: Value = res.json().await.unwrap();
    assert_eq!(page["commands"][0]["command_id"], id.to_string());
    let (status, second) = claim(&m, &exec, id).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["comando"]["reclamos"], 2);
    assert_ne!(second["reserva"], first["reserva"]);
    // The first lease is stale: 409, and nothing changes.
    let sent = |lease: &Value| {
        json!({"reserva": lease, "status": "enviado", "provider_message_id": "wamid.2",
               "chat": "549", "aceptado_en": "2026-10-24T15:10:01Z"})
    };
    let (status, body) = report(&m, &exec, id, sent(&first["reserva"])).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "conflicto");
    assert_eq!(stored(pool, id).await.status.as_str(), "ejecutando");
    let (status, _) = report(&m, &exec, id, sent(&second["reserva"])).await;
    assert_eq!(status, StatusCode::OK);
    let events = ledger(pool, instance).await;
    assert_eq!(types_for(&events, id), ["command.accepted", "message.sent"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_reports_name_the_field_and_unknown_or_foreign_commands_are_404() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let other = m.tenant(1).await;
    let (pool, instance) = (&m.db.pool, t.instances[0]);
    let exec = executor_key(&m, t.app).await;
    let id = send(pool, t.app, instance, "x", RawOptions::default()).await;
    let (_, claimed) = claim(&m, &exec, id).await;
    let lease = claimed["reserva"].clone();
    let cases = [
        (json!({"status": "completado"}), "body.reserva"),
        (
            json!({"reserva": "nope", "status": "completado"}),
            "body.reserva",
        ),
        (json!({"reserva": lease}), "body.status"),
        (json!({"reserva": lease, "status": "hecho"}), "body.status"),
        (
            json!({"reserva": lease, "status": "completado"}),
            "body.status",
        ),
        (
            json!({"reserva": lease, "status": "enviado", "chat": "1", "aceptado_en": "2026-10-24T15:10:01Z"}),
            "body.provider_message_id",
        ),
        (
            json!({"reserva": lease, "status": "enviado", "provider_message_id": "w", "chat": "1", "aceptado_en": "ayer"}),
            "body.aceptado_en",
        ),
        (
            json!({"reserva": lease, "status": "enviado", "provider_message_id": "w", "chat": "1", "aceptado_en": "2026-10-24T15:10:01Z", "next_try": "2026-10-24T15:10:01Z"}),
            "body.next_try",
        ),
        (
            json!({"reserva": lease, "status": "fallido", "error_code": "x", "stage": "frontera"}),
            "body.stage",
        ),
        (
            json!({"reserva": lease, "status": "fallido", "error_code": "x", "stage": "previa", "server_code": "1"}),
            "body.server_code",
        ),
        (
            json!({"reserva": lease, "status": "fallido", "stage": "previa"}),
            "body.error_code",
        ),
        (
            json!({"reserva": lease, "status": "en_cola"}),
            "body.next_try",
        ),
        (
            json!({"reserva": lease, "status": "ambiguo", "extra": 1}),
            "body.extra",
        ),
        (json!({"reserva": lease, "status": 5}), "body.status"),
    ];
    for (body, field) in cases {
        let (status, answer) = report(&m, &exec, id, body.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body} → {answer}"
        );
        assert_eq!(answer["error"]["campo"], field, "{body} → {answer}");
    }
    assert_eq!(stored(pool, id).await.status.as_str(), "ejecutando");

    // Another lease: 409.
    let stale = json!({"reserva": uuid::Uuid::new_v4(), "status": "ambiguo"});
    let (status, _) = report(&m, &exec, id, stale).await;
    assert_eq!(status, StatusCode::CONFLICT);

    // Unknown, malformed and another app's: 404 for both routes.
    let foreign = executor_key(&m, other.app).await;
    let unknown = motor_domain::command::CommandId::new();
    for (token, path) in [
        (&exec, format!("/v1/executor/commands/{unknown}/claim")),
        (&exec, format!("/v1/executor/commands/{unknown}/report")),
        (&exec, "/v1/executor/commands/not-an-id/claim".to_owned()),
        (&foreign, format!("/v1/executor/commands/{id}/claim")),
        (&foreign, format!("/v1/executor/commands/{id}/report")),
    ] {
        let body = json!({"reserva": lease, "status": "ambiguo"});
        let (status, answer) = post(&m, token, &path, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path} → {answer}");
    }
    // A key restricted to another instance of the app does not see it.
    let restricted = crate::util::key(pool, t.app, &["commands:execute"], &[t.instances[1]]).await;
    let (status, _) = claim(&m, &restricted, id).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_executor_route_needs_commands_execute() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let id = send(&m.db.pool, t.app, instance, "x", RawOptions::default()).await;
    let writer = crate::util::key(
        &m.db.pool,
        t.app,
        &[
            "commands:write",
            "commands:read",
            "events:write",
            "events:read",
        ],
        &[],
    )
    .await;
    let routes = [
        ("POST", format!("/v1/executor/commands/{id}/claim")),
        ("POST", format!("/v1/executor/commands/{id}/report")),
        ("GET", format!("/v1/executor/commands?instance={instance}")),
        ("POST", format!("/v1/executor/instances/{instance}/state")),
    ];
    for (method, path) in &routes {
        let req = |token: Option<&str>| {
            let mut req = m
                .http
                .request(method.parse().unwrap(), m.url(path))
                .json(&json!({"status": "ambiguo", "estado": "conectada"}));
            if let Some(token) = token {
                req = req.bearer_auth(token);
            }
            req
        };
        let res = req(Some(&writer)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{method} {path}");
        let res = req(None).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{method} {path}");
    }
    assert_eq!(stored(&m.db.pool, id).await.status.as_str(), "en_cola");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_a_claim_and_a_cancel_racing_exactly_one_wins() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let (pool, instance) = (&m.db.pool, t.instances[0]);
    let exec = executor_key(&m, t.app).await;
    let (mut claims_won, mut cancels_won) = (0, 0);
    for round in 0..20 {
        let id = send(
            pool,
            t.app,
            instance,
            &format!("r{round}"),
            RawOptions::default(),
        )
        .await;
        // Two executors and the app's cancel, all at once.
        let cancel = async {
            let mut tx = pool.begin().await.unwrap();
            let done = motor_store::commands::cancel(&mut tx, t.app, id, time::now_millis()).await;
            tx.commit().await.unwrap();
            done.is_ok()
        };
        let ((s1, _), (s2, _), cancelled) =
            tokio::join!(claim(&m, &exec, id), claim(&m, &exec, id), cancel);
        let claimed = [s1, s2].iter().filter(|s| **s == StatusCode::OK).count();
        for s in [s1, s2] {
            assert!(s == StatusCode::OK || s == StatusCode::CONFLICT, "{s}");
        }
        assert_eq!(claimed + usize::from(cancelled), 1, "round {round}");
        let status = stored(pool, id).await.status;
        let events = types_for(&ledger(pool, instance).await, id);
        if cancelled {
            cancels_won += 1;
            assert_eq!(status.as_str(), "cancelado");
            assert_eq!(events, ["command.accepted", "command.cancelled"]);
        } else {
            claims_won += 1;
            assert_eq!(status.as_str(), "ejecutando");
            assert_eq!(events, ["command.accepted"]);
        }
    }
    eprintln!("claims won {claims_won}, cancels won {cancels_won}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claim_after_expires_at_fails_the_command_instead() {
    // No sweeper here: the claim itself finds it expired.
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let (pool, instance) = (&m.db.pool, t.instances[0]);
    let exec = executor_key(&m, t.app).await;
    let expires = time::now_millis() + chrono::TimeDelta::milliseconds(800);
    let id = send(
        pool,
        t.app,
        instance,
        "tarde",
        RawOptions {
            expires_at: Some(&time::format(&expires)),
            ..Default::default()
        },
    )
    .await;
    while time::now_millis() <= expires {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, body) = claim(&m, &exec, id).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("comando_vencido"),
        "{body}"
    );
    let command = stored(pool, id).await;
    assert_eq!(command.status.as_str(), "fallido");
    assert_eq!(command.error_code.as_deref(), Some("comando_vencido"));
    assert_eq!(command.stage.map(|s| s.as_str()), Some("previa"));
    assert_eq!(command.claims, 0, "nobody ever held it");
    let events = ledger(pool, instance).await;
    assert_eq!(
        types_for(&events, id),
        ["command.accepted", "command.failed"]
    );
    let (status, _) = claim(&m, &exec, id).await;
    assert_eq!(status, StatusCode::CONFLICT);
}
