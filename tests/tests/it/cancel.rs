//! Cancel on deactivation, API key expiry and read scopes (issue 33, items
//! 2 and 3; docs/CONTRACTS.md), end to end with real Postgres, Kafka,
//! every role and receivers on loopback: a `visito` subscription paused
//! mid-stream sends nothing pending after the pause commits (at most the
//! requests in flight), reactivation sends only new events, a replay still
//! sends cancelled ones; a `motor` subscription paused beside it still
//! accumulates; revoking or expiring the key a `visito` subscription is
//! bound to suspends it and cancels its pending deliveries, and so does a
//! catalogue change that leaves that key without a read scope
//! (`under_scoped`); a key without the read scope of a type gets a 403
//! naming the type. What the sweeper's look for lapsed keys reads with
//! many tenants is `lapsed`'s.

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{extract::State, http::HeaderMap, routing, Router};
use motor_domain::subscription::SubscriptionId;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::{
    deliveries::post,
    dispatch::{states, wait_state},
    replays::replay_ok,
    subscriptions::{assert_field, call, create, sub_id},
    util::{key, serve_loopback, Tenant, TestMotor, ADMIN_TOKEN},
};

mod lapsed;
mod under_scoped;

const WAIT: Duration = Duration::from_secs(90);

/// One request as the receiver saw it: the event id its headers carry
/// (`X-Visito-Event-Id` or `X-MW-Event-Id`), its path, and when it arrived.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    event_id: String,
    at: Instant,
}

/// A receiver on loopback that holds each request `hold` then answers
/// `status`.
#[derive(Clone)]
struct Receiver {
    seen: Arc<Mutex<Vec<Seen>>>,
    hold: Duration,
    status: u16,
    base: String,
}

async fn receive(
    State(r): State<Receiver>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> axum::http::StatusCode {
    let event_id = ["X-Visito-Event-Id", "X-MW-Event-Id"]
        .iter()
        .find_map(|h| headers.get(*h))
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    r.seen.lock().unwrap().push(Seen {
        path: uri.path().to_owned(),
        event_id,
        at: Instant::now(),
    });
    tokio::time::sleep(r.hold).await;
    axum::http::StatusCode::from_u16(r.status).unwrap()
}

impl Receiver {
    async fn start(hold: Duration, status: u16) -> Self {
        let mut r = Receiver {
            seen: Arc::default(),
            hold,
            status,
            base: String::new(),
        };
        let app = Router::new()
            .route("/{*path}", routing::post(receive))
            .with_state(r.clone());
        let addr = serve_loopback(app).await;
        r.base = format!("http://{addr}");
        r
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }

    fn seen(&self, path: &str) -> Vec<Seen> {
        let path = format!("/{path}");
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path == path)
            .cloned()
            .collect()
    }

    async fn wait_for(&self, what: &str, done: impl Fn(&Receiver) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !done(self) {
            assert!(Instant::now() < deadline, "waiting for {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn subscribe(m: &TestMotor, token: &str, body: Value) -> SubscriptionId {
    let (status, created) = create(m, token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    sub_id(&created)
}

async fn patch(
    m: &TestMotor,
    token: &str,
    sub: SubscriptionId,
    body: Value,
) -> (StatusCode, Value) {
    call(
        m,
        Method::PATCH,
        &format!("/v1/subscriptions/{sub}"),
        token,
        Some(body),
    )
    .await
}

/// `n` events on `instance`, tagged; their event ids in order.
async fn post_events(
    m: &TestMotor,
    t: &Tenant,
    instance_i: usize,
    n: usize,
    tag: &str,
) -> Vec<String> {
    let mut ids = Vec::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let events: Vec<Value> = chunk
            .iter()
            .map(|i| json!({"type": "message.created", "data": {"tag": tag, "i": i}}))
            .collect();
        let answer = post(m, t, t.instances[instance_i], Value::Array(events)).await;
        for e in answer.as_array().unwrap() {
            ids.push(e["event_id"].as_str().unwrap().to_owned());
        }
    }
    ids
}

/// `(estado, motivo)` → count, of a subscription's deliveries.
async fn reasons(m: &TestMotor, sub: SubscriptionId) -> Vec<(String, Option<String>, i64)> {
    sqlx::query_as(
        "SELECT estado, motivo, count(*) FROM deliveries WHERE subscription_id = $1
         GROUP BY estado, motivo ORDER BY estado, motivo",
    )
    .bind(sub.as_uuid())
    .fetch_all(&m.db.pool)
    .await
    .unwrap()
}

/// Waits until the subscription shows `estado` (and `motivo`).
async fn wait_subscription(m: &TestMotor, sub: SubscriptionId, estado: &str, motivo: Option<&str>) {
    let deadline = Instant::now() + WAIT;
    loop {
        let (now, why): (String, Option<String>) =
            sqlx::query_as("SELECT estado, motivo FROM subscriptions WHERE id = $1")
                .bind(sub.as_uuid())
                .fetch_one(&m.db.pool)
                .await
                .unwrap();
        if now == estado && why.as_deref() == motivo {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "waiting for {estado} {motivo:?}: {now} {why:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Cancel under load: a `visito` subscription paused mid-stream sends no
/// pending delivery after the pause commits (only what was in flight may
/// arrive: one request per ordered lane), its backlog ends `cancelada`
/// (`suscripcion_pausada`); reactivated, it sends only events that come
/// after; a replay still sends cancelled ones. A `motor` subscription
/// paused and reactivated beside it sends its whole backlog.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pausing_a_visito_subscription_mid_stream_cancels_what_is_pending() {
    let m = crate::dispatch::motor(None).await;
    let t = m.tenant(2).await;
    let r = Receiver::start(Duration::from_millis(15), 200).await;
    // Two ordered lanes, so at most two requests are in flight when the
    // pause commits (Visito's default ordering is `ninguno`).
    let visito = subscribe(
        &m,
        &t.token,
        json!({"nombre": "v", "url": r.url("visito"), "contrato": "visito", "orden": "instancia"}),
    )
    .await;
    let motor = subscribe(&m, &t.token, json!({"nombre": "m", "url": r.url("motor")})).await;

    let mut before = Vec::new();
    for i in 0..2 {
        before.extend(post_events(&m, &t, i, 300, "before").await);
    }
    // Mid-stream: some went out, most are pending.
    r.wait_for("40 visito deliveries", |r| r.seen("visito").len() >= 40)
        .await;
    let (status, paused) = patch(&m, &t.token, visito, json!({"estado": "pausada"})).await;
    assert_eq!(status, StatusCode::OK, "{paused}");
    let paused_at = Instant::now();
    let (status, _) = patch(&m, &t.token, motor, json!({"estado": "pausada"})).await;
    assert_eq!(status, StatusCode::OK);

    // Nothing is left pending: what was not delivered is cancelled.
    let after_pause = states(&m, visito).await;
    assert_eq!(after_pause.get("pendiente"), None, "{after_pause:?}");
    let cancelled = after_pause["cancelada"];
    assert!(cancelled > 300, "most of 600 were pending: {after_pause:?}");
    for (estado, motivo, _) in reasons(&m, visito).await {
        match estado.as_str() {
            "cancelada" => assert_eq!(motivo.as_deref(), Some("suscripcion_pausada")),
            "entregada" => assert_eq!(motivo, None),
            other => panic!("unexpected {other}"),
        }
    }

    // Reactivated: only new events go out; the cancelled stay cancelled.
    let (status, _) = patch(&m, &t.token, visito, json!({"estado": "activa"})).await;
    assert_eq!(status, StatusCode::OK);
    let new = post_events(&m, &t, 0, 20, "after").await;
    let new_set: BTreeSet<&str> = new.iter().map(String::as_str).collect();
    r.wait_for("the 20 new events", |r| {
        let got: BTreeSet<String> = r.seen("visito").into_iter().map(|s| s.event_id).collect();
        new_set.iter().all(|e| got.contains(*e))
    })
    .await;
    wait_state(&m, visito, "entregada", 600 - cancelled + 20).await;
    assert_eq!(
        states(&m, visito).await["cancelada"],
        cancelled,
        "reactivation resends nothing"
    );

    // After the pause committed, at most the two requests in flight (one
    // per ordered lane) of the old events arrived; then only new ones.
    let late: Vec<Seen> = r
        .seen("visito")
        .into_iter()
        .filter(|s| s.at > paused_at && !new_set.contains(s.event_id.as_str()))
        .collect();
    assert!(late.len() <= 2, "sent after the pause: {late:?}");
    // Every old event was sent (before the pause, or in flight) or is
    // cancelled.
    let cancelled_ids: Vec<(Uuid,)> = sqlx::query_as(
        "SELECT event_id FROM deliveries WHERE subscription_id = $1 AND estado = 'cancelada'",
    )
    .bind(visito.as_uuid())
    .fetch_all(&m.db.pool)
    .await
    .unwrap();
    let mut accounted: BTreeSet<String> =
        r.seen("visito").into_iter().map(|s| s.event_id).collect();
    accounted.extend(cancelled_ids.iter().map(|(e,)| e.to_string()));
    assert!(
        before.iter().all(|e| accounted.contains(e)),
        "an old event is neither sent nor cancelled"
    );

    // A replay still sends cancelled events (new deliveries).
    let cancelled_events: Vec<(Uuid,)> = sqlx::query_as(
        "SELECT event_id FROM deliveries WHERE subscription_id = $1 AND estado = 'cancelada'
         ORDER BY seq LIMIT 3",
    )
    .bind(visito.as_uuid())
    .fetch_all(&m.db.pool)
    .await
    .unwrap();
    let replayed: Vec<String> = cancelled_events.iter().map(|(e,)| e.to_string()).collect();
    replay_ok(
        &m,
        &t,
        visito,
        json!({"event_ids": replayed, "motivo": "send them after all"}),
    )
    .await;
    r.wait_for("the replayed events", |r| {
        let got: Vec<String> = r.seen("visito").into_iter().map(|s| s.event_id).collect();
        replayed.iter().all(|e| got.contains(e))
    })
    .await;

    // The cancelled ones are listed with their reason, and filtered.
    let (status, page) = call(
        &m,
        Method::GET,
        &format!("/v1/deliveries?estado=cancelada&suscripcion_id={visito}&por_pagina=5"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let listed = page["entregas"].as_array().unwrap();
    assert_eq!(listed.len(), 5, "{page}");
    for d in listed {
        assert_eq!(
            (&d["estado"], &d["motivo"]),
            (&json!("cancelada"), &json!("suscripcion_pausada"))
        );
    }

    // The motor subscription accumulated: reactivated, its whole backlog
    // (600 + 20 events) goes out, nothing cancelled.
    assert_eq!(states(&m, motor).await.get("cancelada"), None);
    let (status, _) = patch(&m, &t.token, motor, json!({"estado": "activa"})).await;
    assert_eq!(status, StatusCode::OK);
    wait_state(&m, motor, "entregada", 620).await;
    let got: BTreeSet<String> = r.seen("motor").into_iter().map(|s| s.event_id).collect();
    assert!(
        before.iter().chain(&new).all(|e| got.contains(e)),
        "motor: every event arrived"
    );

    // Metrics count the cancelled ones (sampled).
    let deadline = Instant::now() + WAIT;
    loop {
        let text = m.metrics().await;
        if text.contains(&format!("motor_deliveries_cancelled {cancelled}")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "motor_deliveries_cancelled never {cancelled}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    m.stop().await;
}

/// Revoking the key a `visito` subscription is bound to (the key that
/// created or last changed it) suspends it (`clave_revocada`) and cancels
/// its pending deliveries; a `motor` subscription of the same key keeps
/// accumulating. Deleting a `visito` subscription cancels too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn revoking_the_bound_key_cancels_a_visito_subscriptions_pending_deliveries() {
    let m = crate::dispatch::motor(None).await;
    let t = m.tenant(1).await;
    // A receiver that always fails: deliveries stay pending, retrying.
    let r = Receiver::start(Duration::ZERO, 503).await;
    let bound = key(&m.db.pool, t.app, &["subscriptions:manage"], &[]).await;
    let visito = subscribe(
        &m,
        &bound,
        json!({"nombre": "v", "url": r.url("visito"), "contrato": "visito"}),
    )
    .await;
    let motor = subscribe(&m, &bound, json!({"nombre": "m", "url": r.url("motor")})).await;
    // Deleted under visito: cancelled with its own reason.
    let deleted = subscribe(
        &m,
        &t.token,
        json!({"nombre": "d", "url": r.url("deleted"), "contrato": "visito"}),
    )
    .await;
    post_events(&m, &t, 0, 5, "x").await;
    wait_state(&m, visito, "pendiente", 5).await;
    wait_state(&m, motor, "pendiente", 5).await;
    wait_state(&m, deleted, "pendiente", 5).await;

    let (status, _) = call(
        &m,
        Method::DELETE,
        &format!("/v1/subscriptions/{deleted}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        reasons(&m, deleted).await,
        [(
            "cancelada".to_owned(),
            Some("suscripcion_eliminada".to_owned()),
            5
        )]
    );

    let key_id: String = sqlx::query_scalar("SELECT clave_api FROM subscriptions WHERE id = $1")
        .bind(visito.as_uuid())
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    let (status, body) = call(
        &m,
        Method::DELETE,
        &format!("/v1/admin/apps/{}/keys/{key_id}", t.app),
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert!(status.is_success(), "{status} {body}");
    // At once, in the revocation's transaction.
    wait_subscription(&m, visito, "suspendida", Some("clave_revocada")).await;
    assert_eq!(
        reasons(&m, visito).await,
        [("cancelada".to_owned(), Some("clave_revocada".to_owned()), 5)]
    );
    let (_, got) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{visito}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(
        (&got["estado"], &got["motivo"]),
        (&json!("suspendida"), &json!("clave_revocada"))
    );
    // motor: unchanged, still pending and active.
    let (_, got) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{motor}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(got["estado"], "activa", "{got}");
    assert_eq!(states(&m, motor).await.get("cancelada"), None);
    // The revoked key is refused.
    let (status, _) = call(&m, Method::GET, "/v1/subscriptions", &bound, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    m.stop().await;
}

/// A key with `vence_en` works until then and is refused with 401 after;
/// the sweeper then suspends the `visito` subscriptions bound to it
/// (`clave_vencida`), cancelling their pending deliveries. A `vence_en`
/// not in the future, or not a time, is a 422 naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_expired_key_is_refused_and_cancels_its_visito_subscriptions() {
    // Its visito@1 ladder waits 1 min after the first 503: the deliveries
    // stay pending meanwhile.
    let m = crate::dispatch::motor(None).await;
    let t = m.tenant(1).await;
    let keys = format!("/v1/admin/apps/{}/keys", t.app);
    for (bad, _) in [("2001-01-01T00:00:00Z", "past"), ("mañana", "not a time")] {
        assert_field(
            &call(
                &m,
                Method::POST,
                &keys,
                ADMIN_TOKEN,
                Some(json!({"nombre": "k", "scopes": ["subscriptions:manage"], "vence_en": bad})),
            )
            .await,
            "body.vence_en",
        );
    }
    let expires =
        chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 0) + chrono::Duration::seconds(5);
    let expires_text = motor_domain::time::format(&expires);
    let (status, created) = call(
        &m,
        Method::POST,
        &keys,
        ADMIN_TOKEN,
        Some(json!({"nombre": "k", "scopes": ["subscriptions:manage"], "vence_en": expires_text})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["vence_en"], json!(expires_text));
    let token = created["token"].as_str().unwrap().to_owned();
    let (_, listed) = call(&m, Method::GET, &keys, ADMIN_TOKEN, None).await;
    assert!(
        listed["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["vence_en"] == json!(expires_text)),
        "{listed}"
    );

    let r = Receiver::start(Duration::ZERO, 503).await;
    let visito = subscribe(
        &m,
        &token,
        json!({"nombre": "v", "url": r.url("visito"), "contrato": "visito"}),
    )
    .await;
    post_events(&m, &t, 0, 3, "x").await;
    wait_state(&m, visito, "pendiente", 3).await;

    // Refused once past vence_en (within the key cache's freshness).
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, _) = call(&m, Method::GET, "/v1/subscriptions", &token, None).await;
        if status == StatusCode::UNAUTHORIZED {
            break;
        }
        assert_eq!(status, StatusCode::OK);
        assert!(Instant::now() < deadline, "the key still works");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(chrono::Utc::now() >= expires, "refused before its vence_en");
    wait_subscription(&m, visito, "suspendida", Some("clave_vencida")).await;
    assert_eq!(
        reasons(&m, visito).await,
        [("cancelada".to_owned(), Some("clave_vencida".to_owned()), 3)]
    );
    m.stop().await;
}

/// Seed 001's permission model: the catalogue maps types to read scopes;
/// a key needs the read scope of every type its subscription selects
/// (every mapped one when it selects all), on create and on change — 403
/// naming the type; the operator needs none. A mapping must name a type
/// of the catalogue (422).
#[tokio::test]
async fn a_missing_read_scope_is_a_403_naming_the_type() {
    let m = TestMotor::start(&[motor::serve::Role::Api]).await;
    let t = m.tenant(1).await;
    let catalogue = format!("/v1/admin/apps/{}/event-types", t.app);
    assert_field(
        &call(
            &m,
            Method::PUT,
            &catalogue,
            ADMIN_TOKEN,
            Some(json!({"tipos": ["message.created"], "permisos_lectura": {"crm.x": "crm:read"}})),
        )
        .await,
        "body.permisos_lectura.crm.x",
    );
    assert_field(
        &call(
            &m,
            Method::PUT,
            &catalogue,
            ADMIN_TOKEN,
            Some(json!({"tipos": ["message.created"], "permisos_lectura": {"message.created": "Nope"}})),
        )
        .await,
        "body.permisos_lectura.message.created",
    );
    let table = json!({
        "message.created": "conversations:read",
        "message.delivery.updated": "messages:read",
        "crm.opportunity.created": "crm:sales:read",
    });
    let (status, set) = call(
        &m,
        Method::PUT,
        &catalogue,
        ADMIN_TOKEN,
        Some(json!({
            "tipos": ["message.created", "message.delivery.updated", "crm.opportunity.created", "other"],
            "permisos_lectura": table,
        })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!(set["permisos_lectura"], table);
    let (_, got) = call(&m, Method::GET, &catalogue, ADMIN_TOKEN, None).await;
    assert_eq!(got["permisos_lectura"], table);

    let keys = format!("/v1/admin/apps/{}/keys", t.app);
    let (status, created) = call(
        &m,
        Method::POST,
        &keys,
        ADMIN_TOKEN,
        Some(json!({"nombre": "c", "scopes": ["subscriptions:manage"],
                    "permisos_lectura": ["conversations:read"]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["permisos_lectura"], json!(["conversations:read"]));
    let conversations = created["token"].as_str().unwrap().to_owned();
    assert_field(
        &call(
            &m,
            Method::POST,
            &keys,
            ADMIN_TOKEN,
            Some(json!({"nombre": "c", "scopes": ["events:read"], "permisos_lectura": ["read"]})),
        )
        .await,
        "body.permisos_lectura[0]",
    );

    let body =
        |tipos: Value| json!({"nombre": "s", "url": "http://127.0.0.1:9/hook", "tipos": tipos});
    let forbidden = |answer: &(StatusCode, Value), t: &str| {
        assert_eq!(answer.0, StatusCode::FORBIDDEN, "{}", answer.1);
        let message = answer.1["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(t), "names {t}: {}", answer.1);
    };
    // Its own types, and one no scope guards: fine.
    let ok = subscribe(
        &m,
        &conversations,
        body(json!(["message.created", "other"])),
    )
    .await;
    // A type whose scope it lacks: 403 naming it.
    forbidden(
        &create(
            &m,
            &conversations,
            body(json!(["message.created", "message.delivery.updated"])),
        )
        .await,
        "message.delivery.updated",
    );
    // Every type (none named) needs every mapped scope.
    forbidden(
        &create(&m, &conversations, body(json!([]))).await,
        "crm.opportunity.created",
    );
    // A change needs them again.
    forbidden(
        &patch(
            &m,
            &conversations,
            ok,
            json!({"tipos": ["crm.opportunity.created"]}),
        )
        .await,
        "crm.opportunity.created",
    );
    // A key holding them all; and the operator, who needs none.
    let (status, all) = call(
        &m,
        Method::POST,
        &keys,
        ADMIN_TOKEN,
        Some(json!({"nombre": "all", "scopes": ["subscriptions:manage"],
                    "permisos_lectura": ["conversations:read", "messages:read", "crm:sales:read"]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let all = all["token"].as_str().unwrap().to_owned();
    subscribe(&m, &all, body(json!([]))).await;
    let (status, _) = patch(&m, &all, ok, json!({"tipos": ["crm.opportunity.created"]})).await;
    assert_eq!(status, StatusCode::OK);
    // The change bound it to the calling key.
    let bound: String = sqlx::query_scalar("SELECT clave_api FROM subscriptions WHERE id = $1")
        .bind(ok.as_uuid())
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    let all_id: String =
        sqlx::query_scalar("SELECT key_id FROM api_keys WHERE nombre = 'all' AND app_id = $1")
            .bind(uuid::Uuid::from(t.app))
            .fetch_one(&m.db.pool)
            .await
            .unwrap();
    assert_eq!(bound, all_id);
    let (status, op) = call(
        &m,
        Method::POST,
        &format!("/v1/admin/apps/{}/subscriptions", t.app),
        ADMIN_TOKEN,
        Some(body(json!([]))),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "the operator needs no read scope: {op}"
    );
    m.stop().await;
}
