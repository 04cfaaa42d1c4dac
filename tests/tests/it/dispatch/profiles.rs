//! Each signing profile end to end against a running Motor, received the
//! way a user would build a receiver: on the `motor-receiver` crate
//! (`inbox_receiver.rs`: its axum extractor and its Postgres inbox). The
//! receiver verifies every delivery across a secret rotation while Motor
//! retries the acknowledgements it "lost"; a receiver with a wrong clock
//! answers 408 and is retried, never suspended; and real deliveries pass
//! the public verifiers (`firma/interop.rs`).

use std::{collections::HashSet, time::Duration};

use axum::http::HeaderMap;
use motor_domain::{signature::SigningProfile, subscription::SubscriptionId};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::{
    delivery_detail, inbox_receiver::InboxReceiver, motor, post_many, rotate, states, wait_state,
};
use crate::{
    signature_profiles::interop::{assert_accepted, Shown},
    subscriptions::{call, create},
    util::{Tenant, TestMotor, ADMIN_TOKEN},
};

/// How many signatures (one per live key) a request carries.
fn signatures(profile: SigningProfile, headers: &HeaderMap) -> usize {
    let h = |name: &str| headers[name].to_str().unwrap();
    match profile {
        SigningProfile::MwV1 => h("x-mw-signature").split(',').count(),
        SigningProfile::TV1 => h("x-mw-signature").matches("v1=").count(),
        SigningProfile::StandardWebhooks => h("webhook-signature").split(' ').count(),
    }
}

async fn subscribe(
    m: &TestMotor,
    t: &Tenant,
    url: &str,
    profile: SigningProfile,
) -> (SubscriptionId, Shown) {
    let (status, created) = create(
        m,
        &t.token,
        json!({"nombre": "inbox", "url": url, "firma": profile.as_str()}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["suscripcion"]["firma"], profile.as_str());
    let id = created["suscripcion"]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    (id, Shown::from_answer(&created["secreto"]))
}

/// `per_instance` events on every instance of the tenant.
async fn post_round(m: &TestMotor, t: &Tenant, per_instance: usize, tag: &str) {
    for instance in &t.instances {
        post_many(m, t, *instance, per_instance, tag).await;
    }
}

/// Waits (up to two minutes) until `n` of the subscription's deliveries
/// are `entregada`; a receiver that refused a request fails at once.
async fn wait_delivered(m: &TestMotor, r: &InboxReceiver, sub: SubscriptionId, n: i64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let now = states(m, sub).await;
        if now.get("entregada") == Some(&n) {
            return;
        }
        let refused: Vec<u16> = r
            .requests()
            .iter()
            .filter(|q| q.body.is_none())
            .map(|q| q.status)
            .collect();
        assert!(refused.is_empty(), "the receiver refused: {refused:?}");
        assert!(
            std::time::Instant::now() < deadline,
            "waiting for {n} entregada: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const INSTANCES: usize = 8;

/// 1,000 deliveries under `profile` across a rotation: 400 before it
/// (the receiver knows the first secret), 320 during it with the receiver
/// still knowing only the old secret (the docs' step 1), 280 after the
/// receiver dropped the old one and knows only the new (step 3). Every
/// third first attempt is acknowledged with a 500 after the inbox
/// committed it, so Motor retries it and the inbox turns the retry away.
async fn a_thousand_deliveries_across_a_rotation(profile: SigningProfile) {
    let m = motor(None).await;
    let t = m.tenant(INSTANCES).await;
    let r = InboxReceiver::start(profile, true).await;
    let (sub, old) = subscribe(&m, &t, &r.url("/hook"), profile).await;
    r.trust_only(&[&old]);

    post_round(&m, &t, 50, "before").await;
    wait_delivered(&m, &r, sub, 400).await;

    let new = Shown::from_answer(&rotate(&m, &t, sub).await);
    r.set_phase(1);
    post_round(&m, &t, 40, "rotating, old secret only").await;
    wait_delivered(&m, &r, sub, 720).await;

    r.trust_only(&[&new]);
    r.set_phase(2);
    post_round(&m, &t, 35, "rotating, new secret only").await;
    wait_delivered(&m, &r, sub, 1000).await;

    // Every request verified: nothing refused, nothing suspended.
    let requests = r.requests();
    let refused: Vec<u16> = requests
        .iter()
        .filter(|q| q.body.is_none())
        .map(|q| q.status)
        .collect();
    assert!(refused.is_empty(), "{profile}: refused {refused:?}");
    let (_, s) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{sub}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(
        (s["estado"].clone(), s["firma"].clone()),
        (json!("activa"), json!(profile.as_str()))
    );
    // One signature before the rotation, two (new and old) during it.
    for q in &requests {
        let expected = if q.phase == 0 { 1 } else { 2 };
        assert_eq!(
            signatures(profile, &q.headers),
            expected,
            "{profile}, phase {}",
            q.phase
        );
    }

    // The inbox holds each of Motor's events exactly once, and the effect
    // ran once per event, though Motor retried every lost acknowledgement.
    let ((rows, distinct), (effects, distinct_effects)) = r.kept().await;
    assert_eq!((rows, distinct), (1000, 1000), "{profile}: inbox");
    assert_eq!(
        (effects, distinct_effects),
        (1000, 1000),
        "{profile}: effects"
    );
    let motor_events: HashSet<uuid::Uuid> = sqlx::query_scalar("SELECT event_id FROM events")
        .fetch_all(&m.db.pool)
        .await
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(r.kept_event_ids().await, motor_events, "{profile}");
    let (first, lost, applied, duplicates) = r.counts();
    assert_eq!((first, applied), (1000, 1000), "{profile}");
    assert_eq!(lost, 333, "{profile}: every third first attempt");
    assert!(
        duplicates >= lost,
        "{profile}: each lost ack was retried ({duplicates} < {lost})"
    );
    let retried: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM deliveries WHERE subscription_id = $1 AND intentos > 1",
    )
    .bind(sub.as_uuid())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert!(
        retried >= lost as i64,
        "{profile}: Motor retried {retried} < {lost}"
    );

    // Real deliveries pass the public verifiers: one from before the
    // rotation (its secret), and the latest of each later phase (either
    // secret alone).
    let verified = |phase: usize| {
        requests
            .iter()
            .rfind(|q| q.phase == phase && q.body.is_some())
            .unwrap()
            .clone()
    };
    for (phase, secrets) in [
        (0, vec![old.clone()]),
        (1, vec![new.clone(), old.clone()]),
        (2, vec![new.clone(), old.clone()]),
    ] {
        let q = verified(phase);
        assert_accepted(profile, &q.headers, q.body.as_ref().unwrap(), &secrets);
    }
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mw_v1_a_thousand_deliveries_across_a_rotation_each_kept_once() {
    a_thousand_deliveries_across_a_rotation(SigningProfile::MwV1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t_v1_a_thousand_deliveries_across_a_rotation_each_kept_once() {
    a_thousand_deliveries_across_a_rotation(SigningProfile::TV1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn standard_webhooks_a_thousand_deliveries_across_a_rotation_each_kept_once() {
    a_thousand_deliveries_across_a_rotation(SigningProfile::StandardWebhooks).await;
}

/// A receiver whose clock is 10 minutes off (ahead or behind) answers 408
/// to every profile's signature: Motor retries with fresh signatures and
/// never suspends; once the clock is right, everything is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_receiver_ten_minutes_off_answers_408_and_motor_retries_without_suspending() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let mut receivers = Vec::new();
    for (profile, skew) in [
        (SigningProfile::MwV1, 600),
        (SigningProfile::TV1, -600),
        (SigningProfile::StandardWebhooks, 600),
    ] {
        let r = InboxReceiver::start(profile, false).await;
        let (sub, secret) = subscribe(&m, &t, &r.url("/skewed"), profile).await;
        r.trust_only(&[&secret]);
        r.set_skew(skew);
        receivers.push((profile, r, sub));
    }
    post_many(&m, &t, instance, 3, "skewed").await;

    // The head of each lane is refused with 408 again and again.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while receivers.iter().any(|(_, r, _)| r.requests().len() < 3) {
        assert!(std::time::Instant::now() < deadline, "no retries");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (profile, r, sub) in &receivers {
        let requests = r.requests();
        assert!(
            requests.iter().all(|q| q.status == 408),
            "{profile}: {:?}",
            requests.iter().map(|q| q.status).collect::<Vec<_>>()
        );
        let (_, s) = call(
            &m,
            Method::GET,
            &format!("/v1/subscriptions/{sub}"),
            &t.token,
            None,
        )
        .await;
        assert_eq!(
            (s["estado"].clone(), s["motivo"].clone()),
            (json!("activa"), Value::Null),
            "{profile}: a 408 never suspends"
        );
        let detail = delivery_detail(&m, &t, *sub, instance, 1).await;
        assert_eq!(detail["estado"], "pendiente", "{detail}");
        let attempts = detail["intentos_detalle"].as_array().unwrap();
        assert!(attempts.len() >= 2, "{profile}: retried: {detail}");
        assert!(
            attempts.iter().all(|a| a["error"] == "http_408"),
            "{profile}: {detail}"
        );
    }
    let (_, alerts) = call(
        &m,
        Method::GET,
        "/v1/admin/alerts?estado=abierta",
        ADMIN_TOKEN,
        None,
    )
    .await;
    for (_, _, sub) in &receivers {
        assert!(!alerts.to_string().contains(&sub.to_string()), "{alerts}");
    }

    // The clocks are set right: the retries go through, each event once.
    for (_, r, _) in &receivers {
        r.set_skew(0);
    }
    for (profile, r, sub) in &receivers {
        wait_state(&m, *sub, "entregada", 3).await;
        let ((rows, distinct), _) = r.kept().await;
        assert_eq!((rows, distinct), (3, 3), "{profile}");
    }
    m.stop().await;
}
