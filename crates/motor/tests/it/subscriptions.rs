//! `/v1/subscriptions`: the contract's shape, every validation at its
//! boundary, optimistic concurrency, secrets that show once and never leak,
//! rotation, scopes and instance restrictions, deletion, suspension and the
//! master key check at start-up.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use motor::serve::Role;
use motor_domain::{
    seal::SealingKey,
    secret::SigningKeyId,
    signature::{self, SigningKey},
    subscription::{Motivo, SubscriptionId},
    InstanceId,
};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::util::{self, key, Tenant, TestMotor, ADMIN_TOKEN};

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

async fn create(m: &TestMotor, token: &str, body: Value) -> (StatusCode, Value) {
    call(m, Method::POST, "/v1/subscriptions", token, Some(body)).await
}

/// Creates a subscription to `http://127.0.0.1:9/hook` (allowed for every
/// test tenant) and returns the whole answer.
async fn create_ok(m: &TestMotor, t: &Tenant, extra: Value) -> Value {
    let mut body = json!({"nombre": "CRM principal", "url": "http://127.0.0.1:9/hook"});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (status, answer) = create(m, &t.token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer
}

fn assert_field(answer: &(StatusCode, Value), campo: &str) {
    assert_eq!(
        answer.0,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{campo}: {}",
        answer.1
    );
    assert_eq!(answer.1["error"]["code"], "validacion", "{}", answer.1);
    assert_eq!(answer.1["error"]["campo"], campo, "{}", answer.1);
}

fn ts(v: &Value) -> DateTime<Utc> {
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
            "instancias",
            "tipos",
            "ordenado",
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
    for (body, campo) in [
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
            campo,
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

/// Logs of every Motor in this test process, for grepping.
fn captured_logs() -> &'static std::sync::Mutex<Vec<u8>> {
    static LOGS: std::sync::OnceLock<&'static std::sync::Mutex<Vec<u8>>> =
        std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static std::sync::Mutex<Vec<u8>> =
            Box::leak(Box::new(std::sync::Mutex::new(Vec::new())));
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || LogWriter(logs))
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other test installs a subscriber");
        logs
    })
}

struct LogWriter(&'static std::sync::Mutex<Vec<u8>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_secret_shows_once_and_is_nowhere_else() {
    let logs = captured_logs();
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({})).await;
    let id = created["suscripcion"]["id"].as_str().unwrap().to_owned();
    let first = created["secreto"]["valor"].as_str().unwrap().to_owned();
    let path = format!("/v1/subscriptions/{id}");
    let (status, rotated) = call(&m, Method::POST, &format!("{path}/rotate"), &t.token, None).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let second = rotated["secreto"]["valor"].as_str().unwrap().to_owned();
    assert_ne!(first, second);

    // Every other answer about the subscription: no secret value.
    let mut answers = Vec::new();
    answers.push(
        call(&m, Method::GET, "/v1/subscriptions", &t.token, None)
            .await
            .1,
    );
    answers.push(call(&m, Method::GET, &path, &t.token, None).await.1);
    answers.push(
        call(
            &m,
            Method::PATCH,
            &path,
            &t.token,
            Some(json!({"nombre": "n2"})),
        )
        .await
        .1,
    );
    answers.push(
        call(
            &m,
            Method::PATCH,
            &path,
            &t.token,
            Some(json!({"url": "ftp://x.io/"})),
        )
        .await
        .1,
    );
    answers.push(
        call(
            &m,
            Method::PATCH,
            &path,
            &t.token,
            Some(json!({"version_esperada": 1})),
        )
        .await
        .1,
    );
    for answer in &answers {
        let text = answer.to_string();
        for secret in [&first, &second] {
            assert!(!text.contains(secret.as_str()), "{text}");
        }
        assert!(!text.contains("whsec_"), "{text}");
    }

    // The database holds them sealed only.
    let dump = std::process::Command::new("pg_dump")
        .args(["--data-only", &m.db.url])
        .output()
        .expect("pg_dump must be installed");
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let dump = String::from_utf8_lossy(&dump.stdout).into_owned();
    assert!(
        dump.contains(created["secreto"]["key_id"].as_str().unwrap()),
        "the dump has the key rows"
    );
    for secret in [&first, &second] {
        let hex = &secret["whsec_".len()..];
        assert!(!dump.contains(hex), "a secret is in the database dump");
    }
    m.stop().await;

    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(logs.contains("api listening"), "the capture works");
    for secret in [&first, &second] {
        assert!(
            !logs.contains(&secret["whsec_".len()..]),
            "a secret is in the logs"
        );
    }
}

fn hmac_hex(secret: &str, ts: &str, delivery: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{ts}.{delivery}.").as_bytes());
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// The live keys as the delivery engine will load them: from the store,
/// opened with the master key.
async fn engine_keys(m: &TestMotor, id: SubscriptionId) -> Vec<SigningKey> {
    let key = util::config(&m.db, "x").sealing_key().unwrap();
    open_keys(&key, m, id).await
}

async fn open_keys(key: &SealingKey, m: &TestMotor, id: SubscriptionId) -> Vec<SigningKey> {
    motor_store::subscriptions::live_keys(&m.db.pool, id)
        .await
        .unwrap()
        .into_iter()
        .map(|k| {
            SigningKey::open(
                key,
                id.as_uuid(),
                &k.key_id,
                &k.sealed,
                k.creado_en,
                k.vence_en,
            )
            .unwrap()
        })
        .collect()
}

#[tokio::test]
async fn rotation_signs_with_both_keys_newest_first_then_one() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({})).await;
    let id: SubscriptionId = created["suscripcion"]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let (old_id, old) = (
        created["secreto"]["key_id"].as_str().unwrap().to_owned(),
        created["secreto"]["valor"].as_str().unwrap().to_owned(),
    );
    let path = format!("/v1/subscriptions/{id}");

    let (status, rotated) = call(&m, Method::POST, &format!("{path}/rotate"), &t.token, None).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let (new_id, new) = (
        rotated["secreto"]["key_id"].as_str().unwrap().to_owned(),
        rotated["secreto"]["valor"].as_str().unwrap().to_owned(),
    );
    let s = &rotated["suscripcion"];
    assert_eq!(s["version"], 2);
    let claves = s["claves"].as_array().unwrap();
    assert_eq!(claves.len(), 2, "{s}");
    assert_eq!(
        (
            claves[0]["key_id"].as_str().unwrap(),
            claves[1]["key_id"].as_str().unwrap()
        ),
        (new_id.as_str(), old_id.as_str())
    );
    assert_eq!(claves[0]["vence_en"], Value::Null);
    // The old key retires after the default window of 60 minutes.
    let window = ts(&claves[1]["vence_en"]) - ts(&claves[0]["creado_en"]);
    assert!((59..=60).contains(&window.num_minutes()), "{window}");

    // What the engine signs with verifies under either secret.
    let keys = engine_keys(&m, id).await;
    let body = br#"{"schema_version":1,"seq":1}"#;
    let now = motor_domain::time::now_millis();
    let h = signature::sign(&keys, now, "delivery-1", body).unwrap();
    assert_eq!(h.key_ids, format!("{new_id},{old_id}"));
    assert_eq!(
        h.signatures,
        format!(
            "v1={},v1={}",
            hmac_hex(&new, &h.timestamp, "delivery-1", body),
            hmac_hex(&old, &h.timestamp, "delivery-1", body)
        )
    );

    // After the window (moved into the past here) only the new key signs.
    sqlx::query("UPDATE subscription_keys SET vence_en = now() - interval '1 second' WHERE vence_en IS NOT NULL")
        .execute(&m.db.pool)
        .await
        .unwrap();
    let (_, s) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(s["claves"].as_array().unwrap().len(), 1);
    assert_eq!(s["claves"][0]["key_id"], new_id.as_str());
    let keys = engine_keys(&m, id).await;
    let h = signature::sign(&keys, motor_domain::time::now_millis(), "d", body).unwrap();
    assert_eq!(h.key_ids, new_id);
    assert_eq!(
        h.signatures,
        format!("v1={}", hmac_hex(&new, &h.timestamp, "d", body))
    );

    // The window is a setting; rotating again keeps at most two keys.
    let (status, _) = call(
        &m,
        Method::PATCH,
        "/v1/admin/settings",
        ADMIN_TOKEN,
        Some(json!({"webhooks.ventana_rotacion_minutos": 5})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, r2) = call(&m, Method::POST, &format!("{path}/rotate"), &t.token, None).await;
    let (_, r3) = call(&m, Method::POST, &format!("{path}/rotate"), &t.token, None).await;
    let claves = r3["suscripcion"]["claves"].as_array().unwrap();
    assert_eq!(claves.len(), 2, "{r3}");
    assert_eq!(claves[0]["key_id"], r3["secreto"]["key_id"]);
    assert_eq!(claves[1]["key_id"], r2["secreto"]["key_id"]);
    let window = ts(&claves[1]["vence_en"]) - ts(&claves[0]["creado_en"]);
    assert!((4..=5).contains(&window.num_minutes()), "{window}");
    assert_eq!(engine_keys(&m, id).await.len(), 2);
    assert_eq!(r3["suscripcion"]["version"], 4);
    m.stop().await;
}

#[tokio::test]
async fn scopes_guard_every_route() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({})).await;
    let id = created["suscripcion"]["id"].as_str().unwrap().to_owned();
    let weak = key(
        &m.db.pool,
        t.app,
        &["events:write", "events:read", "deliveries:replay"],
        &[],
    )
    .await;
    let routes = [
        (
            Method::POST,
            "/v1/subscriptions".to_owned(),
            Some(json!({"nombre": "n", "url": "http://127.0.0.1/"})),
        ),
        (Method::GET, "/v1/subscriptions".to_owned(), None),
        (Method::GET, format!("/v1/subscriptions/{id}"), None),
        (
            Method::PATCH,
            format!("/v1/subscriptions/{id}"),
            Some(json!({"nombre": "x"})),
        ),
        (Method::DELETE, format!("/v1/subscriptions/{id}"), None),
        (Method::POST, format!("/v1/subscriptions/{id}/rotate"), None),
    ];
    for (method, path, body) in &routes {
        let (status, answer) = call(&m, method.clone(), path, &weak, body.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["code"], "sin_permiso");
        let (status, answer) = call(&m, method.clone(), path, "mtr_not-a-key", body.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path}: {answer}"
        );
        assert_eq!(answer["error"]["code"], "no_autenticado");
        let res = m
            .http
            .request(method.clone(), m.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{method} {path}");
    }
    // Nothing changed.
    let (_, s) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{id}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(
        (s["version"].clone(), s["estado"].clone()),
        (json!(1), json!("activa"))
    );

    // Another app's subscription does not exist for this key.
    let other = m.tenant(1).await;
    for (method, path, body) in &routes[2..] {
        let (status, _) = call(&m, method.clone(), path, &other.token, body.clone()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
    }
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", &other.token, None).await;
    assert_eq!(list["suscripciones"], json!([]));
    m.stop().await;
}

#[tokio::test]
async fn keys_restricted_to_instances_manage_only_theirs() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(3).await;
    let (a, b, c) = (t.instances[0], t.instances[1], t.instances[2]);
    let restricted = key(&m.db.pool, t.app, &["subscriptions:manage"], &[a, b]).await;
    let url = "http://127.0.0.1:9/hook";

    // Must name instances, and only its own.
    let (status, _) = create(&m, &restricted, json!({"nombre": "n", "url": url})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = create(
        &m,
        &restricted,
        json!({"nombre": "n", "url": url, "instancias": [a, c]}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, mine) = create(
        &m,
        &restricted,
        json!({"nombre": "mine", "url": url, "instancias": [b]}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{mine}");
    let mine_path = format!(
        "/v1/subscriptions/{}",
        mine["suscripcion"]["id"].as_str().unwrap()
    );

    // Subscriptions of all instances, or of others, are not its business.
    let all = create_ok(&m, &t, json!({})).await;
    let theirs = create_ok(&m, &t, json!({"instancias": [a, c]})).await;
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", &restricted, None).await;
    let names: Vec<&str> = list["suscripciones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["nombre"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mine"]);
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", &t.token, None).await;
    assert_eq!(list["suscripciones"].as_array().unwrap().len(), 3);
    for foreign in [&all, &theirs] {
        let path = format!(
            "/v1/subscriptions/{}",
            foreign["suscripcion"]["id"].as_str().unwrap()
        );
        for (method, path, body) in [
            (Method::GET, path.clone(), None),
            (Method::PATCH, path.clone(), Some(json!({"nombre": "x"}))),
            (Method::POST, format!("{path}/rotate"), None),
            (Method::DELETE, path.clone(), None),
        ] {
            let (status, answer) = call(&m, method.clone(), &path, &restricted, body).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
        }
    }
    // Its own: it may change it, but not widen it beyond its instances.
    for body in [
        json!({"instancias": []}),
        json!({"instancias": [c]}),
        json!({"instancias": [b, c]}),
    ] {
        let (status, _) = call(
            &m,
            Method::PATCH,
            &mine_path,
            &restricted,
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    }
    let (status, s) = call(
        &m,
        Method::PATCH,
        &mine_path,
        &restricted,
        Some(json!({"instancias": [a, b]})),
    )
    .await;
    assert_eq!(
        (status, s["instancias"].clone()),
        (StatusCode::OK, json!([a, b]))
    );
    let (status, _) = call(
        &m,
        Method::POST,
        &format!("{mine_path}/rotate"),
        &restricted,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(&m, Method::DELETE, &mine_path, &restricted, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
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

#[tokio::test]
async fn suspension_opens_an_alert_and_reactivation_closes_it() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({})).await;
    let id: SubscriptionId = created["suscripcion"]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let path = format!("/v1/subscriptions/{id}");

    // What the delivery engine does on a 401 from the receiver.
    let mut conn = m.db.pool.acquire().await.unwrap();
    assert!(
        motor_store::subscriptions::suspend(&mut conn, id, Motivo::Rechazo401, "http_401")
            .await
            .unwrap()
    );
    assert!(
        !motor_store::subscriptions::suspend(&mut conn, id, Motivo::Rechazo401, "http_401")
            .await
            .unwrap()
    );
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
    motor_store::subscriptions::suspend(&mut conn, id, Motivo::DestinoNoPermitido, "")
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
async fn a_wrong_master_key_fails_at_start_up() {
    let db = util::TestDb::new().await;
    let mut config = util::config(&db, &util::topic_prefix());
    config.master_key = Some("k".repeat(40));
    let (stop, started) = (
        tokio_util::sync::CancellationToken::new(),
        tokio::sync::oneshot::channel(),
    );
    let first = {
        let (config, stop) = (config.clone(), stop.clone());
        tokio::spawn(
            async move { motor::serve::run(config, &[Role::Api], stop, Some(started.0)).await },
        )
    };
    started.1.await.expect("the right key starts");
    stop.cancel();
    first.await.unwrap().unwrap();

    for wrong in [Some("w".repeat(40)), None] {
        config.master_key = wrong;
        let err = motor::serve::run(
            config.clone(),
            &[Role::Api],
            tokio_util::sync::CancellationToken::new(),
            None,
        )
        .await
        .expect_err("a wrong key must not start");
        assert!(format!("{err:#}").contains("MOTOR_MASTER_KEY"), "{err:#}");
    }
    config.master_key = Some("short".into());
    let err = motor::serve::run(
        config,
        &[Role::Api],
        tokio_util::sync::CancellationToken::new(),
        None,
    )
    .await
    .expect_err("a weak key must not start");
    assert!(format!("{err:#}").contains("MOTOR_MASTER_KEY"), "{err:#}");
}

#[tokio::test]
async fn the_operator_manages_an_apps_subscriptions() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let other = m.tenant(1).await;
    let base = format!("/v1/admin/apps/{}/subscriptions", t.app);
    let body = json!({"nombre": "del operador", "url": "http://127.0.0.1:9/hook"});
    let (status, created) = call(&m, Method::POST, &base, ADMIN_TOKEN, Some(body.clone())).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(created["secreto"]["valor"]
        .as_str()
        .unwrap()
        .starts_with("whsec_"));
    assert_eq!(created["suscripcion"]["cliente_id"], json!(t.app));
    let id = created["suscripcion"]["id"].as_str().unwrap().to_owned();
    let one = format!("{base}/{id}");

    // The app's own key sees the same subscription.
    let (_, mine) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{id}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(mine, created["suscripcion"]);
    let (_, listed) = call(&m, Method::GET, &base, ADMIN_TOKEN, None).await;
    assert_eq!(listed["suscripciones"].as_array().unwrap().len(), 1);

    let (status, s) = call(
        &m,
        Method::PATCH,
        &one,
        ADMIN_TOKEN,
        Some(json!({"estado": "pausada", "version_esperada": 1})),
    )
    .await;
    assert_eq!(
        (status, s["estado"].clone()),
        (StatusCode::OK, json!("pausada"))
    );
    let (status, r) = call(
        &m,
        Method::POST,
        &format!("{one}/rotate"),
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert_eq!(
        (status, r["suscripcion"]["claves"].as_array().unwrap().len()),
        (StatusCode::OK, 2)
    );
    let (status, tested) = call(&m, Method::POST, &format!("{one}/test"), ADMIN_TOKEN, None).await;
    assert_eq!(
        (status, tested["ok"].clone()),
        (StatusCode::OK, json!(false))
    );
    assert_field(
        &call(
            &m,
            Method::POST,
            &base,
            ADMIN_TOKEN,
            Some(json!({"nombre": "n", "url": "ftp://x.io/"})),
        )
        .await,
        "body.url",
    );

    // Another app's path does not reach it; an API key is not the operator.
    let elsewhere = format!("/v1/admin/apps/{}/subscriptions/{id}", other.app);
    assert_eq!(
        call(&m, Method::GET, &elsewhere, ADMIN_TOKEN, None).await.0,
        StatusCode::NOT_FOUND
    );
    let missing_app = format!("/v1/admin/apps/{}/subscriptions", InstanceId::new());
    assert_eq!(
        call(&m, Method::GET, &missing_app, ADMIN_TOKEN, None)
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        call(&m, Method::POST, &missing_app, ADMIN_TOKEN, Some(body))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        call(&m, Method::GET, &one, &t.token, None).await.0,
        StatusCode::UNAUTHORIZED
    );

    let (status, _) = call(&m, Method::DELETE, &one, ADMIN_TOKEN, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, s) = call(&m, Method::GET, &one, ADMIN_TOKEN, None).await;
    assert_eq!(s["estado"], "eliminada");
    m.stop().await;
}
