//! Broker faults: RabbitMQ connections closed mid-run, Nacks and returned
//! messages, a JetStream stream deleted and recreated, refused
//! credentials. Retries, no loss, order kept; a refusal is never recorded
//! as delivered.

use std::{collections::HashMap, time::Duration};

use reqwest::{Method, StatusCode};
use serde_json::json;

use super::{
    attempt_errors, check_arrivals,
    clients::{close_all_rabbit_connections, reject_when_full, Got, NatsSetup, RabbitSetup},
    ledger, motor, post_many, states, subscribe, wait_state,
};
use crate::{
    deliveries::set_state,
    subscriptions::call,
    util::{TestMotor, ADMIN_TOKEN},
};
use motor_domain::subscription::SubscriptionId;

/// Waits until `check` holds for the subscription's attempt errors.
async fn wait_errors(
    m: &TestMotor,
    sub: SubscriptionId,
    what: &str,
    check: impl Fn(&HashMap<Option<String>, i64>) -> bool,
) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let errors = attempt_errors(m, sub).await;
        if check(&errors) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "waiting for {what}: {errors:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn count(errors: &HashMap<Option<String>, i64>, code: &str) -> i64 {
    errors.get(&Some(code.to_owned())).copied().unwrap_or(0)
}

async fn delivered(m: &TestMotor, sub: SubscriptionId) -> i64 {
    states(m, sub).await.get("entregada").copied().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_connections_closed_mid_run_lose_nothing() {
    let _rabbit = super::clients::RABBIT.write().await;
    const PER_INSTANCE: usize = 150;
    let m = motor().await;
    let t = m.tenant(5).await;
    let rabbit = RabbitSetup::new("cut", true, Default::default()).await;
    let sub = subscribe(&m, &t, json!({"nombre": "r", "url": rabbit.url("")})).await;
    for instance in &t.instances {
        post_many(&m, &t, *instance, PER_INSTANCE, "brokers").await;
    }
    let total = (PER_INSTANCE * t.instances.len()) as i64;
    for at_least in [total / 5, total / 2] {
        while delivered(&m, sub.id).await < at_least {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        close_all_rabbit_connections();
    }
    wait_state(&m, sub.id, "entregada", total, Duration::from_secs(60)).await;
    let got = rabbit
        .take_all(total as usize, Duration::from_secs(30))
        .await;
    // A publish confirmed just before the cut may come again (same
    // delivery id); nothing is missing and order holds.
    let extra = rabbit.take(total as usize).await;
    let all: Vec<Got> = got.into_iter().chain(extra).collect();
    check_arrivals(&all, &sub, &ledger(&m).await, PER_INSTANCE);
    rabbit.delete().await;
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_nacks_and_returns_are_never_delivered() {
    let _rabbit = super::clients::RABBIT.read().await;
    let m = motor().await;
    let t = m.tenant(2).await;
    let instance = t.instances[0];

    // Unroutable: no queue bound yet. Retried as broker_sin_ruta.
    let rabbit = RabbitSetup::new("route", false, Default::default()).await;
    let sub = subscribe(&m, &t, json!({"nombre": "r", "url": rabbit.url("")})).await;
    post_many(&m, &t, instance, 5, "brokers").await;
    wait_errors(&m, sub.id, "broker_sin_ruta retries", |e| {
        count(e, "broker_sin_ruta") >= 3
    })
    .await;
    assert_eq!(delivered(&m, sub.id).await, 0);
    assert_eq!(
        count(&attempt_errors(&m, sub.id).await, "broker_rechazo"),
        0
    );
    rabbit.bind().await;
    wait_state(&m, sub.id, "entregada", 5, Duration::from_secs(30)).await;
    let got = rabbit.take_all(5, Duration::from_secs(10)).await;
    check_arrivals(&got, &sub, &ledger(&m).await, 5);
    rabbit.delete().await;

    // Nacked: the queue refuses publishes once it holds 2.
    let full = RabbitSetup::new("nack", true, reject_when_full(2)).await;
    let sub = subscribe(&m, &t, json!({"nombre": "n", "url": full.url("")})).await;
    post_many(&m, &t, t.instances[1], 6, "brokers").await;
    wait_errors(&m, sub.id, "broker_rechazo retries", |e| {
        count(e, "broker_rechazo") >= 3
    })
    .await;
    assert_eq!(delivered(&m, sub.id).await, 2, "only what the queue took");
    // Drain as a consumer would; every Nacked one is retried and lands.
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while got.len() < 6 {
        got.extend(full.take(6).await);
        assert!(std::time::Instant::now() < deadline, "{} of 6", got.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_state(&m, sub.id, "entregada", 6, Duration::from_secs(30)).await;
    check_arrivals(&got, &sub, &ledger(&m).await, 6);
    full.delete().await;
    m.stop().await;
}

/// The stream is deleted while deliveries are under way, then recreated.
/// What it held is read just before the deletion, with the subscription
/// paused for that moment (a plain subscriber on the subject would answer
/// JetStream's publish in the stream's place and hide the missing stream
/// as a timeout), so "nothing lost" is checked on snapshot + new stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_stream_deleted_mid_run_loses_nothing() {
    const PER_INSTANCE: usize = 100;
    let m = motor().await;
    let t = m.tenant(10).await;
    let stream = NatsSetup::new("gone").await;
    let sub = subscribe(&m, &t, json!({"nombre": "n", "url": stream.url("{type}")})).await;
    for instance in &t.instances {
        post_many(&m, &t, *instance, PER_INSTANCE, "brokers").await;
    }
    let total = (PER_INSTANCE * t.instances.len()) as i64;
    while delivered(&m, sub.id).await < total / 10 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    set_state(&m, &t, sub.id, "pausada").await;
    // In-flight attempts finish and are recorded.
    let mut settled = delivered(&m, sub.id).await;
    loop {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let now = delivered(&m, sub.id).await;
        if now == settled {
            break;
        }
        settled = now;
    }
    assert!(settled < total, "the run is still under way");
    let before = stream
        .read_all(settled as usize, Duration::from_secs(10))
        .await;
    assert_eq!(before.len() as i64, settled);
    stream.delete_stream().await;
    set_state(&m, &t, sub.id, "activa").await;
    wait_errors(&m, sub.id, "sin_stream retries", |e| {
        count(e, "sin_stream") >= 5
    })
    .await;
    assert_eq!(
        delivered(&m, sub.id).await,
        settled,
        "nothing is delivered while no stream captures the subject"
    );
    stream.create_stream().await;
    wait_state(&m, sub.id, "entregada", total, Duration::from_secs(60)).await;
    let after = stream
        .read_all((total - settled) as usize, Duration::from_secs(10))
        .await;
    let all: Vec<Got> = before.into_iter().chain(after).collect();
    assert_eq!(all.len() as i64, total, "each delivery stored once");
    check_arrivals(&all, &sub, &ledger(&m).await, PER_INSTANCE);
    stream.delete().await;
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_credentials_suspend_until_fixed_then_everything_goes_in_order() {
    let _rabbit = super::clients::RABBIT.read().await;
    let m = motor().await;
    let t = m.tenant(2).await;
    let rabbit = RabbitSetup::new("login", true, Default::default()).await;
    let sub = subscribe(
        &m,
        &t,
        json!({"nombre": "r", "url": rabbit.url(""), "credenciales": {"usuario": "guest", "clave": "equivocada"}}),
    )
    .await;
    for instance in &t.instances {
        post_many(&m, &t, *instance, 10, "brokers").await;
    }
    let path = format!("/v1/subscriptions/{}", sub.id);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let got = loop {
        let (_, got) = call(&m, Method::GET, &path, &t.token, None).await;
        if got["estado"] == "suspendida" {
            break got;
        }
        assert!(std::time::Instant::now() < deadline, "{got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(got["motivo"], "rechazo_credenciales");
    let (_, alerts) = call(
        &m,
        Method::GET,
        "/v1/admin/alerts?estado=abierta",
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert!(
        alerts.to_string().contains(&sub.id.to_string())
            && alerts.to_string().contains("rechazo_credenciales"),
        "an open alert names it: {alerts}"
    );
    assert_eq!(states(&m, sub.id).await.get("pendiente"), Some(&20));
    assert!(rabbit.take(1).await.is_empty());

    let (status, fixed) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"credenciales": {"usuario": "guest", "clave": "guest"}, "estado": "activa"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{fixed}");
    wait_state(&m, sub.id, "entregada", 20, Duration::from_secs(60)).await;
    let got = rabbit.take_all(20, Duration::from_secs(10)).await;
    check_arrivals(&got, &sub, &ledger(&m).await, 10);
    rabbit.delete().await;
    m.stop().await;
}
