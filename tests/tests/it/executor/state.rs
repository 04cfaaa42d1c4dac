//! Instance state from the executor: `state.changed`, relinks and
//! generations, and commands bound to an older generation.

use motor::serve::Role;
use motor_domain::command::RawOptions;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{claim, executor_key, ledger, operation, post, send, stored, types_for};
use crate::util::TestMotor;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_state_change_appends_state_changed_and_a_relink_bumps_the_generation() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let (pool, instance) = (&m.db.pool, t.instances[0]);
    let exec = executor_key(&m, t.app).await;
    let path = format!("/v1/executor/instances/{instance}/state");

    let (status, body) = post(&m, &exec, &path, json!({"estado": "conectada"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"instance_id": instance.to_string(), "estado": "conectada",
               "estado_anterior": null, "generation": 1, "seq": 1})
    );
    // The same state again changes nothing and appends nothing.
    let (_, body) = post(&m, &exec, &path, json!({"estado": "conectada"})).await;
    assert_eq!(body["seq"], Value::Null);
    assert_eq!(ledger(pool, instance).await.len(), 1);

    // A control command's effect cites it.
    let unlink = operation(pool, t.app, instance, "desvincular").await;
    let (_, body) = post(
        &m,
        &exec,
        &path,
        json!({"estado": "desvinculada", "motivo": "el teléfono se desvinculó",
               "command_id": unlink.to_string()}),
    )
    .await;
    assert_eq!(body["seq"], 2, "{body}");
    assert_eq!(body["estado_anterior"], "conectada");

    // A relink: generation 2 from its own event on.
    let (_, body) = post(
        &m,
        &exec,
        &path,
        json!({"estado": "conectada", "revinculada": true}),
    )
    .await;
    assert_eq!(
        (body["generation"].as_i64(), body["seq"].as_i64()),
        (Some(2), Some(3)),
        "{body}"
    );
    let events = ledger(pool, instance).await;
    let shape: Vec<(&str, i64, &Value)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["generation"].as_i64().unwrap(),
                &e["data"],
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (
                "state.changed",
                1,
                &json!({"estado": "conectada", "revinculada": false})
            ),
            (
                "state.changed",
                1,
                &json!({"estado": "desvinculada", "estado_anterior": "conectada",
                        "revinculada": false, "motivo": "el teléfono se desvinculó",
                        "command_id": unlink.to_string()})
            ),
            (
                "state.changed",
                2,
                &json!({"estado": "conectada", "estado_anterior": "desvinculada",
                        "revinculada": true})
            ),
        ]
    );
    assert_eq!(events[1]["command_id"], unlink.to_string());
    assert_eq!(events[0]["origin"], "live");
    assert_eq!(types_for(&events, unlink), ["state.changed"]);

    // Bad reports name the field.
    let other = m.tenant(1).await;
    let foreign = operation(pool, other.app, other.instances[0], "pausar").await;
    for (body, field) in [
        (json!({}), "body.estado"),
        (json!({"estado": "online"}), "body.estado"),
        (
            json!({"estado": "pausada", "revinculada": true}),
            "body.revinculada",
        ),
        (json!({"estado": "pausada", "motivo": ""}), "body.motivo"),
        (
            json!({"estado": "pausada", "command_id": "x"}),
            "body.command_id",
        ),
        (
            json!({"estado": "pausada", "command_id": foreign.to_string()}),
            "body.command_id",
        ),
        (json!({"estado": "pausada", "otro": 1}), "body.otro"),
    ] {
        let (status, answer) = post(&m, &exec, &path, body.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body} → {answer}"
        );
        assert_eq!(answer["error"]["campo"], field, "{body} → {answer}");
    }
    // Another app's instance: 404.
    let (status, _) = post(
        &m,
        &exec,
        &format!("/v1/executor/instances/{}/state", other.instances[0]),
        json!({"estado": "pausada"}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_command_bound_to_the_old_generation_fails_at_its_claim() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let (pool, instance) = (&m.db.pool, t.instances[0]);
    let exec = executor_key(&m, t.app).await;
    let bound = send(
        pool,
        t.app,
        instance,
        "al número viejo",
        RawOptions {
            expected_generation: Some(1),
            ..Default::default()
        },
    )
    .await;
    let free = send(pool, t.app, instance, "a cualquiera", RawOptions::default()).await;
    let (status, body) = post(
        &m,
        &exec,
        &format!("/v1/executor/instances/{instance}/state"),
        json!({"estado": "conectada", "revinculada": true}),
    )
    .await;
    assert_eq!(
        (status, body["generation"].as_i64()),
        (StatusCode::OK, Some(2))
    );

    let (status, body) = claim(&m, &exec, bound).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let command = stored(pool, bound).await;
    assert_eq!(command.status.as_str(), "fallido");
    assert_eq!(command.error_code.as_deref(), Some("generacion_cambiada"));
    assert_eq!(command.stage.map(|s| s.as_str()), Some("previa"));
    let events = ledger(pool, instance).await;
    assert_eq!(
        types_for(&events, bound),
        ["command.accepted", "command.failed"]
    );
    let failed = events
        .iter()
        .find(|e| e["type"] == "command.failed")
        .unwrap();
    assert_eq!(failed["generation"], 2);
    // Accepted under generation 1, its acceptance keeps it.
    let accepted = events
        .iter()
        .find(|e| e["type"] == "command.accepted" && e["command_id"] == bound.to_string())
        .unwrap();
    assert_eq!(accepted["generation"], 1);
    // A command not bound to a generation goes out through the new link.
    assert_eq!(claim(&m, &exec, free).await.0, StatusCode::OK);
}
