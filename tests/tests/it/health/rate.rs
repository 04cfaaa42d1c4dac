//! `max_por_segundo`: a subscription's attempts a second, bounded across
//! every lane and every dispatcher (a token bucket in Postgres), with two
//! dispatchers sharing the work; other subscriptions are not slowed.

use std::time::{Duration, Instant};

use motor::serve::Role;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{
    deliveries::post,
    dispatch::{motor, receiver::Receiver, subscribe, wait_state},
    subscriptions::{call, create},
    util::TestMotor,
};

const RATE: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_per_second_bounds_attempts_across_lanes_and_dispatchers() {
    let m = motor(None).await;
    // A second process's dispatcher on the same database and topics.
    let second = TestMotor::start_configured(m.db.clone(), &[Role::Dispatch, Role::Retry], |c| {
        c.topic_prefix = m.prefix.clone();
        c.retry_schedule_ms = Some(vec![200, 400, 600, 800, 1000, 1200]);
    })
    .await;
    let t = m.tenant(10).await;

    // 1–10 000 or null, named in the 422.
    let r = Receiver::start().await;
    for bad in [json!(0), json!(10_001), json!("5"), json!(2.5)] {
        let (status, body) = create(
            &m,
            &t.token,
            json!({"nombre": "x", "url": r.url(), "max_por_segundo": bad}),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        assert_eq!(body["error"]["campo"], "body.max_por_segundo", "{bad}");
    }
    let limited = subscribe(&m, &t, &r, json!({"max_por_segundo": RATE})).await;
    let free_receiver = Receiver::start().await;
    let free = subscribe(&m, &t, &free_receiver, json!({})).await;
    let (_, shown) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{limited}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(shown["max_por_segundo"], RATE);
    let (_, shown) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{free}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(shown["max_por_segundo"], Value::Null);

    let posted = Instant::now();
    for instance in &t.instances {
        let events: Vec<Value> = (0..3).map(|i| json!({"type": "t", "data": i})).collect();
        post(&m, &t, *instance, Value::Array(events)).await;
    }
    wait_state(&m, free, "entregada", 30).await;
    let free_took = posted.elapsed();
    wait_state(&m, limited, "entregada", 30).await;

    let at: Vec<Instant> = r.seen().iter().map(|s| s.at).collect();
    assert_eq!(at.len(), 30, "each delivered once");
    // The bucket holds one second's worth: at most RATE at once, then
    // RATE a second.
    let busiest = at
        .iter()
        .map(|start| {
            at.iter()
                .filter(|t| **t >= *start && **t < *start + Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap();
    let span = *at.iter().max().unwrap() - *at.iter().min().unwrap();
    eprintln!(
        "max_por_segundo {RATE}: 30 attempts over {span:?}, at most {busiest} in any second; unlimited: {free_took:?}"
    );
    assert!(busiest <= 2 * RATE, "{busiest} attempts in one second");
    let floor = Duration::from_secs_f64((30 - RATE) as f64 / RATE as f64 - 0.3);
    assert!(span >= floor, "30 attempts in {span:?}");
    assert!(
        free_took < span,
        "the other subscription is not slowed: {free_took:?}"
    );

    // null lifts the limit.
    let (status, body) = call(
        &m,
        Method::PATCH,
        &format!("/v1/subscriptions/{limited}"),
        &t.token,
        Some(json!({"max_por_segundo": null})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["max_por_segundo"], Value::Null);
    second.stop().await;
}
