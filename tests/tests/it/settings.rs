//! The operator's settings and alerts: defaults, ranges at their
//! boundaries, the global and per-app allowed destinations, alert listing
//! and closing, and the operator token on every route.

use motor::serve::Role;
use motor_domain::subscription::{SubscriptionId, SuspensionReason};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{
    subscriptions::call,
    util::{TestMotor, ADMIN_TOKEN},
};

const SETTINGS: &str = "/v1/admin/settings";

async fn patch(m: &TestMotor, body: Value) -> (StatusCode, Value) {
    call(m, Method::PATCH, SETTINGS, ADMIN_TOKEN, Some(body)).await
}

#[tokio::test]
async fn defaults_then_changes_within_range() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (status, body) = call(&m, Method::GET, SETTINGS, ADMIN_TOKEN, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"webhooks.destinos_permitidos": [], "webhooks.timeout_segundos": 10,
               "webhooks.ventana_rotacion_minutos": 60, "retencion.dias_entregados": 30,
               "brokers.nats_sin_jetstream": false, "streams.retencion_horas": 72,
               "retencion.dias_contenido": null,
               "webhooks.desactivar_tras_horas": 120, "webhooks.desactivar_tras_fallos": 50,
               "webhooks.claves_en_vuelo": 32})
    );

    for (key, min, max) in [
        ("webhooks.timeout_segundos", 1, 60),
        ("webhooks.claves_en_vuelo", 1, 1000),
        ("webhooks.ventana_rotacion_minutos", 5, 1440),
        ("retencion.dias_entregados", 1, 3650),
        ("streams.retencion_horas", 1, 720),
    ] {
        for ok in [min, max] {
            let (status, body) = patch(&m, json!({ key: ok })).await;
            assert_eq!(
                (status, body[key].clone()),
                (StatusCode::OK, json!(ok)),
                "{key}"
            );
        }
        // `max.0` is the same JSON number (and a JSON Schema integer):
        // accepted, and stored and answered as `max`.
        let (status, body) = patch(&m, json!({ key: max as f64 })).await;
        assert_eq!(
            (status, body[key].clone()),
            (StatusCode::OK, json!(max)),
            "{key}={max}.0"
        );
        for bad in [
            json!(min - 1),
            json!(max + 1),
            json!("10"),
            json!(null),
            json!(2.5),
        ] {
            let (status, body) = patch(&m, json!({ key: bad })).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{key}={bad}");
            assert_eq!(body["error"]["campo"], format!("body.{key}"));
        }
    }
    // One bad key refuses the whole request.
    let (status, body) = patch(
        &m,
        json!({"webhooks.timeout_segundos": 7, "webhooks.ventana_rotacion_minutos": 4}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        body["error"]["campo"],
        "body.webhooks.ventana_rotacion_minutos"
    );
    let (_, now) = call(&m, Method::GET, SETTINGS, ADMIN_TOKEN, None).await;
    assert_eq!(now["webhooks.timeout_segundos"], 60);

    let (status, body) = patch(&m, json!({"webhooks.reintentos": 3})).await;
    assert_eq!(
        (status, body["error"]["campo"].clone()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!("body.webhooks.reintentos")
        )
    );
    let (status, body) = patch(
        &m,
        json!({"webhooks.destinos_permitidos": ["Hooks.Example.com", "x.io:8443", "hooks.example.com"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["webhooks.destinos_permitidos"],
        json!(["hooks.example.com", "x.io:8443"])
    );
    for (bad, field) in [
        (
            json!(["ok.io", "*.example.com"]),
            "body.webhooks.destinos_permitidos[1]",
        ),
        (
            json!(["https://x.io/"]),
            "body.webhooks.destinos_permitidos[0]",
        ),
        (json!(["x.io:0"]), "body.webhooks.destinos_permitidos[0]"),
        (json!("x.io"), "body.webhooks.destinos_permitidos"),
    ] {
        let (status, body) = patch(&m, json!({"webhooks.destinos_permitidos": bad})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert_eq!(body["error"]["campo"], field, "{bad}");
    }
    m.stop().await;
}

#[tokio::test]
async fn the_operator_token_guards_every_route() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let alert = uuid::Uuid::now_v7();
    for (method, path) in [
        (Method::GET, SETTINGS.to_owned()),
        (Method::PATCH, SETTINGS.to_owned()),
        (Method::GET, "/v1/admin/alerts".to_owned()),
        (Method::POST, format!("/v1/admin/alerts/{alert}/close")),
        (Method::GET, format!("/v1/admin/apps/{}/event-types", t.app)),
        (Method::PUT, format!("/v1/admin/apps/{}/event-types", t.app)),
    ] {
        for token in [t.token.as_str(), "wrong"] {
            let (status, body) = call(&m, method.clone(), &path, token, Some(json!({}))).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
            assert_eq!(body["error"]["code"], "no_autenticado");
        }
    }
    m.stop().await;
}

async fn create(m: &TestMotor, token: &str, url: &str) -> StatusCode {
    let body = json!({"nombre": "n", "url": url});
    call(m, Method::POST, "/v1/subscriptions", token, Some(body))
        .await
        .0
}

#[tokio::test]
async fn global_and_app_lists_both_allow() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let other = m.tenant(1).await;
    assert_eq!(
        create(&m, &t.token, "https://global.io/x").await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    patch(&m, json!({"webhooks.destinos_permitidos": ["global.io"]})).await;
    assert_eq!(
        create(&m, &t.token, "https://global.io/x").await,
        StatusCode::CREATED
    );
    assert_eq!(
        create(&m, &other.token, "https://global.io/x").await,
        StatusCode::CREATED
    );

    // The app's own list serves that app only.
    let (status, _) = call(
        &m,
        Method::PATCH,
        &format!("/v1/admin/apps/{}", t.app),
        ADMIN_TOKEN,
        Some(json!({"destinos_permitidos": ["127.0.0.1", "own.io:8443"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        create(&m, &t.token, "https://own.io:8443/x").await,
        StatusCode::CREATED
    );
    assert_eq!(
        create(&m, &t.token, "https://own.io/x").await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(
        create(&m, &other.token, "https://own.io:8443/x").await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    m.stop().await;
}

#[tokio::test]
async fn alerts_list_filter_and_close() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let other = m.tenant(1).await;
    let mut ids = Vec::new();
    for tenant in [&t, &other] {
        let (status, s) = call(
            &m,
            Method::POST,
            "/v1/subscriptions",
            &tenant.token,
            Some(json!({"nombre": "n", "url": "http://127.0.0.1:9/"})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
        let id: SubscriptionId = s["suscripcion"]["id"].as_str().unwrap().parse().unwrap();
        let mut conn = m.db.pool.acquire().await.unwrap();
        motor_store::subscriptions::suspend(
            &mut conn,
            id,
            SuspensionReason::Rejected403,
            "http_403",
        )
        .await
        .unwrap();
        ids.push(id);
    }
    let (status, all) = call(&m, Method::GET, "/v1/admin/alerts", ADMIN_TOKEN, None).await;
    assert_eq!(status, StatusCode::OK);
    let all = all["alerts"].as_array().unwrap().clone();
    assert_eq!(all.len(), 2);
    // Newest first.
    assert_eq!(all[0]["suscripcion_id"], json!(ids[1]));
    let keys: Vec<&str> = all[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "app_id",
            "suscripcion_id",
            "motivo",
            "detalle",
            "abierta_en",
            "cerrada_en"
        ]
    );
    assert_eq!(
        (all[0]["motivo"].clone(), all[0]["cerrada_en"].clone()),
        (json!("rechazo_403"), Value::Null)
    );

    let (_, mine) = call(
        &m,
        Method::GET,
        &format!("/v1/admin/alerts?app_id={}", t.app),
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert_eq!(mine["alerts"].as_array().unwrap().len(), 1);
    assert_eq!(mine["alerts"][0]["suscripcion_id"], json!(ids[0]));

    let alert = all[0]["id"].as_str().unwrap();
    let close = format!("/v1/admin/alerts/{alert}/close");
    let (status, closed) = call(&m, Method::POST, &close, ADMIN_TOKEN, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(closed["cerrada_en"].is_string());
    let (_, again) = call(&m, Method::POST, &close, ADMIN_TOKEN, None).await;
    assert_eq!(again["cerrada_en"], closed["cerrada_en"]);
    let (_, open) = call(
        &m,
        Method::GET,
        "/v1/admin/alerts?estado=abierta",
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert_eq!(open["alerts"].as_array().unwrap().len(), 1);
    let (_, shut) = call(
        &m,
        Method::GET,
        "/v1/admin/alerts?estado=cerrada",
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert_eq!(shut["alerts"][0]["id"], alert);

    let missing = format!("/v1/admin/alerts/{}/close", uuid::Uuid::now_v7());
    assert_eq!(
        call(&m, Method::POST, &missing, ADMIN_TOKEN, None).await.0,
        StatusCode::NOT_FOUND
    );
    for bad in ["estado=todas", "app_id=x"] {
        let (status, _) = call(
            &m,
            Method::GET,
            &format!("/v1/admin/alerts?{bad}"),
            ADMIN_TOKEN,
            None,
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
    }
    m.stop().await;
}
