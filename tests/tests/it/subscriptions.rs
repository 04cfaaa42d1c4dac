//! `/v1/subscriptions`: the contract's shape, every validation at its
//! boundary, optimistic concurrency, deletion, suspension and the closed
//! catalogue of event types. Secrets and rotation are in `secrets.rs`,
//! scopes and instance restrictions in `subscription_access.rs`.

use chrono::{DateTime, Utc};
use motor::serve::Role;
use motor_domain::{
    secret::SigningKeyId,
    subscription::{SubscriptionId, SuspensionReason},
    InstanceId,
};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::util::{Tenant, TestMotor, ADMIN_TOKEN};

/// One API call; the answer's JSON (`null` when empty).
pub async fn call(
    m: &TestMotor,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = m.http.request(method, m.url(path)).bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    };
    (status, json)
}

/// Adds hosts to the global allowed destinations.
pub async fn allow(m: &TestMotor, hosts: &[&str]) {
    let (status, body) = call(
        m,
        Method::PATCH,
        "/v1/admin/settings",
        ADMIN_TOKEN,
        Some(json!({"webhooks.destinos_permitidos": hosts})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

pub async fn create(m: &TestMotor, token: &str, body: Value) -> (StatusCode, Value) {
    call(m, Method::POST, "/v1/subscriptions", token, Some(body)).await
}

/// Creates a subscription to `http://127.0.0.1:9/hook` (allowed for every
/// test tenant) and returns the whole answer.
pub async fn create_ok(m: &TestMotor, t: &Tenant, extra: Value) -> Value {
    let mut body = json!({"nombre": "CRM principal", "url": "http://127.0.0.1:9/hook"});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (status, answer) = create(m, &t.token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer
}

/// The id of the subscription a creation answered with.
pub fn sub_id(created: &Value) -> SubscriptionId {
    created["suscripcion"]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

pub fn assert_field(answer: &(StatusCode, Value), field: &str) {
    assert_eq!(
        answer.0,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{field}: {}",
        answer.1
    );
    assert_eq!(answer.1["error"]["code"], "validacion", "{}", answer.1);
    assert_eq!(answer.1["error"]["campo"], field, "{}", answer.1);
}

pub fn ts(v: &Value) -> DateTime<Utc> {
    motor_domain::time::parse(v.as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn create_answers_the_documented_shape() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    allow(&m, &["crm.ejemplo.com"]).await;
    let (status, body) = create(
        &m,
        &t.token,
        json!({
            "nombre": "CRM principal",
            "url": "https://crm.ejemplo.com/webhooks/motor",
            "tipos": ["message.received", "message.updated", "command.failed"]
        }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["suscripcion", "secreto"]);
    let s = &body["suscripcion"];
    let fields: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        fields,
        [
            "id",
            "cliente_id",
            "nombre",
            "url",
            "credenciales",
            "instancias",
            "tipos",
            "ordenado",
            "firma",
            "max_por_segundo",
            "estado",
            "motivo",
            "suspendida_en",
            "version",
            "claves",
            "pendientes",
            "fallidas",
            "creada_en",
            "actualizada_en"
        ]
    );
    assert_eq!(s["cliente_id"], t.app.to_string());
    assert_eq!(s["nombre"], "CRM principal");
    assert_eq!(s["url"], "https://crm.ejemplo.com/webhooks/motor");
    assert_eq!(s["instancias"], json!([]));
    assert_eq!(
        s["tipos"],
        json!(["message.received", "message.updated", "command.failed"])
    );
    assert_eq!(s["ordenado"], true);
    assert_eq!(s["firma"], "mw-v1", "the default signing profile");
    assert_eq!(s["estado"], "activa");
    assert_eq!(s["motivo"], Value::Null);
    assert_eq!(s["suspendida_en"], Value::Null);
    assert_eq!(s["version"], 1);
    assert_eq!(
        (s["pendientes"].clone(), s["fallidas"].clone()),
        (json!(0), json!(0))
    );
    let secreto = &body["secreto"];
    let key_id = secreto["key_id"].as_str().unwrap();
    let valor = secreto["valor"].as_str().unwrap();
    assert!(SigningKeyId::parse(key_id).is_some(), "{key_id}");
    assert!(
        valor.starts_with("whsec_") && valor.len() >= "whsec_".len() + 64,
        "{valor}"
    );
    assert_eq!(
        s["claves"],
        json!([{"key_id": key_id, "creado_en": s["claves"][0]["creado_en"], "vence_en": null}])
    );
    ts(&s["creada_en"]);
    ts(&s["claves"][0]["creado_en"]);

    // GET answers the same subscription, without the secret.
    let id = s["id"].as_str().unwrap();
    let (status, got) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{id}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&got, s);
    m.stop().await;
}

#[tokio::test]
async fn every_rule_at_its_boundary() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let other = m.tenant(1).await;
    allow(&m, &["a", "h.io", "only.io:8443"]).await;
    let url = "http://127.0.0.1:9/hook";
    let tok = t.token.as_str();

    // nombre: 1 and 120 characters pass, 0 and 121 do not.
    for ok in ["x".to_owned(), "ñ".repeat(120)] {
        assert_eq!(
            create(&m, tok, json!({"nombre": ok, "url": url})).await.0,
            StatusCode::CREATED
        );
    }
    for bad in [String::new(), "   ".into(), "x".repeat(121)] {
        assert_field(
            &create(&m, tok, json!({"nombre": bad, "url": url})).await,
            "body.nombre",
        );
    }
    assert_field(&create(&m, tok, json!({"url": url})).await, "body.nombre");
    assert_field(
        &create(&m, tok, json!({"nombre": 5, "url": url})).await,
        "body.nombre",
    );

    // url: 8 and 2000 characters pass, 7 and 2001 do not.
    assert_eq!(
        create(&m, tok, json!({"nombre": "n", "url": "http://a"}))
            .await
            .0,
        StatusCode::CREATED
    );
    assert_field(
        &create(&m, tok, json!({"nombre": "n", "url": "http://"})).await,
        "body.url",
    );
    let long = format!("https://h.io/{}", "p".repeat(2000 - "https://h.io/".len()));
    assert_eq!(long.len(), 2000);
    assert_eq!(
        create(&m, tok, json!({"nombre": "n", "url": long})).await.0,
        StatusCode::CREATED
    );
    assert_field(
        &create(&m, tok, json!({"nombre": "n", "url": format!("{long}p")})).await,
        "body.url",
    );
    for bad in [
        "https://user:pw@h.io/x",  // userinfo
        "https://user@h.io/x",     // user only
        "https://h.io/x#frag",     // fragment
        "ftp://h.io/x",            // scheme
        "https://elsewhere.io/x",  // host not allowed
        "https://sub.h.io/x",      // no suffix matching
        "https://only.io/x",       // host:port mismatch (443)
        "http://only.io:8444/x",   // host:port mismatch
        "http://169.254.169.254/", // metadata, never allowed
        "http://localhost:9/hook", // loopback by name
        "http://127.0.0.2:9/hook", // loopback not named literally
    ] {
        assert_field(
            &create(&m, tok, json!({"nombre": "n", "url": bad})).await,
            "body.url",
        );
    }
    assert_eq!(
        create(
            &m,
            tok,
            json!({"nombre": "n", "url": "https://only.io:8443/x"})
        )
        .await
        .0,
        StatusCode::CREATED
    );
    assert_field(&create(&m, tok, json!({"nombre": "n"})).await, "body.url");

    // instancias: 200 pass, 201 do not; each must be an id of this app.
    let mut many = t
        .instances
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>();
    while many.len() < 200 {
        let i = motor_api::admin::create_instance(
            &m.db.pool,
            t.app,
            motor_api::admin::CreateInstance {
                nombre: format!("i{}", many.len()),
            },
        )
        .await
        .unwrap();
        many.push(i.id.to_string());
    }
    assert_eq!(
        create(
            &m,
            tok,
            json!({"nombre": "n", "url": url, "instancias": many})
        )
        .await
        .0,
        StatusCode::CREATED
    );
    let mut over = many.clone();
    over.push(InstanceId::new().to_string());
    assert_field(
        &create(
            &m,
            tok,
            json!({"nombre": "n", "url": url, "instancias": over}),
        )
        .await,
        "body.instancias",
    );
    let mut bad = many[..5].to_vec();
    bad[3] = "no-es-un-id".into();
    assert_field(
        &create(
            &m,
            tok,
            json!({"nombre": "n", "url": url, "instancias": bad}),
        )
        .await,
        "body.instancias[3]",
    );
    let foreign = vec![many[0].clone(), other.instances[0].to_string()];
    assert_field(
        &create(
            &m,
            tok,
            json!({"nombre": "n", "url": url, "instancias": foreign}),
        )
        .await,
        "body.instancias[1]",
    );
    let unknown = vec![InstanceId::new().to_string()];
    assert_field(
        &create(
            &m,
            tok,
            json!({"nombre": "n", "url": url, "instancias": unknown}),
        )
        .await,
        "body.instancias[0]",
    );

    // tipos: 50 pass, 51 do not.
    let tipos: Vec<String> = (0..50).map(|i| format!("message.t{i}")).collect();
    assert_eq!(
        create(&m, tok, json!({"nombre": "n", "url": url, "tipos": tipos}))
            .await
            .0,
        StatusCode::CREATED
    );
    let mut over = tipos.clone();
    over.push("message.t50".into());
    assert_field(
        &create(&m, tok, json!({"nombre": "n", "url": url, "tipos": over})).await,
        "body.tipos",
    );
    assert_field(
        &create(
            &m,
            tok,
            json!({"nombre": "n", "url": url, "tipos": ["ok", ""]}),
        )
        .await,
        "body.tipos[1]",
    );
    assert_field(
        &create(
            &m,
            tok,
            json!({"nombre": "n", "url": url, "tipos": ["ok", 7]}),
        )
        .await,
        "body.tipos[1]",
    );

    // Types and unknown fields.
    assert_field(
        &create(
            &m,
            tok,
            json!({"nombre": "n", "url": url, "ordenado": "si"}),
        )
        .await,
        "body.ordenado",
    );
    assert_field(
        &create(
            &m,
            tok,
            json!({"nombre": "n", "url": url, "estado": "activa"}),
        )
        .await,
        "body.estado",
    );
    let (status, body) = m
        .http
        .post(m.url("/v1/subscriptions"))
        .bearer_auth(tok)
        .header("content-type", "application/json")
        .body("{\"nombre\": ")
        .send()
        .await
        .map(|r| (r.status(), r))
        .unwrap();
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body.json::<Value>().await.unwrap()["error"]["code"],
        "json_invalido"
    );

    // Nothing refused was stored: 7 subscriptions were created above.
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", tok, None).await;
    assert_eq!(list["suscripciones"].as_array().unwrap().len(), 7);
    m.stop().await;
}

#[tokio::test]
async fn patch_changes_fields_and_bumps_version() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    allow(&m, &["h.io"]).await;
    let created = create_ok(&m, &t, json!({})).await;
    let id = created["suscripcion"]["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/subscriptions/{id}");

    let (status, s) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"nombre": "Otro", "url": "https://h.io/x", "instancias": [t.instances[1]],
                    "tipos": ["a.b"], "ordenado": false, "estado": "pausada", "version_esperada": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{s}");
    assert_eq!(
        (
            s["nombre"].clone(),
            s["url"].clone(),
            s["instancias"].clone(),
            s["tipos"].clone()
        ),
        (
            json!("Otro"),
            json!("https://h.io/x"),
            json!([t.instances[1]]),
            json!(["a.b"])
        )
    );
    assert_eq!(
        (
            s["ordenado"].clone(),
            s["estado"].clone(),
            s["version"].clone()
        ),
        (json!(false), json!("pausada"), json!(2))
    );
    assert!(ts(&s["actualizada_en"]) >= ts(&s["creada_en"]));

    // A stale version is a conflict, and changes nothing.
    let stale = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"nombre": "X", "version_esperada": 1})),
    )
    .await;
    assert_eq!(stale.0, StatusCode::CONFLICT, "{}", stale.1);
    assert_eq!(stale.1["error"]["code"], "conflicto");
    let (_, now) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(
        (now["nombre"].clone(), now["version"].clone()),
        (json!("Otro"), json!(2))
    );

    // Without version_esperada the change applies; reactivating is a change.
    let (status, s) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"estado": "activa"})),
    )
    .await;
    assert_eq!(
        (status, s["estado"].clone(), s["version"].clone()),
        (StatusCode::OK, json!("activa"), json!(3))
    );
    // A PATCH that changes nothing does not bump.
    let (_, s) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"estado": "activa"})),
    )
    .await;
    assert_eq!(s["version"], 3);

    // Only activa and pausada may be set; fields are validated as on create.
    for (body, field) in [
        (json!({"estado": "suspendida"}), "body.estado"),
        (json!({"estado": "eliminada"}), "body.estado"),
        (json!({"nombre": ""}), "body.nombre"),
        (json!({"url": "https://nope.io/"}), "body.url"),
        (json!({"instancias": ["x"]}), "body.instancias[0]"),
        (json!({"tipos": [""]}), "body.tipos[0]"),
        (json!({"version_esperada": "3"}), "body.version_esperada"),
        (json!({"secreto": "x"}), "body.secreto"),
    ] {
        assert_field(
            &call(&m, Method::PATCH, &path, &t.token, Some(body)).await,
            field,
        );
    }
    let missing = format!("/v1/subscriptions/{}", SubscriptionId::new());
    assert_eq!(
        call(&m, Method::PATCH, &missing, &t.token, Some(json!({})))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        call(&m, Method::GET, "/v1/subscriptions/nope", &t.token, None)
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_patches_with_one_version_exactly_one_wins() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({})).await;
    let path = format!(
        "/v1/subscriptions/{}",
        created["suscripcion"]["id"].as_str().unwrap()
    );
    const WRITERS: usize = 12;
    let mut tasks = Vec::new();
    for i in 0..WRITERS {
        let (http, url, token) = (m.http.clone(), m.url(&path), t.token.clone());
        tasks.push(tokio::spawn(async move {
            http.patch(url)
                .bearer_auth(token)
                .json(&json!({"nombre": format!("writer {i}"), "version_esperada": 1}))
                .send()
                .await
                .unwrap()
                .status()
        }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    let won = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let lost = statuses
        .iter()
        .filter(|s| **s == StatusCode::CONFLICT)
        .count();
    assert_eq!((won, lost), (1, WRITERS - 1), "{statuses:?}");
    let (_, s) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(s["version"], 2);
    m.stop().await;
}

#[tokio::test]
async fn delete_keeps_the_row_and_stops_changes() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({})).await;
    let path = format!(
        "/v1/subscriptions/{}",
        created["suscripcion"]["id"].as_str().unwrap()
    );
    let (status, body) = call(&m, Method::DELETE, &path, &t.token, None).await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let (status, s) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(
        (status, s["estado"].clone(), s["version"].clone()),
        (StatusCode::OK, json!("eliminada"), json!(2))
    );
    // Its sealed secrets are gone: nothing is signed for it again.
    assert_eq!(s["claves"], json!([]));
    let keys: i64 = sqlx::query_scalar("SELECT count(*) FROM subscription_keys")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(keys, 0);
    // Deleting again is not an error and changes nothing.
    assert_eq!(
        call(&m, Method::DELETE, &path, &t.token, None).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        call(&m, Method::GET, &path, &t.token, None).await.1["version"],
        2
    );
    // Not listed by default; listed on request.
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", &t.token, None).await;
    assert_eq!(list["suscripciones"], json!([]));
    let (_, list) = call(
        &m,
        Method::GET,
        "/v1/subscriptions?estado=eliminada,activa",
        &t.token,
        None,
    )
    .await;
    assert_eq!(list["suscripciones"].as_array().unwrap().len(), 1);
    assert_field(
        &call(
            &m,
            Method::GET,
            "/v1/subscriptions?estado=borrada",
            &t.token,
            None,
        )
        .await,
        "query.estado",
    );
    // A deleted subscription cannot be revived or rotated.
    for (method, p, body) in [
        (
            Method::PATCH,
            path.clone(),
            Some(json!({"estado": "activa"})),
        ),
        (Method::POST, format!("{path}/rotate"), None),
    ] {
        let (status, answer) = call(&m, method, &p, &t.token, body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    }
    m.stop().await;
}

/// What an attempt found suspends the subscription only at the version the
/// attempt was claimed under: a refusal of credentials a `PATCH` replaced
/// since, recorded after it, leaves the subscription as the `PATCH` left
/// it (the flake of `brokers::faults::refused_credentials_…`: suspended
/// again, every delivery waited behind it).
#[tokio::test]
async fn an_attempt_claimed_under_a_replaced_version_does_not_suspend() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({})).await;
    let id = sub_id(&created);
    let claimed_at = created["suscripcion"]["version"].as_i64().unwrap();
    let path = format!("/v1/subscriptions/{id}");
    let (status, patched) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"nombre": "fixed"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    let now_at = patched["version"].as_i64().unwrap();
    assert_eq!(now_at, claimed_at + 1);
    let mut conn = m.db.pool.acquire().await.unwrap();
    assert!(!motor_store::subscriptions::suspend_at_version(
        &mut conn,
        id,
        claimed_at,
        SuspensionReason::CredentialsRejected,
        "refused before the PATCH"
    )
    .await
    .unwrap());
    drop(conn);
    let (_, s) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(
        (s["estado"].clone(), s["version"].clone()),
        (json!("activa"), json!(now_at))
    );
    let mut conn = m.db.pool.acquire().await.unwrap();
    assert!(motor_store::subscriptions::suspend_at_version(
        &mut conn,
        id,
        now_at,
        SuspensionReason::CredentialsRejected,
        "refused after it"
    )
    .await
    .unwrap());
    drop(conn);
    let (_, s) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(
        (s["estado"].clone(), s["motivo"].clone()),
        (json!("suspendida"), json!("rechazo_credenciales"))
    );
    m.stop().await;
}

#[tokio::test]
async fn suspension_opens_an_alert_and_reactivation_closes_it() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({})).await;
    let id = sub_id(&created);
    let path = format!("/v1/subscriptions/{id}");

    // What the delivery engine does on a 401 from the receiver.
    let mut conn = m.db.pool.acquire().await.unwrap();
    assert!(motor_store::subscriptions::suspend(
        &mut conn,
        id,
        SuspensionReason::Rejected401,
        "http_401"
    )
    .await
    .unwrap());
    assert!(!motor_store::subscriptions::suspend(
        &mut conn,
        id,
        SuspensionReason::Rejected401,
        "http_401"
    )
    .await
    .unwrap());
    drop(conn);
    let (_, s) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(
        (
            s["estado"].clone(),
            s["motivo"].clone(),
            s["version"].clone()
        ),
        (json!("suspendida"), json!("rechazo_401"), json!(2))
    );
    ts(&s["suspendida_en"]);
    let (_, alerts) = call(
        &m,
        Method::GET,
        "/v1/admin/alerts?estado=abierta",
        ADMIN_TOKEN,
        None,
    )
    .await;
    let alerts = alerts["alerts"].as_array().unwrap().clone();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(
        (
            alerts[0]["suscripcion_id"].clone(),
            alerts[0]["motivo"].clone()
        ),
        (json!(id), json!("rechazo_401"))
    );

    let (status, s) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"estado": "activa"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{s}");
    assert_eq!(
        (
            s["estado"].clone(),
            s["motivo"].clone(),
            s["suspendida_en"].clone()
        ),
        (json!("activa"), Value::Null, Value::Null)
    );
    let (_, open) = call(
        &m,
        Method::GET,
        "/v1/admin/alerts?estado=abierta",
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert_eq!(open["alerts"], json!([]));
    let (_, closed) = call(
        &m,
        Method::GET,
        "/v1/admin/alerts?estado=cerrada",
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert_eq!(closed["alerts"].as_array().unwrap().len(), 1);

    // A destination that left the list must be fixed before reactivating.
    allow(&m, &["h.io"]).await;
    let (_, s) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"url": "https://h.io/x"})),
    )
    .await;
    assert_eq!(s["url"], "https://h.io/x");
    allow(&m, &[]).await;
    let mut conn = m.db.pool.acquire().await.unwrap();
    motor_store::subscriptions::suspend(&mut conn, id, SuspensionReason::DestinationNotAllowed, "")
        .await
        .unwrap();
    drop(conn);
    assert_field(
        &call(
            &m,
            Method::PATCH,
            &path,
            &t.token,
            Some(json!({"estado": "activa"})),
        )
        .await,
        "body.url",
    );
    let (status, s) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"estado": "activa", "url": "http://127.0.0.1:9/x"})),
    )
    .await;
    assert_eq!(
        (status, s["estado"].clone()),
        (StatusCode::OK, json!("activa")),
        "{s}"
    );
    m.stop().await;
}

#[tokio::test]
async fn a_closed_catalogue_refuses_unknown_types() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let catalogue = format!("/v1/admin/apps/{}/event-types", t.app);
    let (status, body) = call(&m, Method::GET, &catalogue, ADMIN_TOKEN, None).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"tipos": null})));
    // Open: any type.
    create_ok(&m, &t, json!({"tipos": ["whatever.type"]})).await;

    let (status, body) = call(
        &m,
        Method::PUT,
        &catalogue,
        ADMIN_TOKEN,
        Some(json!({"tipos": ["message.received", "message.sent"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    create_ok(&m, &t, json!({"tipos": ["message.sent"]})).await;
    create_ok(&m, &t, json!({"tipos": []})).await;
    let (status, body) = create(&m, &t.token, json!({"nombre": "n", "url": "http://127.0.0.1/", "tipos": ["message.sent", "message.typo"]})).await;
    assert_field(&(status, body), "body.tipos[1]");
    let s = create_ok(&m, &t, json!({})).await;
    let path = format!(
        "/v1/subscriptions/{}",
        s["suscripcion"]["id"].as_str().unwrap()
    );
    assert_field(
        &call(
            &m,
            Method::PATCH,
            &path,
            &t.token,
            Some(json!({"tipos": ["message.typo"]})),
        )
        .await,
        "body.tipos[0]",
    );

    assert_field(
        &call(
            &m,
            Method::PUT,
            &catalogue,
            ADMIN_TOKEN,
            Some(json!({"tipos": ["ok", ""]})),
        )
        .await,
        "body.tipos[1]",
    );
    assert_field(
        &call(&m, Method::PUT, &catalogue, ADMIN_TOKEN, Some(json!({}))).await,
        "body.tipos",
    );
    let (status, _) = call(
        &m,
        Method::PUT,
        &catalogue,
        &t.token,
        Some(json!({"tipos": null})),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = call(
        &m,
        Method::PUT,
        &catalogue,
        ADMIN_TOKEN,
        Some(json!({"tipos": null})),
    )
    .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"tipos": null})));
    create_ok(&m, &t, json!({"tipos": ["message.typo"]})).await;
    m.stop().await;
}

#[tokio::test]
async fn pending_and_failed_count_the_deliveries() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({"tipos": ["message.sent"]})).await;
    let other = create_ok(&m, &t, json!({"tipos": ["message.received"]})).await;
    let id = created["suscripcion"]["id"].as_str().unwrap().to_owned();
    let events = json!([
        {"type": "message.sent", "data": 1},
        {"type": "message.sent", "data": 2},
        {"type": "message.sent", "data": 3},
        {"type": "message.updated", "data": 4},
    ]);
    let (status, _) = call(
        &m,
        Method::POST,
        &format!("/v1/instances/{}/events", t.instances[0]),
        &t.token,
        Some(events),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    // A delivery that ended in the DLQ (what the engine does on a 404).
    sqlx::query(
        "UPDATE deliveries SET estado = 'fallida', proximo_intento = NULL
         WHERE id = (SELECT id FROM deliveries WHERE subscription_id = $1 ORDER BY seq LIMIT 1)",
    )
    .bind(uuid::Uuid::parse_str(&id).unwrap())
    .execute(&m.db.pool)
    .await
    .unwrap();

    let (_, s) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{id}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(
        (s["pendientes"].clone(), s["fallidas"].clone()),
        (json!(2), json!(1))
    );
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", &t.token, None).await;
    let counts: Vec<(Value, Value)> = list["suscripciones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["pendientes"].clone(), s["fallidas"].clone()))
        .collect();
    assert_eq!(counts, [(json!(2), json!(1)), (json!(0), json!(0))]);
    assert_eq!(list["suscripciones"][1]["id"], other["suscripcion"]["id"]);
    m.stop().await;
}
