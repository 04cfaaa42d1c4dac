//! The destination policy and the answer's limits: `politica_destinos:
//! publica_https` refused at create and enforced at connect (suspension
//! `destino_bloqueado`, nothing lost, in order on reactivation); IPv6
//! spellings of blocked IPv4 addresses and allowed-list entries that could
//! never match refused with 422; the 4 KB answer cap with one large
//! chunk; a receiver trickling a byte a second cut at the timeout.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::{
    patch_app, patch_settings,
    raw::{Answer, RawReceiver},
    subscription, wait_suspended,
};
use crate::{
    deliveries::set_state,
    dispatch::{motor, post_many, receiver::Receiver, states, subscribe, wait_state, WAIT},
    subscriptions::{call, create},
    util::{TestMotor, ADMIN_TOKEN},
};

/// How long the dispatcher may keep reading settings and apps it read.
const CACHE: Duration = Duration::from_millis(1_100);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn publica_https_is_enforced_at_create_and_at_connect() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let r = Receiver::start().await;

    // The setting is validated, named in the 422.
    for bad in [json!("abierta"), json!(1), json!("PUBLICA_HTTPS")] {
        let (status, body) = patch_app(&m, t.app, json!({"politica_destinos": bad})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(
            body["error"]["campo"]
                .as_str()
                .unwrap()
                .starts_with("body.politica_destinos"),
            "{body}"
        );
    }
    let (status, app) = call(
        &m,
        Method::GET,
        &format!("/v1/admin/apps/{}", t.app),
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(app["politica_destinos"], "estandar", "the default");

    let sub = subscribe(&m, &t, &r, json!({})).await;
    post_many(&m, &t, instance, 2, "before").await;
    wait_state(&m, sub, "entregada", 2).await;

    // Under publica_https a loopback http:// receiver is refused at create…
    let (status, app) = patch_app(&m, t.app, json!({"politica_destinos": "publica_https"})).await;
    assert_eq!(status, StatusCode::OK, "{app}");
    assert_eq!(app["politica_destinos"], "publica_https");
    // The dispatcher reads an app for at most a second before it reads it
    // again.
    tokio::time::sleep(CACHE).await;
    for url in [
        r.url(),
        format!("https://{}/hook", r.addr),
        "https://127.0.0.1/hook".to_owned(),
        "https://[::1]/hook".to_owned(),
    ] {
        let (status, body) = create(&m, &t.token, json!({"nombre": "x", "url": url})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {body}");
        assert_eq!(body["error"]["campo"], "body.url");
    }

    // …and the existing subscription is held to it at its next connection:
    // suspended, with an alert, its events kept.
    post_many(&m, &t, instance, 3, "during").await;
    wait_suspended(&m, &t.token, sub, "destino_bloqueado").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(r.seen().len(), 2, "nothing reached the receiver");
    assert_eq!(states(&m, sub).await.get("pendiente"), Some(&3));

    // Back to estandar and reactivated: everything, in order.
    let (status, _) = patch_app(&m, t.app, json!({"politica_destinos": "estandar"})).await;
    assert_eq!(status, StatusCode::OK);
    set_state(&m, &t, sub, "activa").await;
    wait_state(&m, sub, "entregada", 5).await;
    let seqs: Vec<i64> = r.seen().iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    assert_eq!(subscription(&m, &t.token, sub).await["estado"], "activa");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ipv6_spellings_and_entries_that_never_match_are_refused() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    // 169.254.169.254 through NAT64, local-use NAT64, 6to4, Teredo and the
    // IPv4-compatible form — and loopback through NAT64, which the list
    // does not name.
    for url in [
        "http://[64:ff9b::a9fe:a9fe]/latest",
        "http://[64:ff9b:1::a9fe:a9fe]/latest",
        "http://[2002:a9fe:a9fe::1]/latest",
        "http://[2001:0:a9fe:a9fe::1]/latest",
        "http://[::a9fe:a9fe]/latest",
        "http://[64:ff9b::7f00:1]/hook",
    ] {
        let (status, body) = create(&m, &t.token, json!({"nombre": "x", "url": url})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {body}");
        assert_eq!(body["error"]["campo"], "body.url", "{url}");
    }
    // Allowed-list entries that could never match, on the app and in the
    // global setting.
    for (i, entry) in ["*.acme.com", "fe80::1", "2001:db8::1"].iter().enumerate() {
        let (status, body) = patch_app(
            &m,
            t.app,
            json!({"destinos_permitidos": ["ok.acme.com", entry]}),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{entry}: {body}");
        assert_eq!(body["error"]["campo"], "body.destinos_permitidos[1]");
        let (status, body) = call(
            &m,
            Method::POST,
            "/v1/admin/apps",
            ADMIN_TOKEN,
            Some(json!({"nombre": format!("a{i}"), "destinos_permitidos": [entry]})),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{entry}: {body}");
        let (status, body) =
            patch_settings(&m, json!({"webhooks.destinos_permitidos": [entry]})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{entry}: {body}");
    }
    // Their bracketed forms are fine.
    let (status, body) = patch_app(
        &m,
        t.app,
        json!({"destinos_permitidos": ["127.0.0.1", "[fe80::1]", "[2001:db8::1]:8443"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// The attempts of the subscription's only delivery, once it has `n`.
async fn attempts(m: &TestMotor, token: &str, sub: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, list) = call(
            m,
            Method::GET,
            &format!("/v1/deliveries?suscripcion_id={sub}"),
            token,
            None,
        )
        .await;
        if let Some(id) = list["entregas"][0]["delivery_id"].as_str() {
            let (_, d) = call(m, Method::GET, &format!("/v1/deliveries/{id}"), token, None).await;
            let got = d["intentos_detalle"].as_array().unwrap().clone();
            if got.len() >= n {
                return got;
            }
        }
        assert!(
            Instant::now() < deadline,
            "waiting for {n} attempts: {list}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn subscribe_raw(m: &TestMotor, token: &str, r: &RawReceiver) -> String {
    let (status, created) = create(m, token, json!({"nombre": "raw", "url": r.url()})).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["suscripcion"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_answer_is_read_up_to_4_kb_and_cut_at_the_timeout() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let (status, body) = patch_settings(&m, json!({"webhooks.timeout_segundos": 2})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    tokio::time::sleep(CACHE).await;

    // One large chunk (1 MB declared, 1 MB sent at once, then silence):
    // the status counts, the body is not waited for.
    let mut big = b"HTTP/1.1 200 OK\r\ncontent-length: 1048576\r\n\r\n".to_vec();
    big.extend(std::iter::repeat_n(b'x', 1 << 20));
    let large = RawReceiver::start(Answer::OnceThenHold(big)).await;
    // 1 MB declared, 100 bytes sent, then silence: nothing to wait for
    // either, the declared size is over the cap.
    let mut short = b"HTTP/1.1 200 OK\r\ncontent-length: 1048576\r\n\r\n".to_vec();
    short.extend([b'x'; 100]);
    let declared = RawReceiver::start(Answer::OnceThenHold(short)).await;
    // A status line trickled at a byte a second: cut at the timeout.
    let trickle = RawReceiver::start(Answer::Trickle(
        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
    ))
    .await;

    let large_sub = subscribe_raw(&m, &t.token, &large).await;
    let declared_sub = subscribe_raw(&m, &t.token, &declared).await;
    let trickle_sub = subscribe_raw(&m, &t.token, &trickle).await;
    post_many(&m, &t, instance, 1, "x").await;

    for sub in [&large_sub, &declared_sub] {
        let a = &attempts(&m, &t.token, sub, 1).await[0];
        assert_eq!(a["status"], 200, "{a}");
        assert!(a["error"].is_null(), "{a}");
        let ms = a["duracion_ms"].as_i64().unwrap();
        assert!(ms < 1_500, "not waiting for the body: {ms} ms");
    }
    let a = &attempts(&m, &t.token, &trickle_sub, 1).await[0];
    assert_eq!(a["error"], "timeout", "{a}");
    assert!(a["status"].is_null(), "{a}");
    let ms = a["duracion_ms"].as_i64().unwrap();
    assert!(
        (1_900..3_500).contains(&ms),
        "cut at the 2 s timeout: {ms} ms"
    );
    assert!(trickle.requests() >= 1 && large.requests() == 1 && declared.requests() == 1);
}
