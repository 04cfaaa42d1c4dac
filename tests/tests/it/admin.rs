//! The operator API and `motor admin`: the same operations, the same JSON.

use std::process::Command;

use motor::serve::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::util::{TestMotor, ADMIN_TOKEN};

async fn admin(
    m: &TestMotor,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = m.http.request(method, m.url(path)).bearer_auth(ADMIN_TOKEN);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

#[tokio::test]
async fn apps_instances_and_keys_over_http() {
    use reqwest::Method;
    let m = TestMotor::start(&[Role::Api]).await;

    let (status, app) = admin(
        &m,
        Method::POST,
        "/v1/admin/apps",
        Some(
            json!({"nombre": "Acme", "destinos_permitidos": ["Hooks.Acme.com", "127.0.0.1:9000"]}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        keys(&app),
        [
            "creada_en",
            "destinos_permitidos",
            "id",
            "nombre",
            "politica_destinos"
        ]
    );
    assert_eq!(
        app["destinos_permitidos"],
        json!(["hooks.acme.com", "127.0.0.1:9000"])
    );
    let app_id = app["id"].as_str().unwrap().to_owned();

    let (status, got) = admin(&m, Method::GET, &format!("/v1/admin/apps/{app_id}"), None).await;
    assert_eq!((status, &got), (StatusCode::OK, &app));
    let (status, patched) = admin(
        &m,
        Method::PATCH,
        &format!("/v1/admin/apps/{app_id}"),
        Some(json!({"nombre": "Acme 2"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(patched["nombre"], "Acme 2");
    assert_eq!(patched["destinos_permitidos"], app["destinos_permitidos"]);

    let (status, instance) = admin(
        &m,
        Method::POST,
        &format!("/v1/admin/apps/{app_id}/instances"),
        Some(json!({"nombre": "wa-1"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(keys(&instance), ["app_id", "generation", "id", "nombre"]);
    assert_eq!(
        (instance["app_id"].as_str(), instance["generation"].as_i64()),
        (Some(app_id.as_str()), Some(1))
    );
    let instance_id = instance["id"].as_str().unwrap().to_owned();

    let (status, key) = admin(
        &m,
        Method::POST,
        &format!("/v1/admin/apps/{app_id}/keys"),
        Some(
            json!({"nombre": "producer", "scopes": ["events:write"], "instancias": [instance_id]}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(keys(&key), ["instancias", "key_id", "scopes", "token"]);
    let token = key["token"].as_str().unwrap();

    // The token works, is shown once and is stored hashed.
    let res = m
        .http
        .post(m.url(&format!("/v1/instances/{instance_id}/events")))
        .bearer_auth(token)
        .json(&json!({"type": "t", "data": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let (_, listed) = admin(
        &m,
        Method::GET,
        &format!("/v1/admin/apps/{app_id}/keys"),
        None,
    )
    .await;
    assert!(
        !listed.to_string().contains(token),
        "listing never shows the token"
    );
    let stored: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM api_keys WHERE encode(token_hash, 'escape') LIKE '%' || $1 || '%'",
    )
    .bind(token)
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(stored, 0);

    let (_, list) = admin(
        &m,
        Method::GET,
        &format!("/v1/admin/apps/{app_id}/instances"),
        None,
    )
    .await;
    assert_eq!(list["instances"][0]["id"], instance_id.as_str());
    m.stop().await;
}

#[tokio::test]
async fn operator_input_errors_name_the_field() {
    use reqwest::Method;
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let other = m.tenant(1).await;
    let app = t.app;
    let cases = [
        (
            "/v1/admin/apps".to_owned(),
            json!({"nombre": "a".repeat(121)}),
            "body.nombre",
        ),
        ("/v1/admin/apps".to_owned(), json!({}), "body.nombre"),
        // Postgres text cannot hold NUL: a 422, not a 500.
        (
            "/v1/admin/apps".to_owned(),
            json!({"nombre": "a\u{0}b"}),
            "body.nombre",
        ),
        (
            format!("/v1/admin/apps/{app}/instances"),
            json!({"nombre": "\u{0}"}),
            "body.nombre",
        ),
        (
            "/v1/admin/apps".to_owned(),
            json!({"nombre": "x", "destinos_permitidos": ["ok.com", "http://bad"]}),
            "body.destinos_permitidos[1]",
        ),
        (
            "/v1/admin/apps".to_owned(),
            json!({"nombre": "x", "color": 1}),
            "body.color",
        ),
        (
            format!("/v1/admin/apps/{app}/instances"),
            json!({"nombre": ""}),
            "body.nombre",
        ),
        (
            format!("/v1/admin/apps/{app}/keys"),
            json!({"nombre": "k", "scopes": ["events:read", "root"]}),
            "body.scopes[1]",
        ),
        (
            format!("/v1/admin/apps/{app}/keys"),
            json!({"nombre": "k", "scopes": []}),
            "body.scopes",
        ),
        (
            format!("/v1/admin/apps/{app}/keys"),
            json!({"nombre": "k", "scopes": ["events:read"], "instancias": ["nope"]}),
            "body.instancias[0]",
        ),
        (
            format!("/v1/admin/apps/{app}/keys"),
            json!({"nombre": "k", "scopes": ["events:read"], "instancias": [other.instances[0]]}),
            "body.instancias",
        ),
    ];
    for (path, body, field) in cases {
        let (status, err) = admin(&m, Method::POST, &path, Some(body.clone())).await;
        assert_eq!(
            (status, err["error"]["campo"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some(field)),
            "{path} {body}"
        );
    }
    let (status, _) = admin(
        &m,
        Method::GET,
        &format!("/v1/admin/apps/{}", motor_domain::AppId::new()),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = admin(
        &m,
        Method::POST,
        &format!("/v1/admin/apps/{}/instances", motor_domain::AppId::new()),
        Some(json!({"nombre": "x"})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    m.stop().await;
}

fn cli(url: &str, args: &[&str]) -> (bool, Value) {
    let out = Command::new(crate::util::motor_bin())
        .arg("admin")
        .args(args)
        .env("MOTOR_DATABASE_URL", url)
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    let text = if out.status.success() {
        out.stdout
    } else {
        out.stderr
    };
    (
        out.status.success(),
        serde_json::from_slice(&text)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&text))),
    )
}

#[tokio::test]
async fn motor_admin_prints_the_api_json() {
    let db = crate::util::TestDb::new().await;
    let (ok, app) = cli(
        &db.url,
        &[
            "app",
            "create",
            "--nombre",
            "Shell",
            "--destino",
            "hooks.example.com",
        ],
    );
    assert!(ok);
    assert_eq!(
        keys(&app),
        [
            "creada_en",
            "destinos_permitidos",
            "id",
            "nombre",
            "politica_destinos"
        ]
    );
    let app_id = app["id"].as_str().unwrap();
    let (ok, instance) = cli(
        &db.url,
        &["instance", "create", "--app", app_id, "--nombre", "wa"],
    );
    assert!(ok);
    assert_eq!(keys(&instance), ["app_id", "generation", "id", "nombre"]);
    let (ok, key) = cli(
        &db.url,
        &[
            "key",
            "create",
            "--app",
            app_id,
            "--nombre",
            "k",
            "--scope",
            "events:read",
            "--instancia",
            instance["id"].as_str().unwrap(),
        ],
    );
    assert!(ok);
    assert_eq!(keys(&key), ["instancias", "key_id", "scopes", "token"]);
    assert_eq!(key["scopes"], json!(["events:read"]));
    let (ok, listed) = cli(&db.url, &["key", "list", "--app", app_id]);
    assert!(ok);
    assert_eq!(listed["keys"][0]["key_id"], key["key_id"]);
    assert!(!listed.to_string().contains(key["token"].as_str().unwrap()));

    // Errors are the API's error body, on stderr, with a failing exit code.
    let (ok, err) = cli(
        &db.url,
        &[
            "key", "create", "--app", app_id, "--nombre", "k", "--scope", "root",
        ],
    );
    assert!(!ok);
    assert_eq!(err["error"]["campo"], "body.scopes[0]");
}

#[tokio::test]
async fn motor_admin_settings_alerts_and_event_types() {
    use motor_api::admin::{
        alerts::{self, AlertQuery},
        settings,
    };

    let db = crate::util::TestDb::new().await;
    let pool = &db.pool;
    fn api(v: impl serde::Serialize) -> Value {
        serde_json::to_value(v).unwrap()
    }

    // settings get: the API's GET answer, defaults included.
    let (ok, got) = cli(&db.url, &["settings", "get"]);
    assert!(ok, "{got}");
    assert_eq!(got, api(settings::get_settings(pool).await.unwrap()));
    assert_eq!(got["webhooks.timeout_segundos"], 10);

    // settings set KEY VALUE: a JSON value, checked like the PATCH.
    let (ok, set) = cli(
        &db.url,
        &["settings", "set", "webhooks.timeout_segundos", "60"],
    );
    assert!(ok, "{set}");
    assert_eq!(set["webhooks.timeout_segundos"], 60);
    let (ok, set) = cli(
        &db.url,
        &[
            "settings",
            "set",
            "webhooks.destinos_permitidos",
            r#"["Hooks.Example.com", "x.io:8443"]"#,
        ],
    );
    assert!(ok, "{set}");
    assert_eq!(
        set["webhooks.destinos_permitidos"],
        json!(["hooks.example.com", "x.io:8443"])
    );
    assert_eq!(set, api(settings::get_settings(pool).await.unwrap()));
    for (key, value, field) in [
        (
            "webhooks.timeout_segundos",
            "61",
            "body.webhooks.timeout_segundos",
        ),
        (
            "webhooks.ventana_rotacion_minutos",
            "cinco",
            "body.webhooks.ventana_rotacion_minutos",
        ),
        ("webhooks.nope", "1", "body.webhooks.nope"),
    ] {
        let (ok, err) = cli(&db.url, &["settings", "set", key, value]);
        assert!(!ok, "{key}={value}");
        assert_eq!(err["error"]["campo"], field, "{err}");
    }
    let (_, got) = cli(&db.url, &["settings", "get"]);
    assert_eq!(
        got["webhooks.timeout_segundos"], 60,
        "refused sets change nothing"
    );

    // alert list / close: the API's JSON.
    let app = motor_api::admin::create_app(
        pool,
        motor_api::admin::CreateApp {
            nombre: "alerts".into(),
            destinos_permitidos: vec![],
            politica_destinos: None,
            contrato: None,
        },
    )
    .await
    .unwrap();
    let mut conn = pool.acquire().await.unwrap();
    motor_store::alerts::open(&mut conn, app.id, None, "rechazo_401", "receptor")
        .await
        .unwrap();
    drop(conn);
    let (ok, listed) = cli(&db.url, &["alert", "list"]);
    assert!(ok, "{listed}");
    let all = AlertQuery {
        estado: None,
        app_id: None,
    };
    assert_eq!(listed, api(alerts::list_alerts(pool, &all).await.unwrap()));
    assert_eq!(listed["alerts"].as_array().unwrap().len(), 1);
    let alert = &listed["alerts"][0];
    assert_eq!(alert["motivo"], "rechazo_401");
    assert!(alert["cerrada_en"].is_null());
    let id = alert["id"].as_str().unwrap();
    let app_id = app.id.to_string();
    let (_, mine) = cli(
        &db.url,
        &["alert", "list", "--app", &app_id, "--estado", "abierta"],
    );
    assert_eq!(mine["alerts"][0]["id"], id);
    let (ok, closed) = cli(&db.url, &["alert", "close", id]);
    assert!(ok, "{closed}");
    assert_eq!(closed["id"], id);
    assert!(closed["cerrada_en"].is_string());
    let (_, open) = cli(&db.url, &["alert", "list", "--estado", "abierta"]);
    assert_eq!(open, json!({"alerts": []}));
    let (_, done) = cli(&db.url, &["alert", "list", "--estado", "cerrada"]);
    assert_eq!(done["alerts"][0], closed);
    let (ok, err) = cli(&db.url, &["alert", "list", "--estado", "rota"]);
    assert!(!ok);
    assert_eq!(err["error"]["campo"], "query.estado");
    let (ok, err) = cli(
        &db.url,
        &["alert", "close", &uuid::Uuid::new_v4().to_string()],
    );
    assert!(!ok);
    assert_eq!(err["error"]["code"], "no_encontrado");

    // event-types get / set / open.
    let (ok, got) = cli(&db.url, &["event-types", "get", "--app", &app_id]);
    assert!(ok, "{got}");
    assert_eq!(got, json!({"tipos": null}));
    let (ok, set) = cli(
        &db.url,
        &[
            "event-types",
            "set",
            "--app",
            &app_id,
            "--tipo",
            "a.b",
            "--tipo",
            "c",
        ],
    );
    assert!(ok, "{set}");
    assert_eq!(set, json!({"tipos": ["a.b", "c"]}));
    let (_, got) = cli(&db.url, &["event-types", "get", "--app", &app_id]);
    assert_eq!(got, set);
    let (ok, opened) = cli(&db.url, &["event-types", "open", "--app", &app_id]);
    assert!(ok);
    assert_eq!(opened, json!({"tipos": null}));
}
