//! Manual retry (`POST /v1/deliveries/{id}/retry`) and `replay_of`: a
//! `fallida` delivery comes back as a new delivery of the same event, in
//! its own lane, carrying the original's id in the API and in
//! `X-MW-Replay-Of`; live deliveries carry `null` and no header.

use std::collections::HashMap;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::{delivery_id, retry};
use crate::{
    brokers::clients::RabbitSetup,
    deliveries::{post, set_state},
    dispatch::{
        motor,
        receiver::{Receiver, Reply},
        subscribe, wait_state, WAIT,
    },
    openapi::{assert_matches, document},
    replays::replay_ok,
    subscriptions::call,
    util::{key, TestMotor},
};

async fn list(m: &TestMotor, token: &str, query: &str) -> Vec<Value> {
    let (status, page) = call(
        m,
        Method::GET,
        &format!("/v1/deliveries?{query}&por_pagina=200"),
        token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["entregas"].as_array().unwrap().clone()
}

async fn detail(m: &TestMotor, token: &str, id: &str) -> Value {
    let (status, d) = call(m, Method::GET, &format!("/v1/deliveries/{id}"), token, None).await;
    assert_eq!(status, StatusCode::OK, "{d}");
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_delivery_is_retried_as_a_new_delivery_with_replay_of() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let r = Receiver::start().await;
    // Live deliveries are refused for good (400 → fallida at once); what
    // comes back as a retry or a replay is taken.
    r.script(|s| match s.replay_of {
        None => Reply::status(400),
        Some(_) => Reply::status(204),
    });
    let sub = subscribe(&m, &t, &r, json!({})).await;
    post(
        &m,
        &t,
        instance,
        json!([{"type": "a.b", "data": {"n": 1}}, {"type": "a.b", "data": {"n": 2}}]),
    )
    .await;
    wait_state(&m, sub, "fallida", 2).await;

    let live = list(&m, &t.token, &format!("suscripcion_id={sub}")).await;
    assert_eq!(live.len(), 2);
    assert!(live.iter().all(|d| d["replay_of"].is_null()), "{live:?}");
    assert!(r.seen().iter().all(|s| s.replay_of.is_none()));
    let first = live.iter().find(|d| d["seq"] == 1).unwrap().clone();
    let first_id = first["delivery_id"].as_str().unwrap().to_owned();

    // The Idempotency-Key is required, as for replays.
    let (status, body) = retry(&m, &t.token, &first_id, None, None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["campo"], "header.Idempotency-Key");
    let (status, body) = retry(
        &m,
        &t.token,
        &first_id,
        Some("k1"),
        Some(json!({"motivo": ""})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["campo"], "body.motivo");

    // 202 with the new delivery: same event, new id, replay_of = the
    // original.
    let (status, created) = retry(&m, &t.token, &first_id, Some("k1"), None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    let new_id = created["delivery_id"].as_str().unwrap().to_owned();
    assert_ne!(new_id, first_id);
    assert_eq!(created["event_id"], first["event_id"]);
    assert_eq!(created["seq"], 1);
    assert_eq!(created["replay_of"], first_id.as_str());
    assert_eq!(created["suscripcion_id"], sub.to_string());
    // The answer is documented as it is.
    let doc = document();
    assert_matches(&doc, "Entrega", &created);

    // The same key and request: the same delivery; another request: 409.
    let (status, again) = retry(&m, &t.token, &first_id, Some("k1"), Some(json!({}))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{again}");
    assert_eq!(again["delivery_id"], new_id.as_str());
    let (status, body) = retry(
        &m,
        &t.token,
        &first_id,
        Some("k1"),
        Some(json!({"motivo": "otro"})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    // The receiver gets it signed, with the new delivery id, the same
    // event and X-MW-Replay-Of.
    r.wait_for("the retry", WAIT, |seen| {
        seen.iter().any(|s| s.delivery_id == new_id)
    })
    .await;
    let got = r
        .seen()
        .into_iter()
        .find(|s| s.delivery_id == new_id)
        .unwrap();
    assert!(got.verified);
    assert_eq!(got.event_id, first["event_id"].as_str().unwrap());
    assert_eq!(got.replay_of.as_deref(), Some(first_id.as_str()));
    wait_state(&m, sub, "entregada", 1).await;
    let d = detail(&m, &t.token, &new_id).await;
    assert_eq!(d["estado"], "entregada");
    assert_eq!(d["replay_of"], first_id.as_str());
    assert_eq!(d["intentos_detalle"].as_array().unwrap().len(), 1);
    let mut flat = d.clone();
    flat.as_object_mut().unwrap().remove("intentos_detalle");
    assert_matches(&doc, "Entrega", &flat);
    // The original keeps its own history, untouched.
    let original = detail(&m, &t.token, &first_id).await;
    assert_eq!(original["estado"], "fallida");
    assert!(original["replay_of"].is_null());
    assert_eq!(original["intentos"], 1);

    // Only fallida: an entregada delivery is a 409, and so is a pendiente one.
    let (status, body) = retry(&m, &t.token, &new_id, Some("k2"), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    set_state(&m, &t, sub, "pausada").await;
    post(&m, &t, instance, json!({"type": "a.b", "data": {"n": 3}})).await;
    let pending = list(
        &m,
        &t.token,
        &format!("suscripcion_id={sub}&estado=pendiente"),
    )
    .await;
    assert_eq!(pending.len(), 1);
    let pending_id = pending[0]["delivery_id"].as_str().unwrap();
    let (status, body) = retry(&m, &t.token, pending_id, Some("k3"), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // A refused request does not use up its key.
    let second = live.iter().find(|d| d["seq"] == 2).unwrap()["delivery_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, paused_retry) = retry(&m, &t.token, &second, Some("k3"), None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{paused_retry}");
    assert_eq!(paused_retry["estado"], "pendiente");

    // Unknown ids, another app's delivery, a key without the scope.
    let unknown = uuid::Uuid::now_v7().to_string();
    let (status, _) = retry(&m, &t.token, &unknown, Some("k4"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let other = m.tenant(1).await;
    let (status, _) = retry(&m, &other.token, &second, Some("k4"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let reader = key(&m.db.pool, t.app, &["events:read"], &[]).await;
    let (status, _) = retry(&m, &reader, &second, Some("k4"), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Reactivation sends the paused retry (and the pending live one).
    set_state(&m, &t, sub, "activa").await;
    let paused_id = delivery_id(&paused_retry).to_string();
    r.wait_for("the paused retry", WAIT, |seen| {
        seen.iter().any(|s| s.delivery_id == paused_id)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_carries_the_live_delivery_it_repeats() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({})).await;
    post(
        &m,
        &t,
        instance,
        json!([{"type": "a.b", "data": {}}, {"type": "a.b", "data": {}}, {"type": "a.b", "data": {}}]),
    )
    .await;
    wait_state(&m, sub, "entregada", 3).await;
    let live: HashMap<String, String> = list(&m, &t.token, &format!("suscripcion_id={sub}"))
        .await
        .iter()
        .map(|d| {
            (
                d["event_id"].as_str().unwrap().to_owned(),
                d["delivery_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();

    replay_ok(
        &m,
        &t,
        sub,
        json!({"instancia_id": instance, "desde_seq": 1, "hasta_seq": 3, "motivo": "perdimos un día"}),
    )
    .await;
    wait_state(&m, sub, "entregada", 6).await;
    let all = list(&m, &t.token, &format!("suscripcion_id={sub}")).await;
    let replayed: Vec<&Value> = all.iter().filter(|d| !d["replay_of"].is_null()).collect();
    assert_eq!(replayed.len(), 3, "{all:?}");
    for d in &replayed {
        let event = d["event_id"].as_str().unwrap();
        assert_eq!(d["replay_of"], live[event].as_str(), "{d}");
        let id = d["delivery_id"].as_str().unwrap();
        assert_eq!(
            detail(&m, &t.token, id).await["replay_of"],
            live[event].as_str()
        );
    }
    r.wait_for("3 replayed requests", WAIT, |seen| {
        seen.iter().filter(|s| s.replay_of.is_some()).count() >= 3
    })
    .await;
    for s in r.seen() {
        match &s.replay_of {
            None => assert!(live.values().any(|id| *id == s.delivery_id)),
            Some(original) => assert_eq!(*original, live[&s.event_id], "{s:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retry_into_rabbitmq_carries_x_mw_replay_of_as_a_message_header() {
    let _rabbit = crate::brokers::clients::RABBIT.read().await;
    // Deliveries give up after a second of failures (`…_agotada`).
    let m = motor(Some(1)).await;
    let t = m.tenant(1).await;
    // No queue bound yet: every publish comes back unroutable.
    let rabbit = RabbitSetup::new("replay-of", false, Default::default()).await;
    let (status, created) = crate::subscriptions::create(
        &m,
        &t.token,
        json!({"nombre": "cola", "url": rabbit.url("")}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let sub = created["suscripcion"]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    post(&m, &t, t.instances[0], json!({"type": "a.b", "data": {}})).await;
    wait_state(&m, sub, "fallida", 1).await;
    let original = list(&m, &t.token, &format!("suscripcion_id={sub}")).await[0].clone();
    assert_eq!(original["ultimo_error"], "broker_sin_ruta_agotada");
    let original_id = original["delivery_id"].as_str().unwrap();

    rabbit.bind().await;
    let (status, again) = retry(&m, &t.token, original_id, Some("r1"), None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{again}");
    wait_state(&m, sub, "entregada", 1).await;
    let got = rabbit.take(10).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("x-mw-replay-of"), original_id);
    assert_eq!(
        got[0].header("x-mw-delivery-id"),
        again["delivery_id"].as_str().unwrap()
    );
    assert_eq!(got[0].envelope()["event_id"], original["event_id"]);
    assert!(got[0].verifies_with(
        created["secreto"]["key_id"].as_str().unwrap(),
        created["secreto"]["valor"].as_str().unwrap()
    ));
    rabbit.delete().await;
}
