//! `POST /v1/subscriptions/{id}/check`: the conformance battery against a
//! registered subscription's receiver, signed with its own secret. A
//! receiver built on `motor-receiver` passes; one that answers 401 to a
//! stale or future timestamp (it should say 408, since 401 suspends) fails
//! exactly the two window checks; a broker subscription is a 409; a name
//! that resolves to loopback is refused by the senders' guard, so the
//! check reaches nothing a delivery could not.

use std::collections::BTreeSet;

use axum::{http::StatusCode as AxumStatus, routing::post, Router};
use motor_receiver::{Profile, Secret, Verifier, Webhook, WebhookRejection};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::call;
use crate::util::{Tenant, TestMotor, ADMIN_TOKEN, ALL_ROLES};

/// How the receiver answers what did not verify.
#[derive(Clone, Copy)]
enum Kind {
    /// As `motor-receiver` does: 408 for the window, 401 for a signature.
    Conforming,
    /// 401 for everything it refuses, the window included.
    Always401,
}

/// A subscription to a receiver of `kind` on loopback, made with the
/// secret Motor issued for it; the subscription id.
async fn subscribed_receiver(m: &TestMotor, t: &Tenant, kind: Kind) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/webhook", listener.local_addr().unwrap());
    let (status, created) = call(
        m,
        &t.token,
        Method::POST,
        "/v1/subscriptions",
        Some(json!({"nombre": "receptor", "url": url})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let secret = created["secreto"]["valor"].as_str().unwrap().to_owned();
    let verifier = Verifier::new(Profile::MwV1, [Secret::new(secret)]).unwrap();
    let app = match kind {
        Kind::Conforming => Router::new().route(
            "/webhook",
            post(|_: Webhook| async { AxumStatus::NO_CONTENT }),
        ),
        Kind::Always401 => Router::new().route(
            "/webhook",
            post(|w: Result<Webhook, WebhookRejection>| async move {
                match w {
                    Ok(_) => AxumStatus::OK,
                    Err(_) => AxumStatus::UNAUTHORIZED,
                }
            }),
        ),
    }
    .with_state(verifier);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    created["suscripcion"]["id"].as_str().unwrap().to_owned()
}

async fn check(m: &TestMotor, t: &Tenant, sub: &str) -> (StatusCode, Value) {
    call(
        m,
        &t.token,
        Method::POST,
        &format!("/v1/subscriptions/{sub}/check"),
        None,
    )
    .await
}

fn failed(report: &Value) -> BTreeSet<String> {
    report["comprobaciones"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["veredicto"] == "falla")
        .map(|c| c["nombre"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conforming_receiver_passes_and_a_401_window_is_caught() {
    let m = TestMotor::start(&ALL_ROLES).await;
    let t = m.tenant(1).await;

    let good = subscribed_receiver(&m, &t, Kind::Conforming).await;
    let (status, report) = check(&m, &t, &good).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["aprobado"], true, "{report:#}");
    assert_eq!(report["perfil"], "mw-v1");
    assert!(failed(&report).is_empty(), "{report:#}");
    let rows = report["comprobaciones"].as_array().unwrap();
    assert_eq!(rows.len(), 12, "{report:#}");
    let stale = rows
        .iter()
        .find(|c| c["nombre"] == "timestamp_vencido")
        .unwrap();
    assert_eq!(stale["obtenido"]["status"], 408, "{stale}");
    let repeated = rows
        .iter()
        .find(|c| c["nombre"] == "cabecera_repetida")
        .unwrap();
    assert_eq!(repeated["obtenido"]["status"], 401, "{repeated}");
    assert!(report["tiempos"]["muestras"].as_u64().unwrap() >= 11);

    let broken = subscribed_receiver(&m, &t, Kind::Always401).await;
    let (status, report) = check(&m, &t, &broken).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["aprobado"], false, "{report:#}");
    assert_eq!(
        failed(&report),
        ["timestamp_futuro", "timestamp_vencido"]
            .map(String::from)
            .into(),
        "{report:#}"
    );
    // The battery sent nothing to the ledger and suspended nothing.
    let (_, sub) = call(
        &m,
        &t.token,
        Method::GET,
        &format!("/v1/subscriptions/{broken}"),
        None,
    )
    .await;
    assert_eq!(sub["estado"], "activa", "{sub}");
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_others_keys_and_guarded_addresses_are_refused() {
    let m = TestMotor::start(&ALL_ROLES).await;
    let t = m.tenant(1).await;

    // A broker subscription: nothing to grade over HTTP.
    let (status, created) = call(
        &m,
        &t.token,
        Method::POST,
        "/v1/subscriptions",
        Some(json!({"nombre": "cola", "url": "amqp://127.0.0.1:5672/?exchange=motor.check"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let broker = created["suscripcion"]["id"].as_str().unwrap();
    let (status, answer) = check(&m, &t, broker).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(answer["error"]["code"], "conflicto");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("broker"),
        "{answer}"
    );

    // Scope, another app, an unknown id.
    let good = subscribed_receiver(&m, &t, Kind::Conforming).await;
    let reader = crate::util::key(&m.db.pool, t.app, &["events:read"], &[]).await;
    let (status, _) = call(
        &m,
        &reader,
        Method::POST,
        &format!("/v1/subscriptions/{good}/check"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let other = m.tenant(1).await;
    let (status, _) = check(&m, &other, &good).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = check(&m, &t, "not-a-uuid").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // An allowed name that resolves to loopback: the guard refuses every
    // request, as it would refuse a delivery.
    m.hosts
        .set("receptor.example", &["127.0.0.1".parse().unwrap()]);
    let (status, app) = call(
        &m,
        ADMIN_TOKEN,
        Method::PATCH,
        &format!("/v1/admin/apps/{}", t.app),
        Some(json!({"destinos_permitidos": ["127.0.0.1", "receptor.example"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{app}");
    let (status, created) = call(
        &m,
        &t.token,
        Method::POST,
        "/v1/subscriptions",
        Some(json!({"nombre": "por nombre", "url": "http://receptor.example:9/webhook"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let named = created["suscripcion"]["id"].as_str().unwrap();
    let (status, report) = check(&m, &t, named).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["aprobado"], false);
    for row in report["comprobaciones"].as_array().unwrap() {
        if row["nombre"] != "tiempos" {
            assert_eq!(row["obtenido"]["error"], "destino_bloqueado", "{row}");
        }
    }

    // A host the lists no longer admit: 409 before anything is sent.
    let (status, _) = call(
        &m,
        ADMIN_TOKEN,
        Method::PATCH,
        &format!("/v1/admin/apps/{}", t.app),
        Some(json!({"destinos_permitidos": ["127.0.0.1"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, answer) = check(&m, &t, named).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("destino_no_permitido"),
        "{answer}"
    );
    m.stop().await;
}
