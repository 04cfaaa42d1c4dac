//! `GET /v1/deliveries` and `GET /v1/deliveries/{id}`: newest first,
//! filters, pages, bad filters, scopes, instance restrictions, other apps,
//! and the detail's exact shape after real attempts.

use std::collections::BTreeSet;

use chrono::Utc;
use motor::serve::Role;
use motor_domain::{
    delivery::{Decision, DeliveryId, ErrorCode},
    subscription::SubscriptionId,
};
use motor_store::{
    deliveries::{record_attempt, Attempt, Next},
    Pool,
};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::{
    delivery,
    lanes::{claim_ok, decide, one_claimed},
    post, subscribe,
};
use crate::{
    subscriptions::call,
    util::{key, TestMotor},
};

fn ev(event_type: &str) -> Value {
    json!({"type": event_type, "data": {"x": 1}})
}

/// The delivery ids a listing answers, as a set.
async fn only(m: &TestMotor, token: &str, query: &str) -> BTreeSet<String> {
    let (status, page) = list(m, token, query).await;
    assert_eq!(status, StatusCode::OK, "{query}: {page}");
    ids_of(&page).into_iter().collect()
}

async fn list(m: &TestMotor, token: &str, query: &str) -> (StatusCode, Value) {
    call(
        m,
        Method::GET,
        &format!("/v1/deliveries{query}"),
        token,
        None,
    )
    .await
}

fn ids_of(page: &Value) -> Vec<String> {
    page["entregas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["delivery_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Sets a delivery's state directly (the engine's writes are tested in
/// `lanes.rs`; here only reading matters).
async fn set_state(pool: &Pool, id: DeliveryId, estado: &str) {
    sqlx::query(
        "UPDATE deliveries SET estado = $2,
             proximo_intento = CASE WHEN $2 = 'pendiente' THEN proximo_intento END,
             entregado_en = CASE WHEN $2 = 'entregada' THEN now() END
         WHERE id = $1",
    )
    .bind(id.as_uuid())
    .bind(estado)
    .execute(pool)
    .await
    .unwrap();
}

#[tokio::test]
async fn the_list_is_newest_first_with_filters_and_pages() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let s1 = subscribe(&m, &t, json!({})).await;
    let s2 = subscribe(&m, &t, json!({"instancias": [b.to_string()]})).await;
    post(&m, &t, a, ev("t.one")).await; // s1: a1
    post(&m, &t, b, ev("t.two")).await; // s1: b1, s2: b1
    post(&m, &t, a, ev("t.three")).await; // s1: a2
    let a1 = delivery(&m.db.pool, s1, a, 1).await;
    let b1 = delivery(&m.db.pool, s1, b, 1).await;
    let b1s2 = delivery(&m.db.pool, s2, b, 1).await;
    let a2 = delivery(&m.db.pool, s1, a, 2).await;
    set_state(&m.db.pool, a1, "entregada").await;
    set_state(&m.db.pool, b1, "fallida").await;

    let (status, page) = list(&m, &t.token, "").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    // Newest first: a2, then b1's two (same transaction), then a1.
    let ids = ids_of(&page);
    assert_eq!(ids.len(), 4);
    assert_eq!(ids[0], a2.to_string());
    assert_eq!(
        BTreeSet::from([ids[1].clone(), ids[2].clone()]),
        BTreeSet::from([b1.to_string(), b1s2.to_string()])
    );
    assert_eq!(ids[3], a1.to_string());
    assert_eq!(
        (
            page["pagina"].clone(),
            page["por_pagina"].clone(),
            page["hay_mas"].clone()
        ),
        (json!(1), json!(50), json!(false))
    );

    let set = |ids: &[DeliveryId]| ids.iter().map(|i| i.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        only(&m, &t.token, "?estado=pendiente").await,
        set(&[a2, b1s2])
    );
    assert_eq!(
        only(&m, &t.token, "?estado=entregada,fallida").await,
        set(&[a1, b1])
    );
    assert_eq!(only(&m, &t.token, "?estado=fallida").await, set(&[b1]));
    let q = format!("?suscripcion_id={s2}");
    let (_, page) = list(&m, &t.token, &q).await;
    assert_eq!(ids_of(&page), [b1s2.to_string()]);
    let q = format!("?instancia_id={a}&estado=pendiente");
    let (_, page) = list(&m, &t.token, &q).await;
    assert_eq!(ids_of(&page), [a2.to_string()]);
    let q = format!("?suscripcion_id={}", SubscriptionId::new());
    assert!(ids_of(&list(&m, &t.token, &q).await.1).is_empty());

    // Pages of 3: 3 then 1; past the end, empty.
    let (_, p1) = list(&m, &t.token, "?por_pagina=3").await;
    let (_, p2) = list(&m, &t.token, "?por_pagina=3&pagina=2").await;
    let (_, p3) = list(&m, &t.token, "?por_pagina=3&pagina=3").await;
    assert_eq!((ids_of(&p1).len(), p1["hay_mas"].clone()), (3, json!(true)));
    assert_eq!(
        (ids_of(&p2).len(), p2["hay_mas"].clone()),
        (1, json!(false))
    );
    assert!(ids_of(&p3).is_empty());
    assert_eq!([ids_of(&p1), ids_of(&p2)].concat(), ids);
    let (_, exact) = list(&m, &t.token, "?por_pagina=4").await;
    assert_eq!(exact["hay_mas"], false);

    // Another app sees none of them.
    let other = m.tenant(1).await;
    let (status, page) = list(&m, &other.token, "").await;
    assert_eq!(status, StatusCode::OK);
    assert!(ids_of(&page).is_empty());
    m.stop().await;
}

#[tokio::test]
async fn bad_filters_name_the_parameter() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    for (query, field) in [
        ("?estado=", "query.estado"),
        ("?estado=activa", "query.estado"),
        ("?estado=pendiente,,fallida", "query.estado"),
        ("?estado=Pendiente", "query.estado"),
        ("?suscripcion_id=abc", "query.suscripcion_id"),
        ("?instancia_id=42", "query.instancia_id"),
        ("?pagina=0", "query.pagina"),
        ("?pagina=x", "query.pagina"),
        ("?por_pagina=0", "query.por_pagina"),
        ("?por_pagina=201", "query.por_pagina"),
        ("?por_pagina=-5", "query.por_pagina"),
    ] {
        let (status, body) = list(&m, &t.token, query).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {body}");
        assert_eq!(body["error"]["code"], "validacion", "{query}");
        assert_eq!(body["error"]["campo"], field, "{query}");
    }
    let (status, body) = list(
        &m,
        &t.token,
        "?por_pagina=200&pagina=1&estado=pendiente,entregada,fallida",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    m.stop().await;
}

#[tokio::test]
async fn scopes_and_instance_restrictions() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let sub = subscribe(&m, &t, json!({})).await;
    post(&m, &t, a, ev("t.a")).await;
    post(&m, &t, b, ev("t.b")).await;
    let da = delivery(&m.db.pool, sub, a, 1).await;
    let db = delivery(&m.db.pool, sub, b, 1).await;

    // No key, a bad key, a key without events:read.
    assert_eq!(list(&m, "", "").await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(list(&m, "nope", "").await.0, StatusCode::UNAUTHORIZED);
    let writer = key(
        &m.db.pool,
        t.app,
        &["events:write", "subscriptions:manage"],
        &[],
    )
    .await;
    let (status, body) = list(&m, &writer, "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let detail = format!("/v1/deliveries/{da}");
    assert_eq!(
        call(&m, Method::GET, &detail, &writer, None).await.0,
        StatusCode::FORBIDDEN
    );
    let reader = key(&m.db.pool, t.app, &["events:read"], &[]).await;
    assert_eq!(ids_of(&list(&m, &reader, "").await.1).len(), 2);

    // A key restricted to instance a sees a's only.
    let restricted = key(&m.db.pool, t.app, &["events:read"], &[a]).await;
    let (_, page) = list(&m, &restricted, "").await;
    assert_eq!(ids_of(&page), [da.to_string()]);
    let (_, page) = list(&m, &restricted, &format!("?instancia_id={a}")).await;
    assert_eq!(ids_of(&page), [da.to_string()]);
    let (status, _) = list(&m, &restricted, &format!("?instancia_id={b}")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        call(&m, Method::GET, &detail, &restricted, None).await.0,
        StatusCode::OK
    );
    let (status, body) = call(
        &m,
        Method::GET,
        &format!("/v1/deliveries/{db}"),
        &restricted,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // Another app's key, an unknown id, a malformed id: 404.
    let other = m.tenant(1).await;
    assert_eq!(
        call(&m, Method::GET, &detail, &other.token, None).await.0,
        StatusCode::NOT_FOUND
    );
    let unknown = format!("/v1/deliveries/{}", DeliveryId::new());
    assert_eq!(
        call(&m, Method::GET, &unknown, &t.token, None).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        call(&m, Method::GET, "/v1/deliveries/xyz", &t.token, None)
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    m.stop().await;
}

#[tokio::test]
async fn the_detail_shows_every_attempt_as_documented() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub, c) = one_claimed(&m, true).await;
    let (a, d) = (t.instances[0], c.delivery_id);
    let first = Attempt {
        started_at: motor_domain::time::parse("2026-10-24T15:08:13Z").unwrap(),
        duration: std::time::Duration::from_millis(41),
        status: Some(503),
        error: Some(ErrorCode::Http(503)),
        key_ids: vec!["whk_new".into(), "whk_old".into()],
    };
    record_attempt(
        &m.db.pool,
        &c,
        &first,
        &decide(&c, 503, None),
        Next::Release,
    )
    .await
    .unwrap();

    let path = format!("/v1/deliveries/{d}");
    let (status, body) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "delivery_id",
            "suscripcion_id",
            "suscripcion",
            "instance_id",
            "instancia",
            "event_id",
            "seq",
            "type",
            "estado",
            "intentos",
            "proximo_intento_en",
            "ultimo_status",
            "ultimo_error",
            "creada_en",
            "replay_of",
            "intentos_detalle"
        ]
    );
    assert!(body["replay_of"].is_null(), "a live delivery: {body}");
    let event_id: uuid::Uuid =
        sqlx::query_scalar("SELECT event_id FROM events WHERE instance_id = $1 AND seq = 1")
            .bind(a.as_uuid())
            .fetch_one(&m.db.pool)
            .await
            .unwrap();
    assert_eq!(body["delivery_id"], d.to_string());
    assert_eq!(body["suscripcion_id"], sub.to_string());
    assert_eq!(body["suscripcion"], "CRM principal");
    assert_eq!(body["instance_id"], a.to_string());
    assert_eq!(body["instancia"], "instance 0");
    assert_eq!(body["event_id"], event_id.to_string());
    assert_eq!(
        (body["seq"].clone(), body["type"].clone()),
        (json!(1), json!("message.received"))
    );
    assert_eq!(
        (body["estado"].clone(), body["intentos"].clone()),
        (json!("pendiente"), json!(1))
    );
    assert_eq!(
        (body["ultimo_status"].clone(), body["ultimo_error"].clone()),
        (json!(503), json!("http_503"))
    );
    let proximo = motor_domain::time::parse(body["proximo_intento_en"].as_str().unwrap()).unwrap();
    assert!(proximo > Utc::now() - chrono::TimeDelta::seconds(5));
    assert!(motor_domain::time::parse(body["creada_en"].as_str().unwrap()).is_some());
    assert_eq!(
        body["intentos_detalle"],
        json!([{ "numero": 1, "iniciado_en": "2026-10-24T15:08:13Z", "duracion_ms": 41, "status": 503,
                 "error": "http_503", "key_ids": "whk_new,whk_old", "throttled": false }])
    );

    // The second attempt delivers it: no next attempt, no error.
    sqlx::query("UPDATE deliveries SET proximo_intento = now() WHERE id = $1")
        .bind(d.as_uuid())
        .execute(&m.db.pool)
        .await
        .unwrap();
    let c2 = claim_ok(&m.db.pool, d, 2).await;
    let second = Attempt {
        status: Some(200),
        error: None,
        key_ids: vec!["whk_new".into()],
        ..first
    };
    record_attempt(
        &m.db.pool,
        &c2,
        &second,
        &Decision::Delivered,
        Next::Release,
    )
    .await
    .unwrap();
    let (_, body) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(
        (body["estado"].clone(), body["intentos"].clone()),
        (json!("entregada"), json!(2))
    );
    assert_eq!(body["proximo_intento_en"], Value::Null);
    assert_eq!(
        (body["ultimo_status"].clone(), body["ultimo_error"].clone()),
        (json!(200), Value::Null)
    );
    assert_eq!(body["intentos_detalle"][1]["numero"], 2);
    assert_eq!(body["intentos_detalle"][1]["error"], Value::Null);
    assert_eq!(body["intentos_detalle"][1]["key_ids"], "whk_new");

    // A list item is the detail without intentos_detalle.
    let (_, page) = call(&m, Method::GET, "/v1/deliveries", &t.token, None).await;
    let mut item = page["entregas"][0].clone();
    let mut detail = body.clone();
    detail.as_object_mut().unwrap().remove("intentos_detalle");
    assert_eq!(
        item.as_object_mut().unwrap().keys().collect::<Vec<_>>(),
        detail.as_object().unwrap().keys().collect::<Vec<_>>()
    );
    assert_eq!(item, detail);
    m.stop().await;
}
