//! Every suspension path of the engine, end to end, each with its alert, no
//! loss and in-order release on reactivation: `destino_no_permitido` (the
//! host removed from the allowed list under load), `destino_bloqueado` (a
//! name re-pointed to a blocked address, also through NAT64),
//! `sin_secreto` (the subscription's only key no longer opens). The fourth,
//! `fallos_sostenidos`, is `health/disabling.rs`; `destino_bloqueado` by
//! `politica_destinos` is `health/policy.rs`.

use std::{
    net::{IpAddr, UdpSocket},
    time::{Duration, Instant},
};

use motor_domain::{subscription::SubscriptionId, InstanceId};
use reqwest::{Method, StatusCode};
use serde_json::json;

use super::{patch_app, wait_suspended};
use crate::{
    deliveries::set_state,
    dispatch::{
        motor, post_many,
        receiver::{Receiver, Reply, Seen},
        rotate_trusted, states, subscribe, wait_state, WAIT,
    },
    subscriptions::call,
    util::TestMotor,
};

/// How long the dispatcher may keep reading an app or settings it read.
const CACHE: Duration = Duration::from_millis(1_100);

/// Seqs of `instance` in the order they reached the receiver after `from`.
fn order_since(seen: &[Seen], instance: InstanceId, from: Instant) -> Vec<i64> {
    seen.iter()
        .filter(|s| s.at >= from && s.instance_id == instance.to_string())
        .map(|s| s.seq)
        .collect()
}

/// Checks that a suspended subscription sends nothing more: what reached
/// the receiver stays the same for a while.
async fn sends_nothing(r: &Receiver) -> usize {
    tokio::time::sleep(Duration::from_millis(500)).await;
    let settled = r.seen().len();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        r.seen().len(),
        settled,
        "a suspended subscription sends nothing"
    );
    settled
}

/// No delivery lost or failed: `total` in all, every one `entregada` or
/// `pendiente`.
async fn nothing_lost(m: &TestMotor, sub: SubscriptionId, total: i64) {
    let now = states(m, sub).await;
    assert_eq!(now.get("fallida"), None, "{now:?}");
    assert_eq!(now.values().sum::<i64>(), total, "{now:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_host_removed_from_the_list_under_load_suspends_and_loses_nothing() {
    let m = motor(None).await;
    let t = m.tenant(2).await;
    let r = Receiver::start().await;
    r.script(|_| Reply::status(204).after(Duration::from_millis(20)));
    let sub = subscribe(&m, &t, &r, json!({})).await;
    // A backlog on two instances, and the host leaves the list while it
    // drains.
    for instance in &t.instances {
        post_many(&m, &t, *instance, 150, "before").await;
    }
    r.wait_for("the drain under way", WAIT, |seen| seen.len() >= 10)
        .await;
    let (status, body) =
        patch_app(&m, t.app, json!({"destinos_permitidos": ["otro.example"]})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_suspended(&m, &t.token, sub, "destino_no_permitido").await;
    for instance in &t.instances {
        post_many(&m, &t, *instance, 20, "during").await;
    }
    let sent = sends_nothing(&r).await;
    assert!(sent < 340, "the suspension came before the end: {sent}");
    nothing_lost(&m, sub, 340).await;

    // Back on the list and reactivated: everything, once, in order.
    let (status, _) = patch_app(&m, t.app, json!({"destinos_permitidos": ["127.0.0.1"]})).await;
    assert_eq!(status, StatusCode::OK);
    tokio::time::sleep(CACHE).await;
    set_state(&m, &t, sub, "activa").await;
    wait_state(&m, sub, "entregada", 340).await;
    let seen = r.seen();
    for instance in &t.instances {
        let order = order_since(&seen, *instance, seen[0].at);
        assert_eq!(order, (1..=170).collect::<Vec<_>>(), "instance {instance}");
    }
}

/// A non-loopback IPv4 address of this machine, where a receiver can
/// listen and a name can point (a name may not resolve to loopback).
fn local_ip() -> IpAddr {
    let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
    socket
        .connect("192.0.2.1:9")
        .or_else(|_| socket.connect("8.8.8.8:53"))
        .expect("a non-loopback interface with a route");
    let ip = socket.local_addr().unwrap().ip();
    assert!(!ip.is_loopback() && !ip.is_unspecified(), "{ip}");
    ip
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_name_repointed_to_a_blocked_address_suspends_and_loses_nothing() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let ip = local_ip();
    let r = Receiver::start_on(&ip.to_string()).await;
    // A fresh connection for every attempt, so each one resolves the name.
    r.script(|_| Reply::status(204).with("connection", "close"));
    let name = format!("receptor-{}.test", uuid::Uuid::new_v4().simple());
    m.hosts.set(&name, &[ip]);
    let (status, _) = patch_app(&m, t.app, json!({"destinos_permitidos": [name]})).await;
    assert_eq!(status, StatusCode::OK);
    let url = format!("http://{name}:{}/hook", r.addr.port());
    let sub = subscribe(&m, &t, &r, json!({ "url": url })).await;
    post_many(&m, &t, a, 3, "before").await;
    wait_state(&m, sub, "entregada", 3).await;

    // The name now points at the cloud metadata address.
    m.hosts.set(&name, &["169.254.169.254".parse().unwrap()]);
    post_many(&m, &t, a, 3, "metadata").await;
    wait_suspended(&m, &t.token, sub, "destino_bloqueado").await;
    sends_nothing(&r).await;
    nothing_lost(&m, sub, 6).await;
    assert_eq!(states(&m, sub).await.get("pendiente"), Some(&3));

    // Reactivated while it points at the same address through NAT64: still
    // blocked.
    m.hosts.set(&name, &["64:ff9b::a9fe:a9fe".parse().unwrap()]);
    set_state(&m, &t, sub, "activa").await;
    wait_suspended(&m, &t.token, sub, "destino_bloqueado").await;
    sends_nothing(&r).await;
    nothing_lost(&m, sub, 6).await;

    // Back to the receiver: the three waiting, in order.
    m.hosts.set(&name, &[ip]);
    let back = Instant::now();
    set_state(&m, &t, sub, "activa").await;
    wait_state(&m, sub, "entregada", 6).await;
    assert_eq!(order_since(&r.seen(), a, back), [4, 5, 6]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_that_no_longer_opens_suspends_with_no_secret() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({})).await;
    post_many(&m, &t, a, 2, "before").await;
    wait_state(&m, sub, "entregada", 2).await;

    // The sealed key is damaged (as after a wrong MOTOR_MASTER_KEY): no
    // live key can sign.
    sqlx::query("UPDATE subscription_keys SET sealed = '\\x00'::bytea WHERE subscription_id = $1")
        .bind(sub.as_uuid())
        .execute(&m.db.pool)
        .await
        .unwrap();
    // The signing keys are read per subscription version: a PATCH of its
    // name bumps it, so the next attempt reads the damaged key.
    let (status, body) = call(
        &m,
        Method::PATCH,
        &format!("/v1/subscriptions/{sub}"),
        &t.token,
        Some(json!({"nombre": "receptor 2"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    post_many(&m, &t, a, 3, "unsigned").await;
    wait_suspended(&m, &t.token, sub, "sin_secreto").await;
    let sent = sends_nothing(&r).await;
    assert_eq!(sent, 2, "nothing unsigned went out");
    nothing_lost(&m, sub, 5).await;

    // A rotation issues a new key; reactivated, the three go out signed by
    // it, in order.
    let new_key = rotate_trusted(&m, &t, sub, &r).await;
    let back = Instant::now();
    set_state(&m, &t, sub, "activa").await;
    wait_state(&m, sub, "entregada", 5).await;
    let seen = r.seen();
    assert_eq!(order_since(&seen, a, back), [3, 4, 5]);
    for s in seen.iter().filter(|s| s.at >= back) {
        assert!(s.verified, "{s:?}");
        assert_eq!(
            s.key_ids.join(","),
            new_key,
            "only the key that opens signs"
        );
    }
}
