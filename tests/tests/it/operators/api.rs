//! The operator API across apps: deliveries with filters and cursor
//! pagination, the DLQ summary, a bulk retry of a DLQ selection through
//! replays (motivo audited), pause/reactivate by id, the reconciliation
//! report; bad input is a 422 naming the field with nothing changed; the
//! answers match their documented schemas.

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::dispatch::{motor, subscribe, WAIT};
use crate::{
    deliveries::post,
    dispatch::receiver::{Receiver, Reply},
    openapi::{assert_matches, document},
    util::{TestMotor, ADMIN_TOKEN},
};

async fn admin(
    m: &TestMotor,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    admin_keyed(m, method, path, body, None).await
}

async fn admin_keyed(
    m: &TestMotor,
    method: Method,
    path: &str,
    body: Option<Value>,
    key: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = m.http.request(method, m.url(path)).bearer_auth(ADMIN_TOKEN);
    if let Some(key) = key {
        req = req.header("Idempotency-Key", key);
    }
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn error_field(body: &Value) -> &str {
    body["error"]["campo"].as_str().unwrap_or_default()
}

async fn replays(m: &TestMotor) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM replays")
        .fetch_one(&m.db.pool)
        .await
        .unwrap()
}

async fn wait_count(m: &TestMotor, query: &str, n: usize) -> Value {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (status, page) = admin(m, Method::GET, query, None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        if page["entregas"].as_array().unwrap().len() == n {
            return page;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "waiting for {n} at {query}: {page}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_operator_lists_retries_and_manages_across_apps() {
    let m = motor(None).await;
    let doc = document();
    let a = m.tenant(1).await;
    let b = m.tenant(1).await;
    let r = Receiver::start().await;
    let broken = Arc::new(AtomicBool::new(true));
    let flag = broken.clone();
    r.script(move |seen| {
        let envelope: Value = serde_json::from_slice(&seen.body).unwrap();
        if envelope["data"]["tag"] == "gone" && flag.load(Ordering::SeqCst) {
            Reply::status(410)
        } else {
            Reply::status(204)
        }
    });
    let sub = subscribe(&m, &a, &r, json!({})).await;
    let other = subscribe(&m, &b, &r, json!({})).await;
    for tag in ["ok", "gone", "gone"] {
        post(
            &m,
            &a,
            a.instances[0],
            json!({"type": "t", "data": {"tag": tag}}),
        )
        .await;
    }
    post(
        &m,
        &b,
        b.instances[0],
        json!({"type": "t", "data": {"tag": "ok"}}),
    )
    .await;

    // Both apps' deliveries, filtered; the failed ones with their code.
    let failed = wait_count(&m, "/v1/admin/deliveries?estado=fallida", 2).await;
    assert_matches(&doc, "EntregaOperadorList", &failed);
    for d in failed["entregas"].as_array().unwrap() {
        assert_matches(&doc, "EntregaOperador", d);
        assert_eq!(d["app_id"], a.app.to_string());
        assert_eq!(d["ultimo_error"], "http_410");
    }
    wait_count(&m, "/v1/admin/deliveries?estado=entregada", 2).await;
    let (_, of_b) = admin(
        &m,
        Method::GET,
        &format!("/v1/admin/deliveries?app_id={}", b.app),
        None,
    )
    .await;
    assert_eq!(of_b["entregas"].as_array().unwrap().len(), 1);
    assert_eq!(of_b["entregas"][0]["suscripcion_id"], other.to_string());
    let (_, none) = admin(
        &m,
        Method::GET,
        &format!(
            "/v1/admin/deliveries?ultimo_error=http_410&app_id={}",
            b.app
        ),
        None,
    )
    .await;
    assert_eq!(none["entregas"], json!([]));
    let (_, future) = admin(
        &m,
        Method::GET,
        "/v1/admin/deliveries?desde=2999-01-01T00:00:00Z",
        None,
    )
    .await;
    assert_eq!(future["entregas"], json!([]));

    // Cursor pagination: one by one, newest first, nothing twice.
    let mut seen = Vec::new();
    let mut path = "/v1/admin/deliveries?limite=1".to_owned();
    loop {
        let (status, page) = admin(&m, Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        seen.extend(
            page["entregas"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["delivery_id"].clone()),
        );
        match page["siguiente_cursor"].as_str() {
            Some(cursor) => path = format!("/v1/admin/deliveries?limite=1&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
    let mut sorted = seen.clone();
    sorted.sort_by(|x, y| y.as_str().cmp(&x.as_str()));
    sorted.dedup();
    assert_eq!(sorted, seen);

    // Bad queries name the parameter.
    for (query, field) in [
        ("estado=rota", "query.estado"),
        ("ultimo_error=nada", "query.ultimo_error"),
        ("app_id=1", "query.app_id"),
        ("desde=ayer", "query.desde"),
        ("limite=0", "query.limite"),
        ("cursor=xyz", "query.cursor"),
    ] {
        let (status, body) = admin(
            &m,
            Method::GET,
            &format!("/v1/admin/deliveries?{query}"),
            None,
        )
        .await;
        assert_eq!(
            (status, error_field(&body)),
            (StatusCode::UNPROCESSABLE_ENTITY, field),
            "{body}"
        );
    }

    // One delivery with its attempts.
    let id = failed["entregas"][0]["delivery_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, detail) =
        admin(&m, Method::GET, &format!("/v1/admin/deliveries/{id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    // EntregaOperadorDetalle = EntregaOperador + intentos_detalle (allOf).
    let mut entrega = detail.clone();
    let attempts = entrega
        .as_object_mut()
        .unwrap()
        .remove("intentos_detalle")
        .unwrap();
    assert_matches(&doc, "EntregaOperador", &entrega);
    assert_matches(&doc, "Intento", &attempts[0]);
    assert_eq!(detail["intentos_detalle"][0]["status"], 410);
    let (status, _) = admin(
        &m,
        Method::GET,
        &format!("/v1/admin/deliveries/{}", uuid::Uuid::now_v7()),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The DLQ by subscription and code.
    let (status, dlq) = admin(&m, Method::GET, "/v1/admin/dlq", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_matches(&doc, "DlqResumen", &dlq);
    assert_eq!(dlq["total"], 2);
    assert_matches(&doc, "DlqGrupo", &dlq["grupos"][0]);
    assert_eq!(
        (
            &dlq["grupos"][0]["suscripcion_id"],
            &dlq["grupos"][0]["ultimo_error"],
            &dlq["grupos"][0]["fallidas"]
        ),
        (&json!(sub.to_string()), &json!("http_410"), &json!(2))
    );
    let (status, body) = admin(&m, Method::GET, "/v1/admin/dlq?app_id=x", None).await;
    assert_eq!(
        (status, error_field(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "query.app_id")
    );

    // A bad retry changes nothing and names its field.
    let retry = "/v1/admin/dlq/retry";
    let good = json!({"suscripcion_id": sub.to_string(), "motivo": "receptor arreglado"});
    for (body, key, field) in [
        (good.clone(), None, "header.Idempotency-Key"),
        (
            json!({"suscripcion_id": sub.to_string(), "motivo": " "}),
            Some("k"),
            "body.motivo",
        ),
        (json!({"motivo": "x"}), Some("k"), "body.suscripcion_id"),
        (
            json!({"suscripcion_id": "nope", "motivo": "x"}),
            Some("k"),
            "body.suscripcion_id",
        ),
        (
            json!({"app_id": a.app.to_string(), "ultimo_error": ["nada"], "motivo": "x"}),
            Some("k"),
            "body.ultimo_error",
        ),
        (
            json!({"delivery_ids": [], "motivo": "x"}),
            Some("k"),
            "body.delivery_ids",
        ),
        (
            json!({"suscripcion_id": sub.to_string(), "motivo": "x", "otro": 1}),
            Some("k"),
            "body.otro",
        ),
    ] {
        let (status, answer) = admin_keyed(&m, Method::POST, retry, Some(body), key).await;
        assert_eq!(
            (status, error_field(&answer)),
            (StatusCode::UNPROCESSABLE_ENTITY, field),
            "{answer}"
        );
    }
    assert_eq!(replays(&m).await, 0);

    // The receiver is fixed: the selection goes out again as a replay.
    broken.store(false, Ordering::SeqCst);
    let (status, done) =
        admin_keyed(&m, Method::POST, retry, Some(good.clone()), Some("fix-1")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{done}");
    assert_matches(&doc, "RetryDlqResult", &done);
    assert_eq!(done["entregas"], 2);
    assert_eq!(done["replays"][0]["suscripcion_id"], sub.to_string());
    let (solicitado_por, motivo): (String, String) =
        sqlx::query_as("SELECT solicitado_por, motivo FROM replays")
            .fetch_one(&m.db.pool)
            .await
            .unwrap();
    assert_eq!(
        (solicitado_por.as_str(), motivo.as_str()),
        ("operador", "receptor arreglado")
    );
    wait_count(
        &m,
        &format!("/v1/admin/deliveries?estado=entregada&suscripcion_id={sub}"),
        3,
    )
    .await;
    // A repeat with the same key is the same replay.
    let (status, again) = admin_keyed(&m, Method::POST, retry, Some(good), Some("fix-1")).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(
        again["replays"][0]["replay_id"],
        done["replays"][0]["replay_id"]
    );
    // The same key with another request is refused, and makes nothing.
    let other_reason = json!({"suscripcion_id": sub.to_string(), "motivo": "otra razón"});
    let (status, refused) =
        admin_keyed(&m, Method::POST, retry, Some(other_reason), Some("fix-1")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(replays(&m).await, 1);

    // Pause and reactivate by id, whatever the app.
    let (status, paused) = admin(
        &m,
        Method::POST,
        &format!("/v1/admin/subscriptions/{other}/pause"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{paused}");
    assert_eq!(paused["estado"], "pausada");
    let (status, active) = admin(
        &m,
        Method::POST,
        &format!("/v1/admin/subscriptions/{other}/reactivate"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{active}");
    assert_eq!(active["estado"], "activa");
    let (status, _) = admin(
        &m,
        Method::POST,
        &format!("/v1/admin/subscriptions/{}/pause", uuid::Uuid::now_v7()),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = admin(&m, Method::POST, "/v1/admin/subscriptions/nope/pause", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The reconciliation report: nothing stuck.
    let (status, report) = admin(&m, Method::GET, "/v1/admin/reconciliacion", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_matches(&doc, "Report", &report);
    assert_eq!(report["ok"], true, "{report}");

    // Without the operator token: 401.
    let res = m.http.get(m.url("/v1/admin/dlq")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    m.stop().await;
}
