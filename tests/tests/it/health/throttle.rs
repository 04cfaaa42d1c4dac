//! Adaptive throttling: a 429 with `Retry-After` from one lane holds every
//! lane of the subscription until the time passes — a 429 storm across 20
//! instances of one subscription does not see the receiver asked again
//! before it said — the attempt shows `throttled`, and another
//! subscription of the same app is not slowed.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::{json, Value};

use crate::{
    deliveries::post,
    dispatch::{
        motor,
        receiver::{Receiver, Reply},
        subscribe, wait_state,
    },
    subscriptions::call,
};

const RETRY_AFTER: Duration = Duration::from_secs(3);
const STORM: Duration = Duration::from_secs(7);
/// Attempts already under way when a 429 is answered may still arrive:
/// the hold is written right after the answer is recorded.
const IN_FLIGHT: Duration = Duration::from_millis(500);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_429_storm_across_20_instances_holds_the_whole_subscription() {
    let m = motor(None).await;
    let t = m.tenant(20).await;
    let stormy = Receiver::start().await;
    let started: Arc<Mutex<Option<Instant>>> = Arc::default();
    let first = started.clone();
    stormy.script(move |_| {
        let begun = *first.lock().unwrap().get_or_insert_with(Instant::now);
        if begun.elapsed() < STORM {
            Reply::status(429).with("retry-after", RETRY_AFTER.as_secs().to_string())
        } else {
            Reply::status(204)
        }
    });
    let calm = Receiver::start().await;
    let stormy_sub = subscribe(&m, &t, &stormy, json!({})).await;
    let calm_sub = subscribe(&m, &t, &calm, json!({})).await;

    // One event per instance, 100 ms apart: without a shared hold, each
    // lane's first attempt would find the receiver on its own.
    let posted = Instant::now();
    for instance in &t.instances {
        post(&m, &t, *instance, json!({"type": "t", "data": {}})).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_state(&m, calm_sub, "entregada", 20).await;
    let calm_took = posted.elapsed();
    wait_state(&m, stormy_sub, "entregada", 20).await;

    // After every 429, nothing reached the receiver until its Retry-After
    // had passed, but what was already under way.
    let seen = stormy.seen();
    let storm_end = seen[0].at + STORM;
    let refused: Vec<Instant> = seen
        .iter()
        .map(|s| s.at)
        .filter(|at| *at < storm_end)
        .collect();
    let mut early = Vec::new();
    for (i, asked) in refused.iter().enumerate() {
        for (j, s) in seen.iter().enumerate() {
            if s.at > *asked + IN_FLIGHT && s.at + Duration::from_millis(100) < *asked + RETRY_AFTER
            {
                early.push((i, j, s.at.duration_since(*asked)));
            }
        }
    }
    assert!(
        early.is_empty(),
        "asked again before Retry-After: {early:?} ({} requests)",
        seen.len()
    );
    // Each hold ends in at most one attempt per lane: far fewer than 20
    // lanes retrying on their own schedule.
    let max_rounds = (STORM.as_secs_f64() / RETRY_AFTER.as_secs_f64()).ceil() as usize + 1;
    assert!(
        refused.len() <= 20 * max_rounds,
        "{} refused requests",
        refused.len()
    );
    eprintln!(
        "429 storm: {} requests refused in {:?}, {} in all; the calm subscription took {calm_took:?}",
        refused.len(),
        STORM,
        seen.len()
    );

    // The attempts that got the 429 show `throttled`; the rest do not.
    let (_, list) = call(
        &m,
        Method::GET,
        &format!("/v1/deliveries?suscripcion_id={stormy_sub}&por_pagina=20"),
        &t.token,
        None,
    )
    .await;
    let mut throttled = 0;
    for d in list["entregas"].as_array().unwrap() {
        let id = d["delivery_id"].as_str().unwrap();
        let (_, detail) = call(
            &m,
            Method::GET,
            &format!("/v1/deliveries/{id}"),
            &t.token,
            None,
        )
        .await;
        for a in detail["intentos_detalle"].as_array().unwrap() {
            assert_eq!(a["throttled"], a["status"] == 429, "{a}");
            throttled += usize::from(a["throttled"] == Value::Bool(true));
        }
    }
    assert_eq!(throttled, refused.len());

    // The other subscription of the app was not slowed: its 20 went out
    // as they were posted, long before the storm ended.
    assert_eq!(calm.seen().len(), 20);
    assert!(calm_took < STORM, "{calm_took:?}");
}
