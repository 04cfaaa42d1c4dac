//! The delivery engine end to end: events posted to the API reach a real
//! receiver on loopback as signed webhooks, through the relay, Kafka, the
//! dispatcher, the delay tiers and the sweeper — in order per lane, with
//! retries, failures, suspension and pauses as the contract says.

mod early;
mod fast_path;
mod faults;
mod inbox_receiver;
mod leases;
mod linger;
mod profiles;
pub(crate) mod receiver;

use std::{collections::HashMap, time::Duration};

use motor::serve::Role;
use motor_domain::{subscription::SubscriptionId, InstanceId};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use self::receiver::{Receiver, Reply, Seen};
use crate::{
    deliveries::{post, set_state},
    subscriptions::{call, create},
    util::{read_topic, Tenant, TestDb, TestMotor, ALL_ROLES},
};

pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// Motor with every role and a retry schedule of 200 ms … 1.2 s.
pub(crate) async fn motor(give_up_secs: Option<u64>) -> TestMotor {
    TestMotor::start_configured(TestDb::new().await, &ALL_ROLES, |c| {
        c.retry_schedule_ms = Some(vec![200, 400, 600, 800, 1000, 1200]);
        c.retry_give_up_secs = give_up_secs;
    })
    .await
}

/// A subscription to the receiver, whose secret the receiver trusts.
pub(crate) async fn subscribe(
    m: &TestMotor,
    t: &Tenant,
    r: &Receiver,
    extra: Value,
) -> SubscriptionId {
    let mut body = json!({"nombre": "receptor", "url": r.url()});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (status, created) = create(m, &t.token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    r.trust(
        created["secreto"]["key_id"].as_str().unwrap(),
        created["secreto"]["valor"].as_str().unwrap(),
    );
    created["suscripcion"]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Rotates the subscription's secret; the answer's `secreto`.
pub(crate) async fn rotate(m: &TestMotor, t: &Tenant, sub: SubscriptionId) -> Value {
    let (status, rotated) = call(
        m,
        Method::POST,
        &format!("/v1/subscriptions/{sub}/rotate"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    rotated["secreto"].clone()
}

/// Rotates the subscription's secret and has the receiver trust the new
/// key (as well as the old); the new key's id.
pub(crate) async fn rotate_trusted(
    m: &TestMotor,
    t: &Tenant,
    sub: SubscriptionId,
    r: &Receiver,
) -> String {
    let secret = rotate(m, t, sub).await;
    let key_id = secret["key_id"].as_str().unwrap().to_owned();
    r.trust(&key_id, secret["valor"].as_str().unwrap());
    key_id
}

pub(crate) async fn post_many(
    m: &TestMotor,
    t: &Tenant,
    instance: InstanceId,
    n: usize,
    tag: &str,
) {
    let events: Vec<Value> = (0..n)
        .map(|i| json!({"type": "message.sent", "data": {"tag": tag, "i": i}}))
        .collect();
    for chunk in events.chunks(500) {
        post(m, t, instance, Value::Array(chunk.to_vec())).await;
    }
}

/// Seqs of `instance` in the order they first reached the receiver with a
/// 2xx (the last request of each delivery id answered 2xx).
fn arrival_order(
    seen: &[Seen],
    instance: InstanceId,
    delivered: &dyn Fn(&Seen) -> bool,
) -> Vec<i64> {
    seen.iter()
        .filter(|s| s.instance_id == instance.to_string() && delivered(s))
        .map(|s| s.seq)
        .collect()
}

async fn delivery_detail(
    m: &TestMotor,
    t: &Tenant,
    sub: SubscriptionId,
    instance: InstanceId,
    seq: i64,
) -> Value {
    let (status, list) = call(
        m,
        Method::GET,
        &format!("/v1/deliveries?suscripcion_id={sub}&instancia_id={instance}&por_pagina=200"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let id = list["entregas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["seq"] == seq)
        .unwrap_or_else(|| panic!("no delivery of seq {seq}: {list}"))["delivery_id"]
        .as_str()
        .unwrap()
        .to_owned();
    call(
        m,
        Method::GET,
        &format!("/v1/deliveries/{id}"),
        &t.token,
        None,
    )
    .await
    .1
}

pub(crate) async fn states(m: &TestMotor, sub: SubscriptionId) -> HashMap<String, i64> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT estado, count(*) FROM deliveries WHERE subscription_id = $1 GROUP BY estado",
    )
    .bind(sub.as_uuid())
    .fetch_all(&m.db.pool)
    .await
    .unwrap();
    rows.into_iter().collect()
}

/// Waits until the subscription has `n` deliveries in `estado` (the
/// receiver answers before Motor records the attempt).
pub(crate) async fn wait_state(m: &TestMotor, sub: SubscriptionId, estado: &str, n: i64) {
    wait_state_within(m, sub, estado, n, WAIT).await;
}

/// [`wait_state`], for at most `within`.
pub(crate) async fn wait_state_within(
    m: &TestMotor,
    sub: SubscriptionId,
    estado: &str,
    n: i64,
    within: Duration,
) {
    let deadline = std::time::Instant::now() + within;
    loop {
        let now = states(m, sub).await;
        if now.get(estado) == Some(&n) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "waiting for {n} {estado}: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn signed_deliveries_arrive_in_order_and_verify() {
    let m = motor(None).await;
    let t = m.tenant(2).await;
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({})).await;
    for instance in &t.instances {
        post_many(&m, &t, *instance, 20, "ok").await;
    }
    r.wait_for("40 deliveries", WAIT, |seen| seen.len() >= 40)
        .await;

    let seen = r.seen();
    assert!(
        seen.iter().all(|s| s.verified),
        "every signature verifies with the subscription's secret"
    );
    assert!(
        seen.iter().all(|s| s.key_ids.len() == 1),
        "one key outside a rotation"
    );
    for instance in &t.instances {
        assert_eq!(
            arrival_order(&seen, *instance, &|_| true),
            (1..=20).collect::<Vec<_>>(),
            "instance {instance}"
        );
    }
    // The body is the ledger's envelope, byte for byte, and the headers agree.
    let (_, page) = call(
        &m,
        Method::GET,
        &format!("/v1/instances/{}/events?limit=1", t.instances[0]),
        &t.token,
        None,
    )
    .await;
    let first = seen
        .iter()
        .find(|s| s.instance_id == t.instances[0].to_string() && s.seq == 1)
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&first.body).unwrap(),
        page["events"][0]
    );
    assert_eq!(
        first.event_id,
        page["events"][0]["event_id"].as_str().unwrap()
    );
    wait_state(&m, sub, "entregada", 40).await;

    // During a rotation every delivery carries two signatures, the new key
    // first, and both verify (a receiver knowing either secret accepts).
    let old_key = seen[0].key_ids[0].clone();
    let new_key = rotate_trusted(&m, &t, sub, &r).await;
    for instance in &t.instances {
        post_many(&m, &t, *instance, 10, "rotating").await;
    }
    r.wait_for("60 deliveries", WAIT, |seen| seen.len() >= 60)
        .await;
    let during: Vec<Seen> = r.seen().into_iter().skip(40).collect();
    assert!(during.iter().all(|s| s.verified), "both signatures verify");
    assert!(
        during
            .iter()
            .all(|s| s.key_ids == [new_key.clone(), old_key.clone()]),
        "{:?}",
        during.iter().map(|s| &s.key_ids).collect::<Vec<_>>()
    );
    for instance in &t.instances {
        assert_eq!(
            arrival_order(&during, *instance, &|_| true),
            (21..=30).collect::<Vec<_>>()
        );
    }
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_head_holds_only_its_lane() {
    const HEAD_FAILURES: usize = 8;
    let m = motor(None).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let r = Receiver::start().await;
    let a_id = a.to_string();
    // A's first event fails eight times with 500, then goes through: A's
    // head is stuck for about 6.6 s (the retry schedule). A plain 5xx: a 429
    // or 503 with Retry-After would hold the whole subscription (throttling,
    // tested in health::throttle).
    r.script(move |s| {
        if s.instance_id == a_id && s.seq == 1 && s.previous < HEAD_FAILURES {
            Reply::status(500)
        } else {
            Reply::status(200)
        }
    });
    let sub = subscribe(&m, &t, &r, json!({})).await;
    post_many(&m, &t, a, 5, "a").await;
    post_many(&m, &t, b, 30, "b").await;
    r.wait_for("A after its retries, and all of B", WAIT, |seen| {
        seen.iter()
            .filter(|s| s.instance_id == a.to_string() && s.seq == 5)
            .count()
            == 1
            && seen
                .iter()
                .filter(|s| s.instance_id == b.to_string())
                .count()
                >= 30
    })
    .await;

    let seen = r.seen();
    let delivered =
        |s: &Seen| !(s.instance_id == a.to_string() && s.seq == 1 && s.previous < HEAD_FAILURES);
    assert_eq!(arrival_order(&seen, a, &delivered), [1, 2, 3, 4, 5]);
    assert_eq!(
        arrival_order(&seen, b, &delivered),
        (1..=30).collect::<Vec<_>>()
    );
    // B never waited for A's head: all of B was through before A's head was.
    let a_head_done = seen
        .iter()
        .find(|s| s.instance_id == a.to_string() && s.seq == 1 && s.previous == HEAD_FAILURES)
        .unwrap()
        .at;
    let b_done = seen
        .iter()
        .filter(|s| s.instance_id == b.to_string())
        .map(|s| s.at)
        .max()
        .unwrap();
    assert!(
        b_done < a_head_done,
        "B's lane finished after A's failing head: it waited"
    );
    // Every retry carried the same delivery id.
    let a_head: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.instance_id == a.to_string() && s.seq == 1)
        .collect();
    assert_eq!(a_head.len(), HEAD_FAILURES + 1);
    assert!(a_head
        .iter()
        .all(|s| s.delivery_id == a_head[0].delivery_id));

    let detail = delivery_detail(&m, &t, sub, a, 1).await;
    assert_eq!(detail["estado"], "entregada", "{detail}");
    let attempts = detail["intentos_detalle"].as_array().unwrap();
    assert_eq!(attempts.len(), HEAD_FAILURES + 1, "{detail}");
    assert_eq!(attempts[0]["error"], "http_500");
    assert_eq!(attempts[0]["status"], 500);
    assert_eq!(attempts[HEAD_FAILURES]["status"], 200);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_head_that_fails_lets_its_lane_go_and_lands_on_the_dlq() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let r = Receiver::start().await;
    // seq 2 → 404 (fallida at once), seq 3 → 302 (redireccion), seq 4 → 410.
    r.script(|s| match s.seq {
        2 => Reply::status(404),
        3 => Reply::status(302).with("location", "http://127.0.0.1:1/elsewhere"),
        4 => Reply::status(410),
        _ => Reply::status(204),
    });
    let sub = subscribe(&m, &t, &r, json!({})).await;
    post_many(&m, &t, a, 6, "x").await;
    r.wait_for("the whole lane", WAIT, |seen| {
        seen.iter().any(|s| s.seq == 6)
    })
    .await;
    let seen = r.seen();
    assert_eq!(
        seen.iter().map(|s| s.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6],
        "each once, in order"
    );

    for (seq, error) in [(2, "http_404"), (3, "redireccion"), (4, "http_410")] {
        let detail = delivery_detail(&m, &t, sub, a, seq).await;
        assert_eq!(
            (detail["estado"].as_str(), detail["ultimo_error"].as_str()),
            (Some("fallida"), Some(error)),
            "{detail}"
        );
        assert_eq!(
            detail["intentos_detalle"].as_array().unwrap().len(),
            1,
            "no retry: {detail}"
        );
    }
    let dlq = read_topic(&format!("{}.dlq", m.prefix), 3);
    let mut dead: Vec<i64> = dlq
        .iter()
        .map(|r| {
            serde_json::from_slice::<Value>(&r.payload).unwrap()["seq"]
                .as_i64()
                .unwrap()
        })
        .collect();
    dead.sort();
    dead.dedup();
    assert_eq!(dead, [2, 3, 4]);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retry_after_is_honoured_in_seconds_and_as_a_date() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let r = Receiver::start().await;
    r.script(|s| match (s.seq, s.previous) {
        (1, 0) => Reply::status(429).with("retry-after", "2"),
        (2, 0) => {
            let at = chrono::Utc::now() + chrono::TimeDelta::seconds(3);
            Reply::status(503).with(
                "retry-after",
                at.format("%a, %d %b %Y %H:%M:%S GMT").to_string(),
            )
        }
        _ => Reply::status(200),
    });
    subscribe(&m, &t, &r, json!({})).await;
    post_many(&m, &t, t.instances[0], 2, "ra").await;
    r.wait_for("both events delivered", WAIT, |seen| {
        seen.iter().any(|s| s.seq == 2 && s.previous == 1)
    })
    .await;
    let seen = r.seen();
    let gap = |seq: i64| {
        let tries: Vec<&Seen> = seen.iter().filter(|s| s.seq == seq).collect();
        tries[1].at - tries[0].at
    };
    // The schedule alone would retry after ~200 ms.
    assert!(
        gap(1) >= Duration::from_millis(1900),
        "Retry-After: 2 waited only {:?}",
        gap(1)
    );
    // An HTTP date 3 s ahead, whole seconds: at least ~2 s.
    assert!(
        gap(2) >= Duration::from_millis(1900),
        "Retry-After date waited only {:?}",
        gap(2)
    );
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_401_suspends_and_reactivation_delivers_everything_in_order() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let r = Receiver::start().await;
    r.script(|_| Reply::status(401));
    let sub = subscribe(&m, &t, &r, json!({})).await;
    post_many(&m, &t, a, 3, "before").await;
    r.wait_for("the refused head", WAIT, |seen| !seen.is_empty())
        .await;

    let (_, got) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{sub}"),
        &t.token,
        None,
    )
    .await;
    let deadline = std::time::Instant::now() + WAIT;
    let mut got = got;
    while got["estado"] != "suspendida" {
        assert!(std::time::Instant::now() < deadline, "{got}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        got = call(
            &m,
            Method::GET,
            &format!("/v1/subscriptions/{sub}"),
            &t.token,
            None,
        )
        .await
        .1;
    }
    assert_eq!(got["motivo"], "rechazo_401");
    let (_, alerts) = call(
        &m,
        Method::GET,
        "/v1/admin/alerts?estado=abierta",
        crate::util::ADMIN_TOKEN,
        None,
    )
    .await;
    assert!(
        alerts.to_string().contains(&sub.to_string()),
        "an open alert names it: {alerts}"
    );

    // More events while suspended: they accumulate, nothing is sent.
    post_many(&m, &t, a, 3, "during").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(r.seen().len(), 1, "a suspended subscription sends nothing");
    assert_eq!(
        states(&m, sub).await.get("pendiente"),
        Some(&6),
        "nothing lost, nothing failed"
    );

    r.script(|_| Reply::status(204));
    set_state(&m, &t, sub, "activa").await;
    r.wait_for("all six", WAIT, |seen| {
        seen.iter().filter(|s| s.seq == 6).count() == 1
    })
    .await;
    let order: Vec<i64> = r.seen().iter().skip(1).map(|s| s.seq).collect();
    assert_eq!(order, [1, 2, 3, 4, 5, 6]);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exhausted_retries_end_failed_exhausted_on_the_dlq() {
    let m = motor(Some(10)).await;
    let t = m.tenant(1).await;
    let r = Receiver::start().await;
    // seq 1 goes through, so the consumers are live (joining a group takes
    // seconds) before seq 2 — which always gets 503 — starts its 10 s horizon.
    r.script(|s| Reply::status(if s.seq == 1 { 204 } else { 503 }));
    let sub = subscribe(&m, &t, &r, json!({})).await;
    post_many(&m, &t, t.instances[0], 1, "warm-up").await;
    wait_state(&m, sub, "entregada", 1).await;
    post_many(&m, &t, t.instances[0], 1, "x").await;

    wait_state(&m, sub, "fallida", 1).await;
    let (_, list) = call(
        &m,
        Method::GET,
        &format!("/v1/deliveries?estado=fallida&suscripcion_id={sub}"),
        &t.token,
        None,
    )
    .await;
    let failed = &list["entregas"][0];
    assert_eq!(failed["seq"], 2, "{list}");
    assert_eq!(failed["ultimo_error"], "http_503_agotada", "{list}");
    let tries = r.seen().iter().filter(|s| s.seq == 2).count();
    assert!(tries >= 2, "it retried before giving up ({tries} attempts)");
    let dlq = read_topic(&format!("{}.dlq", m.prefix), 1);
    assert_eq!(
        serde_json::from_slice::<Value>(&dlq[0].payload).unwrap()["seq"],
        2
    );
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_paused_subscription_accumulates_and_delivers_in_order_when_reactivated() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({})).await;
    set_state(&m, &t, sub, "pausada").await;
    post_many(&m, &t, a, 1000, "paused").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(r.seen().is_empty(), "a paused subscription sends nothing");
    assert_eq!(states(&m, sub).await.get("pendiente"), Some(&1000));

    set_state(&m, &t, sub, "activa").await;
    r.wait_for("1,000 deliveries", Duration::from_secs(120), |seen| {
        seen.len() >= 1000
    })
    .await;
    let order: Vec<i64> = r.seen().iter().map(|s| s.seq).collect();
    assert_eq!(
        order,
        (1..=1000).collect::<Vec<_>>(),
        "in lane order, each once"
    );
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unordered_subscription_runs_at_most_eight_at_once_from_its_first_job() {
    let m = motor(None).await;
    let t = m.tenant(2).await;
    let r = Receiver::start().await;
    // Slow answers, so every job that may run is running.
    r.script(|_| Reply::status(204).after(Duration::from_millis(400)));
    let sub = subscribe(&m, &t, &r, json!({"ordenado": false})).await;
    for instance in &t.instances {
        post_many(&m, &t, *instance, 20, "unordered").await;
    }
    wait_state(&m, sub, "entregada", 40).await;
    // The process bounds its attempts per unordered subscription (the
    // contract's "hasta 8 a la vez por proceso") from the very first jobs,
    // and does use them all: the lanes do not serialise.
    assert_eq!(r.most_at_once(), 8);
    assert_eq!(r.seen().len(), 40);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reactivated_unordered_backlog_drains_through_its_chains_eight_at_once() {
    // No sweeper: what is not among the 1,000 jobs of the reactivation can
    // only go out through the chains of attempts claiming the next one.
    let roles = [Role::Api, Role::Relay, Role::Dispatch, Role::Retry];
    let m = TestMotor::start_configured(TestDb::new().await, &roles, |_| {}).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({"ordenado": false})).await;
    set_state(&m, &t, sub, "pausada").await;
    post_many(&m, &t, a, 2500, "paused").await;
    assert_eq!(states(&m, sub).await.get("pendiente"), Some(&2500));

    set_state(&m, &t, sub, "activa").await;
    wait_state(&m, sub, "entregada", 2500).await;
    let mut seqs: Vec<i64> = r.seen().iter().map(|s| s.seq).collect();
    seqs.sort();
    seqs.dedup();
    assert_eq!(seqs, (1..=2500).collect::<Vec<_>>(), "every one arrived");
    assert!(r.most_at_once() <= 8, "{} at once", r.most_at_once());
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deleted_subscription_sends_none_of_its_pending_and_gets_no_new_ones() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let r = Receiver::start().await;
    // The head keeps failing, so the lane holds all five, retrying every
    // 200 ms … 1.2 s.
    r.script(|_| Reply::status(503));
    let sub = subscribe(&m, &t, &r, json!({})).await;
    post_many(&m, &t, a, 5, "before").await;
    r.wait_for("two attempts of the head", WAIT, |seen| seen.len() >= 2)
        .await;
    let (status, body) = call(
        &m,
        Method::DELETE,
        &format!("/v1/subscriptions/{sub}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    // An attempt already in flight may still land: wait until a second
    // passes with none. After that, nothing — though the receiver would now
    // accept everything.
    let mut after_delete = r.seen().len();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = r.seen().len();
        if now == after_delete {
            break;
        }
        after_delete = now;
        assert!(
            std::time::Instant::now() < deadline,
            "attempts keep coming after the delete"
        );
    }
    r.script(|_| Reply::status(204));
    post_many(&m, &t, a, 3, "after").await;
    // Several retry periods and sweeps.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        r.seen().len(),
        after_delete,
        "nothing goes out for a deleted subscription"
    );
    assert_eq!(
        states(&m, sub).await,
        HashMap::from([("pendiente".to_owned(), 5)]),
        "its pending stay pending and the new events made none"
    );
    m.stop().await;
}
