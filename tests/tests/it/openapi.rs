//! The committed OpenAPI document and envelope schema are what the code
//! generates; every route Motor serves is in the document; and the shapes
//! it describes are the shapes the API really answers. Regenerate the
//! committed files with `MOTOR_UPDATE_OPENAPI=1 cargo test -p
//! motor-system-tests --test it openapi`.

use std::{collections::BTreeSet, path::PathBuf};

use motor::serve::Role;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{
    subscriptions::call,
    util::{TestMotor, ADMIN_TOKEN},
};

fn schemas_dir() -> PathBuf {
    crate::util::repo_root().join("schemas")
}

/// Fails when `file` differs from `generated`; rewrites it on request.
fn check_committed(file: &str, generated: &str) {
    let path = schemas_dir().join(file);
    if std::env::var_os("MOTOR_UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "schemas/{file} is out of date with the code; regenerate it with \
         MOTOR_UPDATE_OPENAPI=1 cargo test -p motor-system-tests --test it openapi"
    );
}

#[test]
fn committed_openapi_matches_the_code() {
    check_committed("openapi.json", &motor_api::openapi_json());
}

#[test]
fn committed_envelope_schema_matches_the_code() {
    check_committed(
        "envelope.schema.json",
        &motor_api::openapi::envelope_schema(),
    );
}

pub(crate) fn document() -> Value {
    serde_json::from_str(&motor_api::openapi_json()).unwrap()
}

#[test]
fn the_document_is_openapi_3_1_and_names_every_route() {
    let doc = document();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let mut routes = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                routes.insert(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    let expected: BTreeSet<String> = [
        "GET /healthz",
        "GET /readyz",
        "GET /metrics",
        "GET /v1/openapi.json",
        "POST /v1/instances/{id}/events",
        "GET /v1/instances/{id}/events",
        "GET /v1/instances/{id}/events/stream",
        "POST /v1/instances/{id}/messages",
        "POST /v1/instances/{id}/commands",
        "GET /v1/instances/{id}/commands",
        "GET /v1/commands/{id}",
        "POST /v1/commands/{id}/cancel",
        "POST /v1/instances/{id}/stream-tokens",
        "POST /v1/subscriptions",
        "GET /v1/subscriptions",
        "GET /v1/subscriptions/{id}",
        "PATCH /v1/subscriptions/{id}",
        "DELETE /v1/subscriptions/{id}",
        "POST /v1/subscriptions/{id}/rotate",
        "POST /v1/subscriptions/{id}/test",
        "POST /v1/subscriptions/{id}/replays",
        "GET /v1/subscriptions/{id}/replays/{replay_id}",
        "POST /v1/subscriptions/{id}/check",
        "GET /v1/deliveries",
        "GET /v1/deliveries/{id}",
        "POST /v1/deliveries/{id}/retry",
        "GET /v1/admin/settings",
        "PATCH /v1/admin/settings",
        "GET /v1/admin/alerts",
        "POST /v1/admin/alerts/{id}/close",
        "GET /v1/admin/apps",
        "POST /v1/admin/apps",
        "GET /v1/admin/apps/{id}",
        "PATCH /v1/admin/apps/{id}",
        "GET /v1/admin/apps/{id}/event-types",
        "PUT /v1/admin/apps/{id}/event-types",
        "GET /v1/admin/apps/{id}/instances",
        "POST /v1/admin/apps/{id}/instances",
        "GET /v1/admin/apps/{id}/keys",
        "POST /v1/admin/apps/{id}/keys",
        "DELETE /v1/admin/apps/{id}/keys/{key_id}",
        "GET /v1/admin/apps/{id}/subscriptions",
        "POST /v1/admin/apps/{id}/subscriptions",
        "GET /v1/admin/apps/{id}/subscriptions/{sid}",
        "PATCH /v1/admin/apps/{id}/subscriptions/{sid}",
        "DELETE /v1/admin/apps/{id}/subscriptions/{sid}",
        "POST /v1/admin/apps/{id}/subscriptions/{sid}/rotate",
        "POST /v1/admin/apps/{id}/subscriptions/{sid}/test",
        "POST /v1/admin/apps/{id}/subscriptions/{sid}/replays",
        "GET /v1/admin/deliveries",
        "GET /v1/admin/deliveries/{id}",
        "GET /v1/admin/dlq",
        "POST /v1/admin/dlq/retry",
        "POST /v1/admin/subscriptions/{id}/pause",
        "POST /v1/admin/subscriptions/{id}/reactivate",
        "GET /v1/admin/reconciliacion",
        "GET /v1/executor/commands",
        "POST /v1/executor/commands/{id}/claim",
        "POST /v1/executor/commands/{id}/report",
        "POST /v1/executor/commands/{id}/heartbeat",
        "POST /v1/executor/instances/{id}/state",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(routes, expected);
    // Every operation names who may call it (or is public on purpose).
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let public =
                ["/healthz", "/readyz", "/metrics", "/v1/openapi.json"].contains(&path.as_str());
            assert_eq!(op.get("security").is_some(), !public, "{method} {path}");
        }
    }
}

/// Each documented route answers: not the fallback's 404 `route`.
#[tokio::test]
async fn every_documented_route_is_served() {
    let m = TestMotor::start(&[Role::Api]).await;
    let doc = document();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let concrete = path
            .replace("{id}", &uuid::Uuid::now_v7().to_string())
            .replace("{key_id}", "key_x")
            .replace("{sid}", &uuid::Uuid::now_v7().to_string());
        for method in item.as_object().unwrap().keys() {
            let method: Method = method.to_uppercase().parse().unwrap();
            let res = m
                .http
                .request(method.clone(), m.url(&concrete))
                .bearer_auth("x")
                .send()
                .await
                .unwrap();
            let status = res.status();
            let body: Value = res.json().await.unwrap_or(Value::Null);
            let fallback =
                status == StatusCode::NOT_FOUND && body["error"]["message"] == "route not found";
            assert!(
                !fallback && status != StatusCode::METHOD_NOT_ALLOWED,
                "{method} {path}: {status} {body}"
            );
        }
    }
    let res = m.http.get(m.url("/v1/openapi.json")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.unwrap(), doc);
    m.stop().await;
}

/// `value`'s keys are the schema's properties, its required ones present,
/// and each value of the JSON type the schema says.
pub(crate) fn assert_matches(doc: &Value, name: &str, value: &Value) {
    let schema = &doc["components"]["schemas"][name];
    let props = schema["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no schema {name}"));
    let obj = value
        .as_object()
        .unwrap_or_else(|| panic!("{name}: {value}"));
    for key in obj.keys() {
        assert!(
            props.contains_key(key),
            "{name}: `{key}` is answered but not documented"
        );
    }
    for required in schema["required"].as_array().into_iter().flatten() {
        assert!(
            obj.contains_key(required.as_str().unwrap()),
            "{name}: `{required}` is documented as required but missing"
        );
    }
    for (key, v) in obj {
        let prop = &props[key];
        let types: Vec<String> = match &prop["type"] {
            Value::String(t) => vec![t.clone()],
            Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap().to_owned()).collect(),
            _ => continue, // a $ref, oneOf or any value
        };
        let actual = match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let ok = types
            .iter()
            .any(|t| t == actual || (t == "number" && actual == "integer"));
        assert!(ok, "{name}.{key}: documented {types:?}, answered {v}");
    }
}

#[tokio::test]
async fn documented_shapes_are_the_answered_shapes() {
    let m = TestMotor::start(&[Role::Api]).await;
    let doc = document();
    let (_, app) = call(
        &m,
        Method::POST,
        "/v1/admin/apps",
        ADMIN_TOKEN,
        Some(json!({"nombre": "a", "destinos_permitidos": ["127.0.0.1"]})),
    )
    .await;
    assert_matches(&doc, "App", &app);
    let app_id = app["id"].as_str().unwrap();
    let (_, instance) = call(
        &m,
        Method::POST,
        &format!("/v1/admin/apps/{app_id}/instances"),
        ADMIN_TOKEN,
        Some(json!({"nombre": "i"})),
    )
    .await;
    assert_matches(&doc, "Instance", &instance);
    let scopes = json!(["events:write", "events:read", "subscriptions:manage"]);
    let (_, key) = call(
        &m,
        Method::POST,
        &format!("/v1/admin/apps/{app_id}/keys"),
        ADMIN_TOKEN,
        Some(json!({"nombre": "k", "scopes": scopes})),
    )
    .await;
    assert_matches(&doc, "CreatedKey", &key);
    let token = key["token"].as_str().unwrap();
    let (_, keys) = call(
        &m,
        Method::GET,
        &format!("/v1/admin/apps/{app_id}/keys"),
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert_matches(&doc, "KeyList", &keys);
    assert_matches(&doc, "ApiKeyInfo", &keys["keys"][0]);

    let events = format!("/v1/instances/{}/events", instance["id"].as_str().unwrap());
    let (_, envelope) = call(
        &m,
        Method::POST,
        &events,
        token,
        Some(json!({"type": "t", "data": {"a": 1}, "command_id": "c"})),
    )
    .await;
    assert_matches(&doc, "Envelope", &envelope);
    let (_, page) = call(&m, Method::GET, &events, token, None).await;
    assert_matches(&doc, "LedgerPage", &page);
    // A stream's 410: a cursor whose next event left the window.
    call(
        &m,
        Method::POST,
        &events,
        token,
        Some(json!({"type": "t", "data": 2})),
    )
    .await;
    sqlx::query("UPDATE events SET recibido_en = now() - interval '1000 hours'")
        .execute(&m.db.pool)
        .await
        .unwrap();
    let stream = format!("{events}/stream?desde=1");
    let (status, gone) = call(&m, Method::GET, &stream, token, None).await;
    assert_eq!(status, StatusCode::GONE);
    assert_matches(&doc, "CursorExpired", &gone);
    assert_matches(&doc, "ErrorDetail", &gone["error"]);

    let (_, created) = call(
        &m,
        Method::POST,
        "/v1/subscriptions",
        token,
        Some(json!({"nombre": "s", "url": "http://127.0.0.1:9/"})),
    )
    .await;
    assert_matches(&doc, "SubscriptionWithSecret", &created);
    assert_matches(&doc, "Subscription", &created["suscripcion"]);
    assert_matches(&doc, "Secreto", &created["secreto"]);
    assert_matches(&doc, "Clave", &created["suscripcion"]["claves"][0]);
    let test = format!(
        "/v1/subscriptions/{}/test",
        created["suscripcion"]["id"].as_str().unwrap()
    );
    let (_, tested) = call(&m, Method::POST, &test, token, None).await;
    assert_matches(&doc, "TestResult", &tested);
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", token, None).await;
    assert_matches(&doc, "SubscriptionList", &list);
    let replay = m
        .http
        .post(m.url(&format!(
            "/v1/admin/apps/{app_id}/subscriptions/{}/replays",
            created["suscripcion"]["id"].as_str().unwrap()
        )))
        .bearer_auth(ADMIN_TOKEN)
        .header("Idempotency-Key", "k")
        .json(
            &json!({"instancia_id": instance["id"], "desde_seq": 1, "hasta_seq": 1, "motivo": "m"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), StatusCode::ACCEPTED);
    assert_matches(&doc, "Replay", &replay.json().await.unwrap());
    let (_, settings) = call(&m, Method::GET, "/v1/admin/settings", ADMIN_TOKEN, None).await;
    assert_matches(&doc, "Settings", &settings);
    let (_, error) = call(
        &m,
        Method::POST,
        "/v1/subscriptions",
        token,
        Some(json!({"nombre": ""})),
    )
    .await;
    assert_matches(&doc, "ErrorBody", &error);
    assert_matches(&doc, "ErrorDetail", &error["error"]);
    let (_, health) = call(&m, Method::GET, "/readyz", "", None).await;
    assert_matches(&doc, "Health", &health);
    m.stop().await;
}

#[test]
fn the_envelope_schema_describes_the_envelope() {
    let schema: Value = serde_json::from_str(&motor_api::openapi::envelope_schema()).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let props: BTreeSet<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let envelope = motor_domain::Envelope {
        schema_version: 1,
        event_id: motor_domain::EventId::new(),
        instance_id: motor_domain::InstanceId::new(),
        seq: 1,
        event_type: "t".into(),
        occurred_at: motor_domain::time::now_millis(),
        received_at: motor_domain::time::now_millis(),
        generation: 1,
        origin: motor_domain::Origin::Live,
        command_id: Some("c".into()),
        data: json!(null),
    };
    let value: Value = serde_json::from_str(&envelope.to_json()).unwrap();
    let keys: BTreeSet<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(props, keys);
    let required: BTreeSet<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(required, &keys - &BTreeSet::from(["command_id"]));
}
