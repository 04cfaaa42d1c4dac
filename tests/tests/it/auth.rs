//! Who may call what: every route without a key is 401, a key without the
//! scope is 403, a key restricted to instance A touching B is 403, a revoked
//! key is 401, and the operator API wants MOTOR_ADMIN_TOKEN.

use std::time::{Duration, Instant};

use motor::serve::Role;
use motor_api::auth::ApiKeys;
use motor_domain::InstanceId;
use motor_store::changes;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::util::{key, TestMotor, ADMIN_TOKEN};

async fn call(
    m: &TestMotor,
    method: Method,
    path: &str,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = m.http.request(method.clone(), m.url(path));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    if method == Method::POST || method == Method::PATCH {
        req = req.json(&if path.ends_with("/events") {
            json!({"type": "t", "data": 1})
        } else {
            json!({"nombre": "x"})
        });
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let body = if status == StatusCode::NO_CONTENT {
        Value::Null
    } else {
        res.json().await.unwrap()
    };
    (status, body)
}

fn event_routes(instance: InstanceId) -> Vec<(Method, String, &'static str)> {
    let path = format!("/v1/instances/{instance}/events");
    vec![
        (Method::POST, path.clone(), "events:write"),
        (Method::GET, path, "events:read"),
    ]
}

#[tokio::test]
async fn api_key_routes_need_a_key_the_scope_and_the_instance() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0], t.instances[1]);

    for (method, path, scope) in event_routes(a) {
        let (status, body) = call(&m, method.clone(), &path, None).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path} without a key"
        );
        assert_eq!(body["error"]["code"], "no_autenticado");
        let (status, _) = call(&m, method.clone(), &path, Some("mtr_not-a-real-token")).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path} with an unknown key"
        );

        // Every scope but the one the route needs.
        let others: Vec<&str> = [
            "events:write",
            "events:read",
            "subscriptions:manage",
            "deliveries:replay",
        ]
        .into_iter()
        .filter(|s| *s != scope)
        .collect();
        let wrong = key(&m.db.pool, t.app, &others, &[]).await;
        let (status, body) = call(&m, method.clone(), &path, Some(&wrong)).await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "{method} {path} without {scope}"
        );
        assert_eq!(body["error"]["code"], "sin_permiso");

        let right = key(&m.db.pool, t.app, &[scope], &[]).await;
        let (status, _) = call(&m, method.clone(), &path, Some(&right)).await;
        assert!(
            status.is_success(),
            "{method} {path} with {scope}: {status}"
        );
    }

    // Restricted to A: A works, B is forbidden, for reads and writes.
    let only_a = key(&m.db.pool, t.app, &["events:read", "events:write"], &[a]).await;
    for (method, path, _) in event_routes(a) {
        let (status, _) = call(&m, method.clone(), &path, Some(&only_a)).await;
        assert!(
            status.is_success(),
            "{method} {path} on its own instance: {status}"
        );
    }
    for (method, path, _) in event_routes(b) {
        let (status, body) = call(&m, method.clone(), &path, Some(&only_a)).await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "{method} {path} on another instance"
        );
        assert_eq!(body["error"]["code"], "sin_permiso");
    }

    // Another app's instance does not exist for this key.
    let other = m.tenant(1).await;
    for (method, path, _) in event_routes(other.instances[0]) {
        let (status, _) = call(&m, method, &path, Some(&t.token)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    m.stop().await;
}

#[tokio::test]
async fn revoked_keys_stop_working() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let path = format!("/v1/instances/{}/events", t.instances[0]);
    let (status, _) = call(&m, Method::GET, &path, Some(&t.token)).await;
    assert_eq!(status, StatusCode::OK);

    let key_id: String = sqlx::query_scalar("SELECT key_id FROM api_keys WHERE app_id = $1")
        .bind(uuid::Uuid::from(t.app))
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    let (status, _) = call(
        &m,
        Method::DELETE,
        &format!("/v1/admin/apps/{}/keys/{key_id}", t.app),
        Some(ADMIN_TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = call(&m, Method::GET, &path, Some(&t.token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    m.stop().await;
}

/// Keys found are trusted for a while without asking Postgres again
/// (`motor_api::auth::ApiKeys`): a key stored a moment after its token was
/// refused works at once (refusals are not remembered), and one revoked
/// outside this process (`motor admin`, another API process) stops
/// working at the announcement of its change (migration 0026), well
/// before the trust of a listening process ends.
#[tokio::test]
async fn a_key_stored_elsewhere_works_at_once_and_one_revoked_elsewhere_stops() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let path = format!("/v1/instances/{}/events", t.instances[0]);
    let token = "mw_stored_by_another_process_0123456789";
    let (status, _) = call(&m, Method::GET, &path, Some(token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    store_key(&m, t.app, "elsewhere", token, None).await;
    let (status, _) = call(&m, Method::GET, &path, Some(token)).await;
    assert_eq!(status, StatusCode::OK, "a key stored after a refusal");

    motor_store::operator::revoke_key(&m.db.pool, t.app, "elsewhere")
        .await
        .unwrap();
    let revoked = Instant::now();
    loop {
        let (status, _) = call(&m, Method::GET, &path, Some(token)).await;
        if status == StatusCode::UNAUTHORIZED {
            break;
        }
        assert_eq!(status, StatusCode::OK);
        assert!(
            revoked.elapsed() < ApiKeys::LISTENED / 3,
            "a key revoked elsewhere still works after {:?}",
            revoked.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    m.stop().await;
}

/// While the process listens for key changes, a key found is not looked
/// up again for longer than a second of requests; a key's expiry still
/// ends its trust on time, though nothing announces it; and a listener
/// that loses its connection forgets what it trusted (a change may have
/// gone unheard), then listens again.
#[tokio::test]
async fn a_listening_process_trusts_a_key_for_longer_but_never_past_its_expiry() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let path = format!("/v1/instances/{}/events", t.instances[0]);
    m.listening(changes::API_KEYS).await;

    let (status, _) = call(&m, Method::GET, &path, Some(&t.token)).await;
    assert_eq!(status, StatusCode::OK);
    let first = lookups(&m).await;
    let until = Instant::now() + ApiKeys::FRESH * 3;
    while Instant::now() < until {
        let (status, _) = call(&m, Method::GET, &path, Some(&t.token)).await;
        assert_eq!(status, StatusCode::OK);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        lookups(&m).await,
        first,
        "a key used for three seconds was looked up again"
    );

    let token = "mw_expiring_soon_0123456789abcdef";
    let expires_in = Duration::from_secs(2);
    store_key(&m, t.app, "expiring", token, Some(expires_in)).await;
    let stored = Instant::now();
    let (status, _) = call(&m, Method::GET, &path, Some(token)).await;
    assert_eq!(status, StatusCode::OK, "a key before its expiry");
    tokio::time::sleep(expires_in.saturating_sub(stored.elapsed()) + Duration::from_millis(200))
        .await;
    let (status, _) = call(&m, Method::GET, &path, Some(token)).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a key past its expiry, found while it was live"
    );

    // The listener's connection dies: what was trusted is forgotten, so
    // the next request looks the key up again.
    let before = lookups(&m).await;
    assert_eq!(
        m.end_listeners(changes::API_KEYS).await,
        1,
        "one connection listens"
    );
    let lost = Instant::now();
    loop {
        let (status, _) = call(&m, Method::GET, &path, Some(&t.token)).await;
        assert_eq!(status, StatusCode::OK);
        if lookups(&m).await > before {
            break;
        }
        assert!(
            lost.elapsed() < ApiKeys::LISTENED / 3,
            "a key trusted before the listener's loss still trusted after {:?}",
            lost.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    m.listening(changes::API_KEYS).await;
    m.stop().await;
}

/// `motor_api_key_lookups_total`.
async fn lookups(m: &TestMotor) -> u64 {
    m.counter("motor_api_key_lookups").await
}

/// Stores a key as another process would (no cache of this one knows).
async fn store_key(
    m: &TestMotor,
    app: motor_domain::AppId,
    key_id: &str,
    token: &str,
    expires_in: Option<Duration>,
) {
    sqlx::query(
        "INSERT INTO api_keys (key_id, app_id, nombre, token_hash, scopes, instancias, vence_en)
         VALUES ($1, $2, $1, $3, ARRAY['events:read'], '{}',
                 now() + make_interval(secs => $4))",
    )
    .bind(key_id)
    .bind(uuid::Uuid::from(app))
    .bind(motor_domain::apikey::token_hash(token))
    .bind(expires_in.map(|d| d.as_secs_f64()))
    .execute(&m.db.pool)
    .await
    .unwrap();
}

#[tokio::test]
async fn operator_routes_need_the_admin_token() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let app = t.app;
    let routes = [
        (Method::GET, "/v1/admin/apps".to_owned()),
        (Method::POST, "/v1/admin/apps".to_owned()),
        (Method::GET, format!("/v1/admin/apps/{app}")),
        (Method::PATCH, format!("/v1/admin/apps/{app}")),
        (Method::GET, format!("/v1/admin/apps/{app}/instances")),
        (Method::POST, format!("/v1/admin/apps/{app}/instances")),
        (Method::GET, format!("/v1/admin/apps/{app}/keys")),
        (Method::POST, format!("/v1/admin/apps/{app}/keys")),
        (Method::DELETE, format!("/v1/admin/apps/{app}/keys/key_0")),
    ];
    for (method, path) in &routes {
        let (status, body) = call(&m, method.clone(), path, None).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path} without a token"
        );
        assert_eq!(body["error"]["code"], "no_autenticado");
        let (status, _) = call(&m, method.clone(), path, Some("wrong")).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path} with a wrong token"
        );
        // An API key, even one with every scope, is not the operator.
        let (status, _) = call(&m, method.clone(), path, Some(&t.token)).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path} with an API key"
        );
    }
    let (status, _) = call(&m, Method::GET, "/v1/admin/apps", Some(ADMIN_TOKEN)).await;
    assert_eq!(status, StatusCode::OK);
    m.stop().await;
}

#[tokio::test]
async fn without_admin_token_the_operator_api_is_closed() {
    let db = crate::util::TestDb::new().await;
    let mut config = crate::util::config(&db, &crate::util::topic_prefix());
    config.admin_token = None;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        motor::serve::run(config, &[Role::Api], stop, Some(tx))
            .await
            .unwrap();
    });
    let addr = rx.await.unwrap();
    let res = reqwest::Client::new()
        .get(format!("http://{addr}/v1/admin/apps"))
        .bearer_auth("")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let body: Value = res.json().await.unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("MOTOR_ADMIN_TOKEN"));
    shutdown.cancel();
    task.await.unwrap();
}
