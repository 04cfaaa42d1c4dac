//! Ordering by a key finer than the instance (`orden: clave`, issue 33
//! item 5): events carry `orden_clave`; a `clave` subscription's
//! deliveries of one instance go out one at a time per key, in seq order,
//! keys in parallel (up to `webhooks.claves_en_vuelo`), events without a
//! key in the instance's own lane; a replay keeps the rule. Against a real
//! receiver on loopback that holds every request 50 ms and watches what
//! is in flight.

use std::{
    collections::{BTreeMap, HashMap},
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{body::Bytes, extract::State, http::HeaderMap, routing::post, Router};
use motor_domain::{subscription::SubscriptionId, InstanceId};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{
    deliveries::post as post_events,
    dispatch::WAIT,
    replays::replay_ok,
    subscriptions::{assert_field, call, create},
    util::{Tenant, TestMotor},
};

/// How long the receiver holds each request.
const HOLD: Duration = Duration::from_millis(50);

/// One request as the receiver saw it: the event's key (from `data.k`,
/// which the test writes beside `orden_clave`: the key is not in Motor's
/// envelope), its seq, whether it was a replay, when it came and ended.
#[derive(Debug, Clone)]
struct Request {
    key: Option<String>,
    seq: i64,
    replay: bool,
    arrived: Instant,
    ended: Instant,
}

#[derive(Default)]
struct Watch {
    done: Vec<Request>,
    /// Requests in flight per (replay, key).
    in_flight: HashMap<(bool, Option<String>), usize>,
    /// The most requests one key ever had in flight at once.
    most_per_key: usize,
    /// The most distinct keys with a request in flight at once.
    most_keys: usize,
}

#[derive(Clone, Default)]
struct KeyReceiver(Arc<Mutex<Watch>>);

impl KeyReceiver {
    async fn start() -> (Self, SocketAddr) {
        let r = Self::default();
        let app = Router::new()
            .route("/hook", post(receive))
            .with_state(r.clone());
        (r, crate::util::serve("127.0.0.1", app).await)
    }

    fn done(&self) -> Vec<Request> {
        self.0.lock().unwrap().done.clone()
    }

    /// (the most requests one key had in flight, the most keys in flight).
    fn most(&self) -> (usize, usize) {
        let w = self.0.lock().unwrap();
        (w.most_per_key, w.most_keys)
    }

    async fn wait_for(&self, what: &str, n: usize) {
        let deadline = Instant::now() + WAIT;
        while self.done().len() < n {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {} of {n} requests",
                self.done().len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn receive(State(r): State<KeyReceiver>, headers: HeaderMap, body: Bytes) -> &'static str {
    let envelope: Value = serde_json::from_slice(&body).unwrap_or_default();
    let key = envelope["data"]["k"].as_str().map(str::to_owned);
    let replay = headers.contains_key("x-mw-replay-of");
    let slot = (replay, key.clone());
    let arrived = Instant::now();
    {
        let mut w = r.0.lock().unwrap();
        let n = w.in_flight.entry(slot.clone()).or_default();
        *n += 1;
        let n = *n;
        w.most_per_key = w.most_per_key.max(n);
        let keys = w
            .in_flight
            .iter()
            .filter(|((_, k), n)| k.is_some() && **n > 0)
            .count();
        w.most_keys = w.most_keys.max(keys);
    }
    tokio::time::sleep(HOLD).await;
    let mut w = r.0.lock().unwrap();
    *w.in_flight.get_mut(&slot).unwrap() -= 1;
    w.done.push(Request {
        key,
        seq: envelope["seq"].as_i64().unwrap_or_default(),
        replay,
        arrived,
        ended: Instant::now(),
    });
    ""
}

/// Every (replay, key)'s requests in arrival order: seqs strictly rising
/// (in order, none twice: every answer is 2xx) and each after the one
/// before it ended. Returns how many lanes were judged.
fn assert_each_key_in_order(requests: &[Request]) -> usize {
    let mut lanes: BTreeMap<(bool, Option<String>), Vec<&Request>> = BTreeMap::new();
    for r in requests {
        lanes.entry((r.replay, r.key.clone())).or_default().push(r);
    }
    for (lane, mut rs) in lanes.clone() {
        rs.sort_by_key(|r| r.arrived);
        for pair in rs.windows(2) {
            assert!(
                pair[0].seq < pair[1].seq,
                "lane {lane:?}: seq {} came after seq {}",
                pair[1].seq,
                pair[0].seq
            );
            assert!(
                pair[1].arrived >= pair[0].ended,
                "lane {lane:?}: seq {} came while seq {} was in flight",
                pair[1].seq,
                pair[0].seq
            );
        }
    }
    lanes.len()
}

const KEYS: usize = 200;
const ROUNDS: usize = 3;
const KEYLESS: usize = 10;

/// Posts `ROUNDS` rounds of one event per key (`conv-<k>`), then
/// `KEYLESS` events without a key; `data.k` repeats the key.
async fn post_keyed(m: &TestMotor, t: &Tenant, instance: InstanceId) {
    let mut events: Vec<Value> = Vec::new();
    for round in 0..ROUNDS {
        for k in 0..KEYS {
            let key = format!("conv-{k}");
            events.push(json!({"type": "message.sent", "orden_clave": key,
                               "data": {"k": key, "round": round}}));
        }
    }
    for i in 0..KEYLESS {
        events.push(json!({"type": "message.sent", "data": {"i": i}}));
    }
    for chunk in events.chunks(500) {
        post_events(m, t, instance, Value::Array(chunk.to_vec())).await;
    }
}

async fn subscribe_keyed(m: &TestMotor, t: &Tenant, addr: SocketAddr) -> SubscriptionId {
    let (status, created) = create(
        m,
        &t.token,
        json!({"nombre": "conversaciones", "url": format!("http://{addr}/hook"),
               "orden": "clave"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let sub = &created["suscripcion"];
    assert_eq!(
        (&sub["orden"], &sub["ordenado"]),
        (&json!("clave"), &json!(true))
    );
    sub["id"].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn key_ordering_sends_each_key_in_order_and_keys_in_parallel() {
    let m = crate::dispatch::motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let (receiver, addr) = KeyReceiver::start().await;
    let sub = subscribe_keyed(&m, &t, addr).await;
    post_keyed(&m, &t, instance).await;
    let total = KEYS * ROUNDS + KEYLESS;
    receiver.wait_for("every delivery", total).await;

    let done = receiver.done();
    assert_eq!(done.len(), total, "each event once (every answer 2xx)");
    // Per key, and the keyless events in the instance's lane: in seq
    // order, one at a time.
    assert_eq!(assert_each_key_in_order(&done), KEYS + 1);
    let (most_per_key, most_keys) = receiver.most();
    assert_eq!(most_per_key, 1, "never two in flight for one key");
    assert!(
        most_keys >= 20,
        "keys in parallel: at most {most_keys} keys were in flight at once"
    );
    // The default bound (webhooks.claves_en_vuelo, 32 per process).
    assert!(most_keys <= 32, "{most_keys} keys in flight");
    let keyless: Vec<i64> = done
        .iter()
        .filter(|r| r.key.is_none())
        .map(|r| r.seq)
        .collect();
    assert_eq!(keyless.len(), KEYLESS);

    // Stored: the events keep their key, the deliveries are in the key's
    // lane (or the instance's).
    let keyed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE instance_id = $1 AND orden_clave LIKE 'conv-%'",
    )
    .bind(instance.as_uuid())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(keyed as usize, KEYS * ROUNDS);
    let lanes: Vec<(String, i64)> = sqlx::query_as(
        "SELECT d.lane, count(*) FROM deliveries d JOIN events e ON e.event_id = d.event_id
         WHERE d.subscription_id = $1
           AND d.lane IS DISTINCT FROM CASE WHEN e.orden_clave IS NULL THEN 'live'
                                            ELSE 'live/' || e.orden_clave END
         GROUP BY d.lane",
    )
    .bind(sub.as_uuid())
    .fetch_all(&m.db.pool)
    .await
    .unwrap();
    assert!(
        lanes.is_empty(),
        "deliveries outside their key's lane: {lanes:?}"
    );
    m.stop().await;
}

#[tokio::test]
async fn a_replay_under_key_ordering_keeps_each_key_in_order() {
    let m = crate::dispatch::motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let (receiver, addr) = KeyReceiver::start().await;
    let sub = subscribe_keyed(&m, &t, addr).await;
    post_keyed(&m, &t, instance).await;
    let total = KEYS * ROUNDS + KEYLESS;
    receiver.wait_for("the live deliveries", total).await;

    let answer = replay_ok(
        &m,
        &t,
        sub,
        json!({"instancia_id": instance, "desde_seq": 1, "hasta_seq": total,
               "motivo": "reprocesar conversaciones"}),
    )
    .await;
    assert_eq!(answer["entregas"], total);
    receiver.wait_for("the replay", 2 * total).await;
    let replayed: Vec<Request> = receiver.done().into_iter().filter(|r| r.replay).collect();
    assert_eq!(replayed.len(), total);
    // The replay's own lanes: per key and for the keyless, in order and
    // one at a time; keys in parallel.
    assert_eq!(assert_each_key_in_order(&replayed), KEYS + 1);
    let (most_per_key, most_keys) = receiver.most();
    assert_eq!(most_per_key, 1);
    assert!(most_keys >= 20, "{most_keys} keys at once");
    let replay_lanes: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT d.lane) FROM deliveries d
         WHERE d.subscription_id = $1 AND d.lane LIKE $2",
    )
    .bind(sub.as_uuid())
    .bind(format!("{}%", answer["replay_id"].as_str().unwrap()))
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(
        replay_lanes as usize,
        KEYS + 1,
        "a lane per key, and the instance's"
    );
    m.stop().await;
}

#[tokio::test]
async fn ordering_fields_are_checked_by_name_and_default_from_the_contract() {
    let m = TestMotor::start(&[motor::serve::Role::Api]).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let hook = "http://127.0.0.1:9/hook";

    // orden_clave: 1–200 characters, no NUL; a 422 naming it.
    for bad in [
        json!(""),
        json!("k".repeat(201)),
        json!(5),
        json!("a\u{0}b"),
    ] {
        let answer = call(
            &m,
            Method::POST,
            &format!("/v1/instances/{instance}/events"),
            &t.token,
            Some(json!([{"type": "t", "data": {}},
                        {"type": "t", "data": {}, "orden_clave": bad}])),
        )
        .await;
        assert_field(&answer, "body[1].orden_clave");
    }
    let ok = post_events(
        &m,
        &t,
        instance,
        json!({"type": "t", "data": {}, "orden_clave": "ñ".repeat(200)}),
    )
    .await;
    assert!(ok.get("orden_clave").is_none(), "not in the envelope: {ok}");

    // orden: the three names; ordenado still accepted; both must agree.
    let sub = |extra: Value| {
        let mut body = json!({"nombre": "s", "url": hook});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        create(&m, &t.token, body)
    };
    assert_field(&sub(json!({"orden": "Clave"})).await, "body.orden");
    assert_field(
        &sub(json!({"orden": "clave", "ordenado": false})).await,
        "body.ordenado",
    );
    let shown = |answer: &(StatusCode, Value)| {
        assert_eq!(answer.0, StatusCode::CREATED, "{}", answer.1);
        let s = &answer.1["suscripcion"];
        (s["ordenado"].clone(), s.get("orden").cloned())
    };
    let clave = Some(json!("clave"));
    assert_eq!(
        shown(&sub(json!({})).await),
        (json!(true), None),
        "motor: instancia"
    );
    assert_eq!(
        shown(&sub(json!({"ordenado": false})).await),
        (json!(false), None)
    );
    assert_eq!(
        shown(&sub(json!({"orden": "ninguno"})).await),
        (json!(false), None)
    );
    assert_eq!(
        shown(&sub(json!({"orden": "clave", "ordenado": true})).await),
        (json!(true), clave.clone())
    );
    // A contract's default ordering when none is named.
    assert_eq!(
        shown(&sub(json!({"contrato": "asixto"})).await),
        (json!(true), clave.clone()),
        "asixto: clave"
    );
    assert_eq!(
        shown(&sub(json!({"contrato": "visito"})).await),
        (json!(false), None),
        "visito: ninguno"
    );
    assert_eq!(
        shown(&sub(json!({"contrato": "asixto", "ordenado": true})).await),
        (json!(true), None),
        "ordenado: true is instancia"
    );

    // A change: `ordenado: true` keeps clave; `orden` changes it.
    let created = sub(json!({"orden": "clave"})).await.1;
    let path = format!(
        "/v1/subscriptions/{}",
        created["suscripcion"]["id"].as_str().unwrap()
    );
    let patch = |body: Value| call(&m, Method::PATCH, &path, &t.token, Some(body));
    let (status, kept) = patch(json!({"ordenado": true, "nombre": "s2"})).await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    assert_eq!(kept["orden"], "clave");
    let (_, changed) = patch(json!({"orden": "instancia"})).await;
    assert_eq!(
        (changed.get("orden"), &changed["ordenado"]),
        (None, &json!(true))
    );
    assert_field(&patch(json!({"orden": "key"})).await, "body.orden");

    // The bound of keys in flight is a setting.
    let (status, settings) = call(
        &m,
        Method::GET,
        "/v1/admin/settings",
        crate::util::ADMIN_TOKEN,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(settings["webhooks.claves_en_vuelo"], 32);
    m.stop().await;
}
