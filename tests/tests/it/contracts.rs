//! Contracts (`contrato`, docs/CONTRACTS.md) end to end: chosen per app and
//! per subscription, refused by name; deliveries under `visito` and
//! `asixto` received by receivers written from each product's document
//! alone (`contracts/*.py`, real processes on loopback) across a secret
//! rotation, an Asixto replay and a Visito manual retry; and a short
//! stand-in ladder whose attempts land at its offsets, kept by a delivery
//! whose subscription changes contract mid-way.

use std::{
    collections::{BTreeSet, HashMap},
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{extract::State, http::StatusCode as AxumStatus, routing, Router};
use chrono::{DateTime, Utc};
use motor::serve::Role;
use motor_domain::{contract::Ladder, subscription::SubscriptionId};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::{
    deliveries::post,
    dispatch::{rotate, states, wait_state},
    replays::replay_ok,
    subscriptions::{assert_field, call, create, create_ok, sub_id},
    util::{serve_loopback, Tenant, TestDb, TestMotor, ADMIN_TOKEN, ALL_ROLES},
};

mod environments;
mod long_waits;

const WAIT: Duration = Duration::from_secs(90);

/// A receiver from `contracts/<file>`, run by `python3`; killed when
/// dropped.
struct Receiver {
    child: Child,
    base: String,
    http: reqwest::Client,
}

impl Receiver {
    fn start(file: &str) -> Self {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/it/contracts")
            .join(file);
        let mut child = Command::new("python3")
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line.trim().parse().expect("the receiver prints its port");
        Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        }
    }

    fn url(&self) -> String {
        format!("{}/hook", self.base)
    }

    async fn control(&self, path: &str, body: Value) {
        let res = self
            .http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{path}: {}", res.status());
    }

    async fn log(&self) -> Value {
        self.http
            .get(format!("{}/_registro", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Waits until the receiver has accepted `n` deliveries; one it
    /// refused fails at once.
    async fn wait_accepted(&self, n: usize) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let log = self.log().await;
            assert_eq!(log["rechazadas"], json!([]), "the receiver refused");
            if log["aceptadas"].as_array().unwrap().len() >= n {
                return log;
            }
            assert!(Instant::now() < deadline, "waiting for {n} accepted: {log}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn secret(answer: &Value) -> String {
    answer["valor"].as_str().unwrap().to_owned()
}

/// `n` events on each instance of the tenant, tagged.
async fn post_events(m: &TestMotor, t: &Tenant, n: usize, tag: &str) {
    for instance in &t.instances {
        let events: Vec<Value> = (0..n)
            .map(|i| json!({"type": "job.succeeded", "data": {"tag": tag, "i": i}}))
            .collect();
        post(m, t, *instance, Value::Array(events)).await;
    }
}

/// The event ids of a subscription's live deliveries.
async fn live_event_ids(m: &TestMotor, sub: SubscriptionId) -> BTreeSet<String> {
    let rows: Vec<(Uuid,)> = sqlx::query_as(
        "SELECT event_id FROM deliveries WHERE subscription_id = $1 AND lane = 'live'",
    )
    .bind(sub.as_uuid())
    .fetch_all(&m.db.pool)
    .await
    .unwrap();
    rows.into_iter().map(|(e,)| e.to_string()).collect()
}

#[tokio::test]
async fn contrato_is_chosen_per_app_and_subscription_and_refused_by_name() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;

    // The default is motor, left out of the answer as before.
    let plain = create_ok(&m, &t, json!({})).await;
    assert!(plain["suscripcion"].get("contrato").is_none(), "{plain}");
    // Each contract by its wire name, shown after `firma`.
    for c in ["visito", "asixto", "standard-webhooks", "motor"] {
        let created = create_ok(&m, &t, json!({"contrato": c})).await;
        let shown = created["suscripcion"].get("contrato").cloned();
        assert_eq!(shown, (c != "motor").then(|| json!(c)), "{created}");
    }
    // Anything else is a 422 naming body.contrato.
    for bad in [
        json!(""),
        json!("Visito"),
        json!("stripe"),
        json!("standard_webhooks"),
        json!(5),
        json!(null),
    ] {
        if bad.is_null() {
            // null is absent: the app's contract.
            create_ok(&m, &t, json!({"contrato": bad})).await;
            continue;
        }
        assert_field(
            &create(
                &m,
                &t.token,
                json!({"nombre": "n", "url": "http://127.0.0.1:9/hook", "contrato": bad}),
            )
            .await,
            "body.contrato",
        );
    }

    // PATCH changes it (a new version) and GET shows it.
    let id = sub_id(&plain);
    let path = format!("/v1/subscriptions/{id}");
    let (status, patched) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"contrato": "asixto"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(
        (patched["contrato"].clone(), patched["version"].clone()),
        (json!("asixto"), json!(2))
    );
    let (_, got) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(got["contrato"], "asixto");
    assert_field(
        &call(
            &m,
            Method::PATCH,
            &path,
            &t.token,
            Some(json!({"contrato": "x"})),
        )
        .await,
        "body.contrato",
    );

    // The app's contract is the default of subscriptions created after;
    // existing ones keep theirs.
    let app_path = format!("/v1/admin/apps/{}", t.app);
    let (status, app) = call(
        &m,
        Method::PATCH,
        &app_path,
        ADMIN_TOKEN,
        Some(json!({"contrato": "visito"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{app}");
    assert_eq!(app["contrato"], "visito");
    assert_field(
        &call(
            &m,
            Method::PATCH,
            &app_path,
            ADMIN_TOKEN,
            Some(json!({"contrato": "x"})),
        )
        .await,
        "body.contrato",
    );
    let inherited = create_ok(&m, &t, json!({})).await;
    assert_eq!(inherited["suscripcion"]["contrato"], "visito");
    let own = create_ok(&m, &t, json!({"contrato": "motor"})).await;
    assert!(own["suscripcion"].get("contrato").is_none(), "{own}");
    let (_, got) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(got["contrato"], "asixto", "kept its own");
    let (status, app) = call(
        &m,
        Method::POST,
        "/v1/admin/apps",
        ADMIN_TOKEN,
        Some(json!({"nombre": "b", "contrato": "asixto"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{app}");
    assert_eq!(app["contrato"], "asixto");
    m.stop().await;
}

/// An Asixto receiver from seed 003 takes every delivery across a
/// rotation — knowing only the old secret while both sign, then only the
/// new — and a replay of three of them as new deliveries (new `id`,
/// `replay_of` the first `id`), dropping nothing it should keep.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_asixto_receiver_from_its_document_takes_every_delivery_and_a_replay() {
    let m = crate::dispatch::motor(None).await;
    let t = m.tenant(2).await;
    // The app's contract, so the subscription names none.
    let (status, _) = call(
        &m,
        Method::PATCH,
        &format!("/v1/admin/apps/{}", t.app),
        ADMIN_TOKEN,
        Some(json!({"contrato": "asixto"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let r = Receiver::start("asixto_receiver.py");
    let created = create_ok(&m, &t, json!({"url": r.url()})).await;
    assert_eq!(created["suscripcion"]["contrato"], "asixto");
    let sub = sub_id(&created);
    let old = secret(&created["secreto"]);
    r.control("/_secretos", json!({"secretos": [old]})).await;

    post_events(&m, &t, 15, "before").await;
    r.wait_accepted(30).await;
    wait_state(&m, sub, "entregada", 30).await;

    // Rotation: both secrets sign ("una firma v1= por cada secreto
    // activo"); a receiver still on the old one takes them, then one on
    // the new one only.
    let new = secret(&rotate(&m, &t, sub).await);
    post_events(&m, &t, 10, "rotating, old secret").await;
    r.wait_accepted(50).await;
    r.control("/_secretos", json!({"secretos": [new]})).await;
    post_events(&m, &t, 10, "rotating, new secret").await;
    r.wait_accepted(70).await;
    wait_state(&m, sub, "entregada", 70).await;

    // A replay of three events: new deliveries with a new id each.
    let log = r.log().await;
    let firsts: Vec<Value> = log["aceptadas"].as_array().unwrap().clone();
    let replayed: Vec<String> = firsts[..3]
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    replay_ok(
        &m,
        &t,
        sub,
        json!({"event_ids": replayed, "motivo": "the receiver's bug is fixed"}),
    )
    .await;
    let log = r.wait_accepted(73).await;
    wait_state(&m, sub, "entregada", 73).await;

    let accepted = log["aceptadas"].as_array().unwrap();
    assert_eq!(accepted.len(), 73, "{log}");
    assert_eq!(log["duplicadas"], json!([]), "nothing sent twice: {log}");
    // A first delivery's id is the event's: every event once.
    let (live, replays): (Vec<&Value>, Vec<&Value>) =
        accepted.iter().partition(|e| e.get("replay_of").is_none());
    let ids: BTreeSet<String> = live
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, live_event_ids(&m, sub).await);
    for e in &live {
        assert_eq!(e["environment"], "live");
        assert_eq!(e["type"], "job.succeeded");
        assert!(e["created"].as_i64().unwrap() > 1_700_000_000, "{e}");
    }
    // A replay: a new id (its delivery's), replay_of the first id, the
    // same created and data.
    let replay_rows: Vec<(Uuid, Uuid)> = sqlx::query_as(
        "SELECT id, event_id FROM deliveries WHERE subscription_id = $1 AND lane <> 'live'",
    )
    .bind(sub.as_uuid())
    .fetch_all(&m.db.pool)
    .await
    .unwrap();
    let replay_ids: HashMap<String, String> = replay_rows
        .iter()
        .map(|(d, e)| (d.to_string(), e.to_string()))
        .collect();
    assert_eq!(replays.len(), 3);
    for e in &replays {
        let id = e["id"].as_str().unwrap();
        let of = e["replay_of"].as_str().unwrap();
        assert_ne!(id, of);
        assert_eq!(replay_ids.get(id).map(String::as_str), Some(of), "{e}");
        let first = live
            .iter()
            .find(|f| f["id"] == of)
            .expect("replays a first");
        assert_eq!(
            (&e["created"], &e["data"]),
            (&first["created"], &first["data"])
        );
    }
    let of: BTreeSet<&str> = replays
        .iter()
        .map(|e| e["replay_of"].as_str().unwrap())
        .collect();
    assert_eq!(of, replayed.iter().map(String::as_str).collect());
    m.stop().await;
}

/// A Visito receiver from seed 001 takes every delivery across a rotation
/// that "applies at once" (it knows only the new secret from then on), and
/// a manual retry of a failed delivery carries the same `eventId`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_visito_receiver_from_its_document_takes_every_delivery_and_a_manual_retry() {
    let stand_in = Ladder::parse_stand_in("visito@1=300,600;simetrica=0;intentos=3").unwrap();
    let m = TestMotor::start_configured(TestDb::new().await, &ALL_ROLES, |c| {
        c.retry_schedule_ms = Some(vec![200, 400, 600, 800, 1000, 1200]);
        c.test_ladders = vec![stand_in];
    })
    .await;
    let t = m.tenant(2).await;
    let r = Receiver::start("visito_receiver.py");
    let created = create_ok(&m, &t, json!({"url": r.url(), "contrato": "visito"})).await;
    assert_eq!(created["suscripcion"]["contrato"], "visito");
    let sub = sub_id(&created);
    r.control("/_secreto", json!({"secreto": secret(&created["secreto"])}))
        .await;

    post_events(&m, &t, 10, "before").await;
    r.wait_accepted(20).await;
    wait_state(&m, sub, "entregada", 20).await;

    // "La rotación del secreto aplica inmediatamente a futuros intentos":
    // the receiver swaps to the new secret at once, and every delivery
    // after verifies with it alone.
    let new = secret(&rotate(&m, &t, sub).await);
    r.control("/_secreto", json!({"secreto": new})).await;
    post_events(&m, &t, 10, "after").await;
    r.wait_accepted(40).await;
    wait_state(&m, sub, "entregada", 40).await;

    // A delivery the receiver fails three times ends fallida (the
    // stand-in ladder); retried by hand once it is fixed, it arrives with
    // the same eventId and is taken once.
    r.control("/_roto", json!({"roto": true})).await;
    post(
        &m,
        &t,
        t.instances[0],
        json!([{"type": "message.created", "data": {"fallar": true}}]),
    )
    .await;
    wait_state(&m, sub, "fallida", 1).await;
    r.control("/_roto", json!({"roto": false})).await;
    let (failed, event): (Uuid, Uuid) = sqlx::query_as(
        "SELECT id, event_id FROM deliveries WHERE subscription_id = $1 AND estado = 'fallida'",
    )
    .bind(sub.as_uuid())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    let res = m
        .http
        .post(m.url(&format!("/v1/deliveries/{failed}/retry")))
        .bearer_auth(&t.token)
        .header("Idempotency-Key", Uuid::new_v4().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::ACCEPTED,
        "{}",
        res.text().await.unwrap()
    );
    let log = r.wait_accepted(41).await;
    wait_state(&m, sub, "entregada", 41).await;

    let accepted = log["aceptadas"].as_array().unwrap();
    assert_eq!(accepted.len(), 41, "{log}");
    assert_eq!(log["duplicadas"], json!([]), "{log}");
    let requests: Vec<&str> = log["solicitudes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    let event = event.to_string();
    assert_eq!(
        requests.iter().filter(|e| **e == event).count(),
        4,
        "three failed attempts and the retry, all with the same eventId"
    );
    let ids: BTreeSet<String> = accepted
        .iter()
        .map(|e| e["eventId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, live_event_ids(&m, sub).await);
    for e in accepted {
        assert_eq!(e["tenantId"], t.app.to_string());
        assert_eq!(e["schemaVersion"], "1.0");
    }
    m.stop().await;
}

/// When each request reached the receiver, by path.
#[derive(Clone, Default)]
struct Arrivals(Arc<Mutex<HashMap<String, Vec<DateTime<Utc>>>>>);

/// A short stand-in for `visito@1` (400 ms, 800 ms, 1.6 s; exact; four
/// attempts) end to end: a receiver failing three times sees the fourth
/// attempt delivered, one failing always sees four and the delivery
/// `fallida`, each attempt at the ladder's offset — and the second
/// subscription, moved to `motor` after its first failure, keeps the
/// ladder its delivery started with.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_short_ladder_lands_its_attempts_at_its_offsets_and_is_kept() {
    let stand_in = Ladder::parse_stand_in("visito@1=400,800,1600;simetrica=0;intentos=4").unwrap();
    let m = TestMotor::start_configured(TestDb::new().await, &ALL_ROLES, |c| {
        c.test_ladders = vec![stand_in];
    })
    .await;
    let t = m.tenant(1).await;
    let arrivals = Arrivals::default();
    let app = Router::new()
        .route(
            "/{which}",
            routing::post(
                |State(a): State<Arrivals>,
                 axum::extract::Path(which): axum::extract::Path<String>| async move {
                    let mut seen = a.0.lock().unwrap();
                    let times = seen.entry(which.clone()).or_default();
                    times.push(Utc::now());
                    let fails = match which.as_str() {
                        "calentar" => 1,
                        "tres" => 3,
                        _ => usize::MAX,
                    };
                    if times.len() > fails {
                        AxumStatus::OK
                    } else {
                        AxumStatus::SERVICE_UNAVAILABLE
                    }
                },
            ),
        )
        .with_state(arrivals.clone());
    let addr = serve_loopback(app).await;
    // The retry consumer's first fetch comes seconds after start (it joins
    // its group): one retry through it first, then the measured ones.
    let warm = sub_id(
        &create_ok(
            &m,
            &t,
            json!({"url": format!("http://{addr}/calentar"), "contrato": "visito"}),
        )
        .await,
    );
    post(&m, &t, t.instances[0], json!([{"type": "t", "data": {}}])).await;
    wait_state(&m, warm, "entregada", 1).await;
    let three = sub_id(
        &create_ok(
            &m,
            &t,
            json!({"url": format!("http://{addr}/tres"), "contrato": "visito"}),
        )
        .await,
    );
    let always = sub_id(
        &create_ok(
            &m,
            &t,
            json!({"url": format!("http://{addr}/siempre"), "contrato": "visito"}),
        )
        .await,
    );
    post(&m, &t, t.instances[0], json!([{"type": "t", "data": {}}])).await;

    // After its first failure, `always` moves to motor (1 s, 5 s, 30 s…,
    // 72 h): its delivery keeps visito@1 and still ends after four.
    let deadline = Instant::now() + WAIT;
    while attempts(&m, always).await.is_empty() {
        assert!(Instant::now() < deadline, "no first attempt");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, _) = call(
        &m,
        Method::PATCH,
        &format!("/v1/subscriptions/{always}"),
        &t.token,
        Some(json!({"contrato": "motor"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    wait_state(&m, three, "entregada", 1).await;
    wait_state(&m, always, "fallida", 1).await;
    assert_eq!(states(&m, always).await.len(), 1, "nothing else");
    let nominal = [400, 800, 1600];
    for (sub, statuses) in [
        (three, vec![Some(503), Some(503), Some(503), Some(200)]),
        (always, vec![Some(503); 4]),
    ] {
        let rows = attempts(&m, sub).await;
        assert_eq!(
            rows.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
            statuses,
            "{sub}"
        );
        for (n, pair) in rows.windows(2).enumerate() {
            let gap = (pair[1].0 - pair[0].0).num_milliseconds();
            // Never before its due time (now + the wait, after the attempt
            // before ended); late by at most the tier's fetch and a loaded
            // machine.
            assert!(
                gap >= nominal[n] && gap <= nominal[n] + 2_500,
                "{sub}: wait {} was {gap} ms, the ladder says {} ms",
                n + 1,
                nominal[n]
            );
        }
        let (ladder, error): (Option<String>, Option<String>) = sqlx::query_as(
            "SELECT escalera, ultimo_error FROM deliveries WHERE subscription_id = $1",
        )
        .bind(sub.as_uuid())
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
        assert_eq!(ladder.as_deref(), Some("visito@1"));
        if sub == always {
            assert_eq!(error.as_deref(), Some("http_503_agotada"));
        }
    }
    // The receiver saw exactly those attempts.
    let seen = arrivals.0.lock().unwrap().clone();
    assert_eq!(seen["tres"].len(), 4);
    assert_eq!(seen["siempre"].len(), 4);
    m.stop().await;
}

/// A subscription's attempts (its one delivery's): start time and status.
async fn attempts(m: &TestMotor, sub: SubscriptionId) -> Vec<(DateTime<Utc>, Option<i32>)> {
    sqlx::query_as(
        "SELECT a.iniciado_en, a.status FROM delivery_attempts a
         JOIN deliveries d ON d.id = a.delivery_id
         WHERE d.subscription_id = $1 ORDER BY a.numero",
    )
    .bind(sub.as_uuid())
    .fetch_all(&m.db.pool)
    .await
    .unwrap()
}

/// `POST /v1/subscriptions/{id}/check` grades a subscription under its own
/// contract, with nothing to choose: the Visito and Asixto receivers this
/// file delivers to pass the battery rendered as their deliveries are
/// (`perfil` names the contract; Visito's battery has no second-signature
/// nor repeated-header check), and a Visito receiver behind an `asixto`
/// subscription fails it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_check_route_grades_a_subscription_under_its_contract() {
    let m = crate::dispatch::motor(None).await;
    let t = m.tenant(1).await;
    let check = |sub: SubscriptionId| {
        let m = &m;
        let t = &t;
        async move {
            let (status, report) = call(
                m,
                Method::POST,
                &format!("/v1/subscriptions/{sub}/check"),
                &t.token,
                None,
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{report}");
            report
        }
    };
    let names = |report: &Value| -> Vec<String> {
        report["comprobaciones"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["nombre"].as_str().unwrap().to_owned())
            .collect()
    };

    let visito = Receiver::start("visito_receiver.py");
    let created = create_ok(&m, &t, json!({"url": visito.url(), "contrato": "visito"})).await;
    visito
        .control("/_secreto", json!({"secreto": secret(&created["secreto"])}))
        .await;
    let report = check(sub_id(&created)).await;
    assert_eq!(report["perfil"], "visito");
    assert_eq!(report["aprobado"], true, "{report:#}");
    let sent = names(&report);
    assert_eq!(sent.len(), 10, "{sent:?}");
    assert!(!sent
        .iter()
        .any(|n| n == "segunda_firma_valida" || n == "cabecera_repetida"));

    let asixto = Receiver::start("asixto_receiver.py");
    let created = create_ok(&m, &t, json!({"url": asixto.url(), "contrato": "asixto"})).await;
    asixto
        .control(
            "/_secretos",
            json!({"secretos": [secret(&created["secreto"])]}),
        )
        .await;
    let report = check(sub_id(&created)).await;
    assert_eq!(report["perfil"], "asixto");
    assert_eq!(report["aprobado"], true, "{report:#}");
    assert_eq!(names(&report).len(), 12);

    // The Visito receiver behind an asixto subscription refuses what it
    // should take.
    let created = create_ok(&m, &t, json!({"url": visito.url(), "contrato": "asixto"})).await;
    let report = check(sub_id(&created)).await;
    assert_eq!(report["aprobado"], false, "{report:#}");
    let entrega = &report["comprobaciones"][0];
    assert_eq!(
        (&entrega["nombre"], &entrega["veredicto"]),
        (&json!("entrega_valida"), &json!("falla"))
    );
}
