//! One real answer per route and the OpenAPI document, compared with the
//! fixtures under `snapshots/` so a refactoring of the API proves it changed
//! no answer. Volatile parts (ids, timestamps, secrets, tokens, durations)
//! are replaced by numbered placeholders; everything else is byte for byte.
//! Rewrite the fixtures with `MOTOR_UPDATE_SNAPSHOTS=1 cargo test -p
//! motor-system-tests --test it snapshots`.

use std::{collections::HashMap, fmt::Write, path::PathBuf};

use motor::serve::Role;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::util::{TestMotor, ADMIN_TOKEN};

fn fixture(name: &str) -> PathBuf {
    crate::util::manifest_dir()
        .join("tests/it/snapshots")
        .join(name)
}

fn updating() -> bool {
    std::env::var_os("MOTOR_UPDATE_SNAPSHOTS").is_some()
}

/// Replaces volatile strings with placeholders numbered by first
/// appearance, so that two answers naming the same id still agree.
#[derive(Default)]
struct Normaliser {
    seen: HashMap<String, String>,
    counts: HashMap<&'static str, usize>,
}

impl Normaliser {
    fn kind(s: &str) -> Option<&'static str> {
        let b = s.as_bytes();
        let uuid = b.len() == 36
            && b.iter().enumerate().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => *c == b'-',
                _ => c.is_ascii_hexdigit(),
            });
        if uuid {
            Some("uuid")
        } else if chrono::DateTime::parse_from_rfc3339(s).is_ok() {
            Some("time")
        } else if s.starts_with("whsec_") {
            Some("secret")
        } else if s.starts_with("mtr_") {
            Some("token")
        } else if s.starts_with("key_") && s.len() == 20 {
            Some("key_id")
        } else if s.starts_with("whk_") {
            Some("signing_key")
        } else {
            None
        }
    }

    fn placeholder(&mut self, kind: &'static str, value: &str) -> String {
        if let Some(p) = self.seen.get(value) {
            return p.clone();
        }
        let n = self.counts.entry(kind).or_default();
        *n += 1;
        let p = format!("<{kind}:{n}>");
        self.seen.insert(value.to_owned(), p.clone());
        p
    }

    /// Collects the volatile strings (and durations) of `value` into
    /// `(raw, placeholder)` pairs.
    fn collect(&mut self, value: &Value, key: Option<&str>, out: &mut Vec<(String, String)>) {
        match value {
            Value::String(s) => {
                if let Some(kind) = Self::kind(s) {
                    let raw = serde_json::to_string(s).unwrap();
                    let p = format!("\"{}\"", self.placeholder(kind, s));
                    out.push((raw, p));
                }
            }
            Value::Number(n) if key.is_some_and(|k| k.ends_with("_ms")) => {
                let k = key.unwrap();
                out.push((format!("\"{k}\":{n}"), format!("\"{k}\":<ms>")));
            }
            Value::Array(items) => {
                for v in items {
                    self.collect(v, None, out);
                }
            }
            Value::Object(map) => {
                for (k, v) in map {
                    self.collect(v, Some(k), out);
                }
            }
            _ => {}
        }
    }

    /// Also replaces ids that appear inside other strings (paths, URLs).
    fn text(&mut self, text: &str) -> String {
        let mut out = text.to_owned();
        if let Ok(value) = serde_json::from_str::<Value>(text) {
            let mut pairs = Vec::new();
            self.collect(&value, None, &mut pairs);
            for (raw, p) in pairs {
                out = out.replace(&raw, &p);
            }
        }
        for (raw, p) in &self.seen {
            out = out.replace(raw, p.as_str());
        }
        out
    }
}

struct Recorder<'a> {
    m: &'a TestMotor,
    norm: Normaliser,
    out: String,
}

impl Recorder<'_> {
    /// Calls one route and records its status and normalised body; answers
    /// the body as JSON (`Null` when it is not JSON).
    async fn call(
        &mut self,
        method: Method,
        path: &str,
        token: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.m.http.request(method.clone(), self.m.url(path));
        if !token.is_empty() {
            req = req.bearer_auth(token);
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        if let Some(body) = &body {
            req = req.json(body);
        }
        let res = req.send().await.unwrap();
        let status = res.status();
        let content_type = res
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let text = res.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        let shown = if path == "/metrics" || path == "/v1/openapi.json" {
            // Counters move; the document has its own fixture.
            "<not compared here>".to_owned()
        } else {
            self.norm.text(&text)
        };
        let path = self.norm.text(path);
        writeln!(
            self.out,
            "### {method} {path}\n{status} {content_type}\n{shown}\n"
        )
        .unwrap();
        (status, json)
    }
}

fn compare(file: &str, actual: &str) {
    let path = fixture(file);
    if updating() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("no fixture {}; generate it", path.display()));
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{file} differs from the recorded answers at line {}:\n  recorded: {:?}\n  answered: {:?}\n\
             (rewrite with MOTOR_UPDATE_SNAPSHOTS=1 if the change is intended)",
            first + 1,
            expected.lines().nth(first),
            actual.lines().nth(first),
        );
    }
}

/// The OpenAPI document means the same as the recorded one: equal as JSON
/// (object keys in any order).
#[test]
fn the_openapi_document_is_the_recorded_one() {
    let doc: Value = serde_json::from_str(&motor_api::openapi_json()).unwrap();
    let path = fixture("openapi.json");
    if updating() {
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
        return;
    }
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(
        recorded == doc,
        "the OpenAPI document differs from {}",
        path.display()
    );
}

#[tokio::test]
async fn every_route_answers_as_recorded() {
    let m = TestMotor::start(&[Role::Api]).await;
    let mut r = Recorder {
        m: &m,
        norm: Normaliser::default(),
        out: String::new(),
    };
    let admin = ADMIN_TOKEN;
    use Method as M;

    r.call(M::GET, "/healthz", "", &[], None).await;
    r.call(M::GET, "/readyz", "", &[], None).await;
    r.call(M::GET, "/metrics", "", &[], None).await;
    r.call(M::GET, "/v1/openapi.json", "", &[], None).await;

    // Apps, instances, keys, event types.
    let (_, app) = r
        .call(
            M::POST,
            "/v1/admin/apps",
            admin,
            &[],
            Some(json!({"nombre": "a", "destinos_permitidos": ["127.0.0.1"]})),
        )
        .await;
    let app_id = app["id"].as_str().unwrap().to_owned();
    let apps = format!("/v1/admin/apps/{app_id}");
    r.call(M::GET, "/v1/admin/apps", admin, &[], None).await;
    r.call(M::GET, &apps, admin, &[], None).await;
    r.call(
        M::PATCH,
        &apps,
        admin,
        &[],
        Some(json!({"nombre": "b", "destinos_permitidos": ["127.0.0.1", "localhost"]})),
    )
    .await;
    let (_, instance) = r
        .call(
            M::POST,
            &format!("{apps}/instances"),
            admin,
            &[],
            Some(json!({"nombre": "i"})),
        )
        .await;
    let instance_id = instance["id"].as_str().unwrap().to_owned();
    r.call(M::GET, &format!("{apps}/instances"), admin, &[], None)
        .await;
    r.call(
        M::PUT,
        &format!("{apps}/event-types"),
        admin,
        &[],
        Some(json!({"tipos": ["t", "u"]})),
    )
    .await;
    r.call(M::GET, &format!("{apps}/event-types"), admin, &[], None)
        .await;
    let scopes = json!([
        "events:write",
        "events:read",
        "subscriptions:manage",
        "deliveries:replay"
    ]);
    let (_, key) = r
        .call(
            M::POST,
            &format!("{apps}/keys"),
            admin,
            &[],
            Some(json!({"nombre": "k", "scopes": scopes})),
        )
        .await;
    let token = key["token"].as_str().unwrap().to_owned();
    let token = token.as_str();
    let (_, spare) = r
        .call(
            M::POST,
            &format!("{apps}/keys"),
            admin,
            &[],
            Some(
                json!({"nombre": "spare", "scopes": ["events:read"], "instancias": [instance_id]}),
            ),
        )
        .await;
    r.call(
        M::DELETE,
        &format!("{apps}/keys/{}", spare["key_id"].as_str().unwrap()),
        admin,
        &[],
        None,
    )
    .await;
    r.call(M::GET, &format!("{apps}/keys"), admin, &[], None)
        .await;

    // Subscriptions (producer side).
    let (_, created) = r
        .call(
            M::POST,
            "/v1/subscriptions",
            token,
            &[],
            Some(json!({"nombre": "s", "url": "http://127.0.0.1:9/", "tipos": ["t"]})),
        )
        .await;
    let sub_id = created["suscripcion"]["id"].as_str().unwrap().to_owned();
    let sub = format!("/v1/subscriptions/{sub_id}");
    r.call(M::GET, "/v1/subscriptions", token, &[], None).await;
    r.call(M::GET, &sub, token, &[], None).await;
    r.call(
        M::PATCH,
        &sub,
        token,
        &[],
        Some(json!({"nombre": "s2", "tipos": ["t", "u"]})),
    )
    .await;
    r.call(M::POST, &format!("{sub}/rotate"), token, &[], None)
        .await;
    r.call(M::POST, &format!("{sub}/test"), token, &[], None)
        .await;

    // Events and the ledger.
    let events = format!("/v1/instances/{instance_id}/events");
    r.call(
        M::POST,
        &events,
        token,
        &[],
        Some(json!({"type": "t", "data": {"a": 1}, "command_id": "c"})),
    )
    .await;
    r.call(
        M::POST,
        &events,
        token,
        &[],
        Some(json!([{"type": "u", "data": 2, "occurred_at": "2026-01-02T03:04:05Z"}])),
    )
    .await;
    r.call(
        M::GET,
        &format!("{events}?desde=0&limite=10"),
        token,
        &[],
        None,
    )
    .await;
    r.call(
        M::GET,
        &format!("{events}/stream?desde=x"),
        token,
        &[],
        None,
    )
    .await;

    // Deliveries.
    let (_, deliveries) = r.call(M::GET, "/v1/deliveries", token, &[], None).await;
    let delivery_id = deliveries["entregas"][0]["delivery_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no delivery in {deliveries}"))
        .to_owned();
    r.call(
        M::GET,
        &format!("/v1/deliveries/{delivery_id}"),
        token,
        &[],
        None,
    )
    .await;
    r.call(
        M::POST,
        &format!("/v1/deliveries/{delivery_id}/retry"),
        token,
        &[("Idempotency-Key", "retry-1")],
        None,
    )
    .await;
    r.call(
        M::POST,
        &format!("{sub}/replays"),
        token,
        &[("Idempotency-Key", "replay-1")],
        Some(json!({"instancia_id": instance_id, "desde_seq": 2, "hasta_seq": 2, "motivo": "m"})),
    )
    .await;

    // Subscriptions (operator side).
    let admin_subs = format!("{apps}/subscriptions");
    let (_, other) = r
        .call(
            M::POST,
            &admin_subs,
            admin,
            &[],
            Some(json!({"nombre": "o", "url": "http://127.0.0.1:9/o"})),
        )
        .await;
    let other_id = other["suscripcion"]["id"].as_str().unwrap().to_owned();
    let other = format!("{admin_subs}/{other_id}");
    r.call(M::GET, &admin_subs, admin, &[], None).await;
    r.call(M::GET, &other, admin, &[], None).await;
    r.call(
        M::PATCH,
        &other,
        admin,
        &[],
        Some(json!({"estado": "pausada"})),
    )
    .await;
    r.call(M::POST, &format!("{other}/rotate"), admin, &[], None)
        .await;
    r.call(M::POST, &format!("{other}/test"), admin, &[], None)
        .await;
    r.call(
        M::POST,
        &format!("{other}/replays"),
        admin,
        &[("Idempotency-Key", "replay-2")],
        Some(json!({"instancia_id": instance_id, "desde_seq": 1, "hasta_seq": 1, "motivo": "m"})),
    )
    .await;

    // Operator views and actions.
    r.call(M::GET, "/v1/admin/deliveries", admin, &[], None)
        .await;
    r.call(
        M::GET,
        &format!("/v1/admin/deliveries/{delivery_id}"),
        admin,
        &[],
        None,
    )
    .await;
    r.call(M::GET, "/v1/admin/dlq", admin, &[], None).await;
    r.call(
        M::POST,
        "/v1/admin/dlq/retry",
        admin,
        &[("Idempotency-Key", "dlq-1")],
        Some(json!({"suscripcion_id": sub_id, "motivo": "m"})),
    )
    .await;
    r.call(
        M::POST,
        &format!("/v1/admin/subscriptions/{sub_id}/pause"),
        admin,
        &[],
        None,
    )
    .await;
    r.call(
        M::POST,
        &format!("/v1/admin/subscriptions/{sub_id}/reactivate"),
        admin,
        &[],
        None,
    )
    .await;
    r.call(M::GET, "/v1/admin/reconciliacion", admin, &[], None)
        .await;
    r.call(M::GET, "/v1/admin/settings", admin, &[], None).await;
    r.call(
        M::PATCH,
        "/v1/admin/settings",
        admin,
        &[],
        Some(json!({"webhooks.timeout_segundos": 7})),
    )
    .await;
    r.call(M::GET, "/v1/admin/alerts", admin, &[], None).await;
    r.call(M::POST, "/v1/admin/alerts/1/close", admin, &[], None)
        .await;

    // Deletions last, then a few error answers.
    r.call(M::DELETE, &other, admin, &[], None).await;
    r.call(M::DELETE, &sub, token, &[], None).await;
    r.call(M::GET, &sub, token, &[], None).await;
    r.call(
        M::POST,
        "/v1/subscriptions",
        token,
        &[],
        Some(json!({"nombre": ""})),
    )
    .await;
    r.call(M::GET, "/v1/subscriptions", "mtr_wrong", &[], None)
        .await;
    r.call(M::GET, "/v1/nowhere", token, &[], None).await;

    // Commands, last: what they append to the ledger changes no answer
    // above.
    let (_, key) = r
        .call(
            M::POST,
            &format!("{apps}/keys"),
            admin,
            &[],
            Some(json!({"nombre": "c", "scopes": ["commands:write", "commands:read"]})),
        )
        .await;
    let commands_token = key["token"].as_str().unwrap().to_owned();
    let ct = commands_token.as_str();
    let (_, sent) = r
        .call(
            M::POST,
            &format!("/v1/instances/{instance_id}/messages"),
            ct,
            &[("Idempotency-Key", "cmd-1")],
            Some(json!({"chat": "549", "contenido": {"texto": "hola"}, "correlation_id": "c"})),
        )
        .await;
    let command_id = sent["id"].as_str().unwrap().to_owned();
    let (_, op) = r
        .call(
            M::POST,
            &format!("/v1/instances/{instance_id}/commands"),
            ct,
            &[],
            Some(json!({"tipo": "grupos", "parametros": {"operacion": "unirse"}})),
        )
        .await;
    r.call(M::GET, &format!("/v1/commands/{command_id}"), ct, &[], None)
        .await;
    r.call(
        M::GET,
        &format!("/v1/instances/{instance_id}/commands?status=en_cola"),
        ct,
        &[],
        None,
    )
    .await;
    r.call(
        M::POST,
        &format!("/v1/commands/{}/cancel", op["id"].as_str().unwrap()),
        ct,
        &[],
        None,
    )
    .await;
    r.call(
        M::POST,
        &format!("/v1/instances/{instance_id}/messages"),
        ct,
        &[],
        Some(json!({"chat": "549", "contenido": {}})),
    )
    .await;

    let out = std::mem::take(&mut r.out);
    drop(r);
    m.stop().await;
    compare("answers.txt", &out);
}
