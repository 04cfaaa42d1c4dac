//! What the producer's command routes refuse, through HTTP: a key without
//! the scope (403), a key restricted to other instances (403 to write,
//! 404 to read another instance's command), another app's command or
//! instance (404), and every bad field as a 422 naming it (413 when too
//! large) with nothing stored.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::client::Producer;
use crate::util::{key, Tenant};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_route_needs_its_scope() {
    let p = Producer::start(1).await;
    let i = p.instance();
    let sent = p
        .send(i, Some("s"), &json!({"chat": "549", "contenido": {}}))
        .await;
    let id = sent.body["id"].as_str().unwrap().to_owned();
    let pool = &p.m.db.pool;
    let read_only = key(pool, p.app, &["commands:read"], &[]).await;
    let write_only = key(pool, p.app, &["commands:write"], &[]).await;
    let events_only = key(pool, p.app, &["events:write", "events:read"], &[]).await;
    let executor = key(pool, p.app, &["commands:execute"], &[]).await;

    let send = (
        Method::POST,
        format!("/v1/instances/{i}/messages"),
        Some(json!({"chat": "549", "contenido": {}})),
    );
    let submit = (
        Method::POST,
        format!("/v1/instances/{i}/commands"),
        Some(json!({"tipo": "pausar"})),
    );
    let cancel = (Method::POST, format!("/v1/commands/{id}/cancel"), None);
    let get = (Method::GET, format!("/v1/commands/{id}"), None);
    let list = (Method::GET, format!("/v1/instances/{i}/commands"), None);
    let writes = [&send, &submit, &cancel];
    let reads = [&get, &list];
    let mut n = 0;
    for (token, may_write, may_read) in [
        (&read_only, false, true),
        (&write_only, true, false),
        (&events_only, false, false),
        (&executor, false, false),
    ] {
        for (route, allowed) in writes
            .iter()
            .map(|r| (r, may_write))
            .chain(reads.iter().map(|r| (r, may_read)))
        {
            let (method, path, body) = *route;
            n += 1;
            let k = format!("scope-{n}");
            let answer = p
                .call_as(token, method.clone(), path, Some(&k), body.as_ref())
                .await;
            if allowed {
                assert!(
                    answer.status.is_success(),
                    "{method} {path}: {}",
                    answer.body
                );
            } else {
                assert_eq!(answer.status, StatusCode::FORBIDDEN, "{method} {path}");
                assert_eq!(answer.body["error"]["code"], "sin_permiso");
            }
        }
    }
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_restricted_to_instances_acts_on_those_only() {
    let p = Producer::start(2).await;
    let (mine, theirs) = (p.instances[0], p.instances[1]);
    let restricted = key(
        &p.m.db.pool,
        p.app,
        &["commands:write", "commands:read"],
        &[mine],
    )
    .await;
    let body = json!({"chat": "549", "contenido": {}});
    let other = p.send(theirs, Some("t"), &body).await;
    let other_id = other.body["id"].as_str().unwrap();

    let path = format!("/v1/instances/{theirs}/messages");
    let refused = p
        .call_as(&restricted, Method::POST, &path, Some("r"), Some(&body))
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    let list = format!("/v1/instances/{theirs}/commands");
    let listed = p.call_as(&restricted, Method::GET, &list, None, None).await;
    assert_eq!(listed.status, StatusCode::FORBIDDEN);
    for (method, path) in [
        (Method::GET, format!("/v1/commands/{other_id}")),
        (Method::POST, format!("/v1/commands/{other_id}/cancel")),
    ] {
        let hidden = p.call_as(&restricted, method, &path, None, None).await;
        assert_eq!(hidden.status, StatusCode::NOT_FOUND, "{path}");
    }
    let path = format!("/v1/instances/{mine}/messages");
    let allowed = p
        .call_as(&restricted, Method::POST, &path, Some("r"), Some(&body))
        .await;
    assert_eq!(allowed.status, StatusCode::ACCEPTED, "{}", allowed.body);
    assert_eq!(p.get(other_id).await.body["status"], "en_cola");
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_apps_commands_and_instances_are_not_found() {
    let p = Producer::start(1).await;
    let i = p.instance();
    let sent = p
        .send(i, Some("mine"), &json!({"chat": "549", "contenido": {}}))
        .await;
    let id = sent.body["id"].as_str().unwrap().to_owned();
    let stranger = Tenant::create(&p.m.db.pool, 1).await;
    let theirs = key(
        &p.m.db.pool,
        stranger.app,
        &["commands:write", "commands:read"],
        &[],
    )
    .await;
    let unknown = uuid::Uuid::now_v7();
    for (method, path, body) in [
        (Method::GET, format!("/v1/commands/{id}"), None),
        (Method::POST, format!("/v1/commands/{id}/cancel"), None),
        (Method::GET, format!("/v1/instances/{i}/commands"), None),
        (
            Method::POST,
            format!("/v1/instances/{i}/messages"),
            Some(json!({"chat": "549", "contenido": {}})),
        ),
        (
            Method::POST,
            format!("/v1/instances/{i}/commands"),
            Some(json!({"tipo": "pausar"})),
        ),
        (Method::GET, format!("/v1/commands/{unknown}"), None),
        (Method::POST, format!("/v1/commands/{unknown}/cancel"), None),
        (Method::GET, "/v1/commands/not-an-id".to_owned(), None),
    ] {
        let answer = p
            .call_as(&theirs, method, &path, Some("k"), body.as_ref())
            .await;
        assert_eq!(
            answer.status,
            StatusCode::NOT_FOUND,
            "{path}: {}",
            answer.body
        );
        assert_eq!(answer.body["error"]["code"], "no_encontrado");
    }
    assert_eq!(p.get(&id).await.body["status"], "en_cola", "untouched");
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_bad_request_is_refused_naming_its_field_and_stores_nothing() {
    let p = Producer::start(1).await;
    let i = p.instance();
    let past = "2020-01-01T00:00:00Z";
    let long = "x".repeat(201);
    let send = |extra: Value| {
        let mut body = json!({"chat": "549", "contenido": {"texto": "hola"}});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let big = json!({"chat": "549", "contenido": {"texto": "x".repeat(70 * 1024)}});
    // (route, Idempotency-Key, body, status, field)
    let messages = "messages";
    let commands = "commands";
    let cases: Vec<(&str, Option<&str>, Value, StatusCode, &str)> = vec![
        (
            messages,
            None,
            send(json!({})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "header.Idempotency-Key",
        ),
        (
            messages,
            Some(long.as_str()),
            send(json!({})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "header.Idempotency-Key",
        ),
        (
            commands,
            Some(long.as_str()),
            json!({"tipo": "pausar"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "header.Idempotency-Key",
        ),
        (
            messages,
            Some("k"),
            send(json!({"expires_at": past})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.expires_at",
        ),
        (
            messages,
            Some("k"),
            send(json!({"expires_at": "mañana"})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.expires_at",
        ),
        (
            commands,
            None,
            json!({"tipo": "grupos", "expires_at": past}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.expires_at",
        ),
        (
            messages,
            Some("k"),
            send(json!({"chat": ""})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.chat",
        ),
        (
            messages,
            Some("k"),
            send(json!({"chat": "   "})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.chat",
        ),
        (
            messages,
            Some("k"),
            send(json!({"chat": long})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.chat",
        ),
        (
            messages,
            Some("k"),
            send(json!({"chat": "54\u{0}9"})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.chat",
        ),
        (
            messages,
            Some("k"),
            json!({"contenido": {}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.chat",
        ),
        (
            messages,
            Some("k"),
            json!({"chat": "549"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.contenido",
        ),
        (
            messages,
            Some("k"),
            send(json!({"contenido": "hola"})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.contenido",
        ),
        (
            messages,
            Some("k"),
            send(json!({"contenido": null})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.contenido",
        ),
        (
            messages,
            Some("k"),
            send(json!({"contenido": [1]})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.contenido",
        ),
        (
            messages,
            Some("k"),
            send(json!({"correlation_id": long})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.correlation_id",
        ),
        (
            messages,
            Some("k"),
            send(json!({"generacion_esperada": 0})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.generacion_esperada",
        ),
        (
            messages,
            Some("k"),
            send(json!({"generacion_esperada": "1"})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.generacion_esperada",
        ),
        (
            messages,
            Some("k"),
            send(json!({"tipo": "mensaje"})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.tipo",
        ),
        (
            commands,
            None,
            json!({"tipo": "enviar"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.tipo",
        ),
        (
            commands,
            None,
            json!({"tipo": "mensaje"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.tipo",
        ),
        (
            commands,
            None,
            json!({"parametros": {}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.tipo",
        ),
        (
            commands,
            None,
            json!({"tipo": "grupos", "parametros": "unirse"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.parametros",
        ),
        (
            commands,
            None,
            json!({"tipo": "grupos", "parametros": [1]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.parametros",
        ),
        (
            commands,
            None,
            json!({"tipo": "grupos", "chat": "549"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.chat",
        ),
        (
            messages,
            Some("k"),
            big,
            StatusCode::PAYLOAD_TOO_LARGE,
            "body.contenido",
        ),
        (
            commands,
            None,
            json!({"tipo": "grupos", "parametros": {"x": "y".repeat(70 * 1024)}}),
            StatusCode::PAYLOAD_TOO_LARGE,
            "body.parametros",
        ),
    ];
    for (route, k, body, status, field) in cases {
        let path = format!("/v1/instances/{i}/{route}");
        let answer = p.call(Method::POST, &path, k, Some(&body)).await;
        let shown: String = body.to_string().chars().take(120).collect();
        assert_eq!(answer.status, status, "{route} {shown}: {}", answer.body);
        assert_eq!(answer.field(), field, "{route} {shown}: {}", answer.body);
    }
    // A key that is not text, and bad listing parameters.
    let path = format!("/v1/instances/{i}/messages");
    let answer =
        p.m.http
            .post(p.m.url(&path))
            .bearer_auth(&p.token)
            .header(
                "Idempotency-Key",
                reqwest::header::HeaderValue::from_bytes(b"cl\xe9").unwrap(),
            )
            .json(&json!({"chat": "549", "contenido": {}}))
            .send()
            .await
            .unwrap();
    assert_eq!(answer.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["campo"], "header.Idempotency-Key");
    for (query, field) in [
        ("status=pendiente", "query.status"),
        ("status=en_cola,", "query.status"),
        ("pagina=0", "query.pagina"),
        ("por_pagina=201", "query.por_pagina"),
    ] {
        let path = format!("/v1/instances/{i}/commands?{query}");
        let answer = p.call(Method::GET, &path, None, None).await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{query}");
        assert_eq!(answer.field(), field, "{query}");
    }
    assert_eq!(p.stored().await, 0);
    assert!(p.ledger(i).await.is_empty());
    p.m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_apps_system_instance_takes_no_commands() {
    let p = Producer::start(1).await;
    let system: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM instances WHERE app_id = $1 AND sistema")
            .bind(uuid::Uuid::from(p.app))
            .fetch_one(&p.m.db.pool)
            .await
            .unwrap();
    for (route, body) in [
        ("messages", json!({"chat": "549", "contenido": {}})),
        ("commands", json!({"tipo": "reconectar"})),
    ] {
        let path = format!("/v1/instances/{system}/{route}");
        let answer = p.call(Method::POST, &path, Some("sys"), Some(&body)).await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{route}: {}",
            answer.body
        );
    }
    assert_eq!(p.stored().await, 0);
    p.m.stop().await;
}
