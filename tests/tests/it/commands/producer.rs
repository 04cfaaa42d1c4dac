//! The producer's flow through HTTP against a serving Motor: a command is
//! answered 202 once committed, with `command.accepted` in the same
//! transaction (sends and remote operations; control commands append
//! nothing); the Idempotency-Key makes one command of many requests and is
//! resolved before `generacion_esperada` and `expires_at`; a cancel works
//! until an executor claims the command.

use std::time::Duration;

use motor_domain::{command::CommandId, time};
use reqwest::{header::LOCATION, Method, StatusCode};
use serde_json::{json, Value};

use super::client::Producer;

fn hello() -> Value {
    json!({"chat": "5491122334455@s.whatsapp.net", "contenido": {"texto": "hola", "n": 1}})
}

/// The transaction id that wrote a row, as Postgres keeps it (`xmin`).
async fn writer(p: &Producer, sql: &str, id: &str) -> String {
    sqlx::query_scalar(sql)
        .bind(id)
        .fetch_one(&p.m.db.pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_send_is_answered_202_once_committed_with_command_accepted_in_the_same_transaction() {
    let p = Producer::start(1).await;
    let i = p.instance();
    let before = time::now_millis();
    let sent = p.send(i, Some("k-1"), &hello()).await;
    assert_eq!(sent.status, StatusCode::ACCEPTED, "{}", sent.body);
    let c = &sent.body;
    let id = c["id"].as_str().unwrap().to_owned();
    assert_eq!(sent.headers[LOCATION], format!("/v1/commands/{id}"));
    assert_eq!(c["instance_id"], i.to_string());
    assert_eq!(c["tipo"], "mensaje");
    assert_eq!(c["status"], "en_cola");
    assert_eq!(c["chat"], "5491122334455@s.whatsapp.net");
    assert_eq!(c["contenido"], json!({"texto": "hola", "n": 1}));
    assert_eq!(c["parametros"], Value::Null);
    assert_eq!(c["generation"], 1);
    for absent in [
        "error_code",
        "stage",
        "server_code",
        "expires_at",
        "correlation_id",
    ] {
        assert_eq!(c[absent], Value::Null, "{absent}");
    }
    // Due at once: next_try is its acceptance.
    let next_try = time::parse(c["next_try"].as_str().unwrap()).unwrap();
    assert!(next_try >= before && next_try <= time::now_millis(), "{c}");
    assert_eq!(c["next_try"], c["creado_en"]);

    // Readable at once, the same command.
    let got = p.get(&id).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(&got.body, c);

    // Its command.accepted is in the ledger, citing it, written by the
    // very transaction that wrote its row.
    let accepted: Vec<Value> = p
        .ledger(i)
        .await
        .into_iter()
        .filter(|e| e["command_id"] == id.as_str())
        .collect();
    assert_eq!(accepted.len(), 1, "{accepted:?}");
    assert_eq!(accepted[0]["type"], "command.accepted");
    assert_eq!(accepted[0]["origin"], "operator");
    assert_eq!(accepted[0]["data"]["command_id"], id.as_str());
    assert_eq!(accepted[0]["data"]["tipo"], "mensaje");
    let row = writer(
        &p,
        "SELECT xmin::text FROM commands WHERE id = $1::uuid",
        &id,
    )
    .await;
    let event = writer(
        &p,
        "SELECT xmin::text FROM events WHERE (envelope::jsonb)->>'command_id' = $1",
        &id,
    )
    .await;
    assert_eq!(row, event, "the row and its event, one transaction");
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_remote_operation_appends_command_accepted_and_control_commands_append_nothing() {
    let p = Producer::start(1).await;
    let i = p.instance();
    let op = p
        .submit(
            i,
            None,
            &json!({"tipo": "grupos", "parametros": {"operacion": "unirse", "invitacion": "abc"},
                    "correlation_id": "pedido-7"}),
        )
        .await;
    assert_eq!(op.status, StatusCode::ACCEPTED, "{}", op.body);
    assert_eq!(op.body["tipo"], "grupos");
    assert_eq!(op.body["status"], "aceptado");
    assert_eq!(op.body["next_try"], Value::Null);
    assert_eq!(op.body["chat"], Value::Null);
    assert_eq!(op.body["contenido"], Value::Null);
    assert_eq!(op.body["correlation_id"], "pedido-7");
    assert_eq!(
        op.body["parametros"],
        json!({"operacion": "unirse", "invitacion": "abc"})
    );
    let op_id = op.body["id"].as_str().unwrap();
    assert_eq!(p.events_of(i, op_id).await, ["command.accepted"]);
    let ledger_before = p.ledger(i).await.len();

    // Absent parametros are {}; each control kind is stored, and appends
    // nothing.
    for tipo in [
        "reconectar",
        "desconectar",
        "pausar",
        "reanudar",
        "desvincular",
        "archivar",
    ] {
        let control = p.submit(i, None, &json!({"tipo": tipo})).await;
        assert_eq!(control.status, StatusCode::ACCEPTED, "{}", control.body);
        assert_eq!(control.body["status"], "aceptado");
        assert_eq!(control.body["tipo"], tipo);
        assert_eq!(control.body["parametros"], json!({}));
        let got = p.get(control.body["id"].as_str().unwrap()).await;
        assert_eq!(got.body["tipo"], tipo);
    }
    assert_eq!(
        p.ledger(i).await.len(),
        ledger_before,
        "control appends nothing"
    );
    assert_eq!(p.stored().await, 7);
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn fifty_identical_concurrent_requests_make_one_command() {
    let p = std::sync::Arc::new(Producer::start(1).await);
    let i = p.instance();
    let answers = futures::future::join_all((0..50).map(|_| {
        let p = p.clone();
        tokio::spawn(async move {
            let a = p.send(i, Some("once"), &hello()).await;
            (a.status, a.body["id"].as_str().map(str::to_owned))
        })
    }))
    .await;
    let mut ids = std::collections::BTreeSet::new();
    for answer in answers {
        let (status, id) = answer.unwrap();
        assert_eq!(status, StatusCode::ACCEPTED);
        ids.insert(id.unwrap());
    }
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(p.stored().await, 1);
    let id = ids.into_iter().next().unwrap();
    assert_eq!(p.events_of(i, &id).await, ["command.accepted"]);
    let p = std::sync::Arc::into_inner(p).unwrap();
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_key_answers_the_same_command_and_with_other_content_is_409() {
    let p = Producer::start(2).await;
    let (i, j) = (p.instances[0], p.instances[1]);
    let first = p.send(i, Some("k"), &hello()).await;
    assert_eq!(first.status, StatusCode::ACCEPTED);
    // The same request, its content's keys in another order: the same
    // command, 202 again.
    let repeat = p
        .send(
            i,
            Some("k"),
            &json!({"contenido": {"n": 1, "texto": "hola"}, "chat": "5491122334455@s.whatsapp.net"}),
        )
        .await;
    assert_eq!(repeat.status, StatusCode::ACCEPTED, "{}", repeat.body);
    assert_eq!(repeat.body, first.body);
    // The same key with another text, destination, expires_at or
    // correlation_id: 409, nothing stored.
    let later = time::format(&(time::now_millis() + chrono::TimeDelta::hours(1)));
    for other in [
        json!({"chat": "5491122334455@s.whatsapp.net", "contenido": {"texto": "chau", "n": 1}}),
        json!({"chat": "5491100000000@s.whatsapp.net", "contenido": {"texto": "hola", "n": 1}}),
        json!({"chat": "5491122334455@s.whatsapp.net", "contenido": {"texto": "hola", "n": 1}, "expires_at": later}),
        json!({"chat": "5491122334455@s.whatsapp.net", "contenido": {"texto": "hola", "n": 1}, "correlation_id": "x"}),
    ] {
        let conflict = p.send(i, Some("k"), &other).await;
        assert_eq!(
            conflict.status,
            StatusCode::CONFLICT,
            "{other}: {}",
            conflict.body
        );
        assert_eq!(conflict.body["error"]["code"], "conflicto");
    }
    // Another kind under a send's key is a conflict too.
    let other_kind = p.submit(i, Some("k"), &json!({"tipo": "perfil"})).await;
    assert_eq!(
        other_kind.status,
        StatusCode::CONFLICT,
        "{}",
        other_kind.body
    );
    // A key is per instance: the same key on another instance is new.
    let elsewhere = p.send(j, Some("k"), &hello()).await;
    assert_eq!(elsewhere.status, StatusCode::ACCEPTED);
    assert_ne!(elsewhere.body["id"], first.body["id"]);
    assert_eq!(p.stored().await, 2);
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stale_generation_is_409_and_a_repeat_after_a_relink_still_answers_its_command() {
    let p = Producer::start(1).await;
    let i = p.instance();
    let body = json!({"chat": "549", "contenido": {"texto": "hola"}, "generacion_esperada": 1});
    let first = p.send(i, Some("g"), &body).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{}", first.body);
    assert_eq!(first.body["generacion_esperada"], 1);

    // The instance is relinked: its generation moves on.
    sqlx::query("UPDATE instances SET generation = generation + 1 WHERE id = $1")
        .bind(uuid::Uuid::from(i))
        .execute(&p.m.db.pool)
        .await
        .unwrap();
    let repeat = p.send(i, Some("g"), &body).await;
    assert_eq!(repeat.status, StatusCode::ACCEPTED, "{}", repeat.body);
    assert_eq!(repeat.body["id"], first.body["id"]);

    let stale = p.send(i, Some("g2"), &body).await;
    assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.body);
    let message = stale.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("generation is 2"), "{message}");
    let ledger = p.ledger(i).await.len();

    let current = json!({"chat": "549", "contenido": {"texto": "hola"}, "generacion_esperada": 2});
    let fresh = p.send(i, Some("g2"), &current).await;
    assert_eq!(fresh.status, StatusCode::ACCEPTED, "{}", fresh.body);
    assert_eq!(fresh.body["generation"], 2);
    assert_eq!(p.ledger(i).await.len(), ledger + 1);
    assert_eq!(p.stored().await, 2);
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_repeat_that_arrives_after_its_expires_at_still_answers_its_command() {
    let p = Producer::start(1).await;
    let i = p.instance();
    let expires = time::now_millis() + chrono::TimeDelta::milliseconds(1500);
    let body = json!({"chat": "549", "contenido": {"texto": "hola"}, "expires_at": time::format(&expires)});
    let first = p.send(i, Some("e"), &body).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{}", first.body);
    // Wait for the condition itself: the expiry is behind us.
    while time::now_millis() <= expires + chrono::TimeDelta::milliseconds(50) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let repeat = p.send(i, Some("e"), &body).await;
    assert_eq!(repeat.status, StatusCode::ACCEPTED, "{}", repeat.body);
    assert_eq!(repeat.body["id"], first.body["id"]);
    // Under a new key the same past expires_at is refused.
    let fresh = p.send(i, Some("e2"), &body).await;
    assert_eq!(fresh.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(fresh.field(), "body.expires_at");
    // Under the same key with other content, the key's conflict comes first.
    let other = json!({"chat": "549", "contenido": {"texto": "otro"}, "expires_at": time::format(&expires)});
    let conflict = p.send(i, Some("e"), &other).await;
    assert_eq!(conflict.status, StatusCode::CONFLICT, "{}", conflict.body);
    assert_eq!(p.stored().await, 1);
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_while_en_cola_or_aceptado_is_cancelado_with_command_cancelled() {
    let p = Producer::start(1).await;
    let i = p.instance();
    let queued = p.send(i, Some("c"), &hello()).await;
    let control = p.submit(i, None, &json!({"tipo": "pausar"})).await;
    for (created, kind_events) in [
        (&queued, vec!["command.accepted", "command.cancelled"]),
        (&control, vec!["command.cancelled"]),
    ] {
        let id = created.body["id"].as_str().unwrap();
        let cancelled = p.cancel(id).await;
        assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.body);
        assert_eq!(cancelled.body["status"], "cancelado");
        assert_eq!(cancelled.body["id"], id);
        assert_eq!(p.get(id).await.body["status"], "cancelado");
        assert_eq!(p.events_of(i, id).await, kind_events);
        let cancelled_event: Vec<Value> = p
            .ledger(i)
            .await
            .into_iter()
            .filter(|e| e["type"] == "command.cancelled" && e["command_id"] == id)
            .collect();
        assert_eq!(cancelled_event[0]["data"]["command_id"], id);
        // Once cancelled, a second cancel is too late.
        let again = p.cancel(id).await;
        assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
        assert_eq!(
            p.events_of(i, id).await,
            kind_events,
            "nothing more appended"
        );
    }
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_after_an_executor_claimed_the_command_is_409() {
    let p = Producer::start(1).await;
    let i = p.instance();
    let sent = p.send(i, Some("claimed"), &hello()).await;
    let id = sent.body["id"].as_str().unwrap();
    let command: CommandId = id.parse().unwrap();
    let mut tx = p.m.db.pool.begin().await.unwrap();
    let claimed = motor_store::commands::claim(
        &mut tx,
        p.app,
        command,
        Duration::from_secs(60),
        time::now_millis(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(matches!(
        claimed,
        motor_store::commands::Claimed::Claimed { .. }
    ));

    let late = p.cancel(id).await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{}", late.body);
    let message = late.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("ejecutando"), "{message}");
    assert_eq!(p.get(id).await.body["status"], "ejecutando");
    assert_eq!(p.events_of(i, id).await, ["command.accepted"]);
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_instances_commands_are_listed_newest_first_filtered_by_status_and_paged() {
    let p = Producer::start(2).await;
    let (i, j) = (p.instances[0], p.instances[1]);
    let mut ids = Vec::new();
    for n in 0..3 {
        let a = p.send(i, Some(&format!("l{n}")), &hello()).await;
        ids.push(a.body["id"].as_str().unwrap().to_owned());
    }
    p.send(j, Some("other"), &hello()).await;
    assert_eq!(p.cancel(&ids[1]).await.status, StatusCode::OK);

    let list = |query: &str| {
        let path = format!("/v1/instances/{i}/commands{query}");
        let p = &p;
        async move { p.call(Method::GET, &path, None, None).await }
    };
    let ids_of = |body: &Value| -> Vec<String> {
        body["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = list("").await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.body);
    assert_eq!(
        ids_of(&all.body),
        [ids[2].as_str(), ids[1].as_str(), ids[0].as_str()]
    );
    assert_eq!(all.body["pagina"], 1);
    assert_eq!(all.body["por_pagina"], 50);
    assert_eq!(all.body["hay_mas"], false);

    let first = list("?por_pagina=2").await;
    assert_eq!(ids_of(&first.body), [ids[2].as_str(), ids[1].as_str()]);
    assert_eq!(first.body["hay_mas"], true);
    let second = list("?por_pagina=2&pagina=2").await;
    assert_eq!(ids_of(&second.body), [ids[0].as_str()]);
    assert_eq!(second.body["hay_mas"], false);

    let cancelled = list("?status=cancelado").await;
    assert_eq!(ids_of(&cancelled.body), [ids[1].as_str()]);
    let open = list("?status=en_cola,aceptado").await;
    assert_eq!(ids_of(&open.body), [ids[2].as_str(), ids[0].as_str()]);
    p.m.stop().await;
}

/// The answers are the documented shapes (`Comando`, `ComandoList`), for
/// every kind of command and after each change the producer can make.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_answers_are_the_documented_shapes() {
    use crate::openapi::{assert_matches, document};
    let doc = document();
    let p = Producer::start(1).await;
    let i = p.instance();
    let later = time::format(&(time::now_millis() + chrono::TimeDelta::hours(1)));
    let sent = p
        .send(
            i,
            Some("shape"),
            &json!({"chat": "549", "contenido": {"texto": "hola"}, "expires_at": later,
                    "correlation_id": "c-1", "generacion_esperada": 1}),
        )
        .await;
    assert_matches(&doc, "Comando", &sent.body);
    let op = p
        .submit(
            i,
            None,
            &json!({"tipo": "etiquetas", "parametros": {"a": [1]}}),
        )
        .await;
    assert_matches(&doc, "Comando", &op.body);
    let cancelled = p.cancel(op.body["id"].as_str().unwrap()).await;
    assert_matches(&doc, "Comando", &cancelled.body);
    let list = p
        .call(
            Method::GET,
            &format!("/v1/instances/{i}/commands"),
            None,
            None,
        )
        .await;
    assert_matches(&doc, "ComandoList", &list.body);
    let refused = p.submit(i, None, &json!({"tipo": "x"})).await;
    assert_matches(&doc, "ErrorBody", &refused.body);
    p.m.stop().await;
}
