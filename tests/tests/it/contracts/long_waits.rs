//! A retry wait longer than the longest delay tier (Visito's 2 h, 8 h,
//! 24 h; Asixto's longest draws) is parked in Postgres, not held by the
//! retry consumer: with the tiers shortened (`MOTOR_RETRY_SCHEDULE_MS`,
//! longest 600 ms, so anything over 720 ms parks) and a stand-in ladder
//! whose first wait is 10 s, the delivery waits with no job and no lease,
//! a consumer allowed one job at a time still moves another
//! subscription's short retries meanwhile, and the sweeper hands the
//! parked one back once due — never before.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{extract::State, http::StatusCode as AxumStatus, routing, Router};
use chrono::{DateTime, Utc};
use motor_domain::contract::Ladder;
use serde_json::json;

use super::{attempts, sub_id, WAIT};
use crate::{
    deliveries::post,
    dispatch::wait_state,
    subscriptions::create_ok,
    util::{serve_loopback, TestDb, TestMotor, ALL_ROLES},
};

/// How many requests each path got; each fails its first `fails`.
#[derive(Clone, Default)]
struct Counts(Arc<Mutex<HashMap<String, usize>>>);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wait_longer_than_the_longest_tier_is_parked_not_held() {
    let stand_in = Ladder::parse_stand_in("visito@1=10000;simetrica=0;intentos=2").unwrap();
    let m = TestMotor::start_configured(TestDb::new().await, &ALL_ROLES, |c| {
        c.retry_schedule_ms = Some(vec![100, 200, 300, 400, 500, 600]);
        c.test_ladders = vec![stand_in];
        // One job at a time per consumer: a held job would stop every
        // other retry.
        c.dispatch_in_flight = 1;
    })
    .await;
    let t = m.tenant(1).await;
    let counts = Counts::default();
    let app = Router::new()
        .route(
            "/{which}",
            routing::post(
                |State(c): State<Counts>,
                 axum::extract::Path(which): axum::extract::Path<String>| async move {
                    let mut seen = c.0.lock().unwrap();
                    let n = seen.entry(which.clone()).or_default();
                    *n += 1;
                    // `corto` fails twice (waits 100 and 200 ms in the
                    // short tiers), the others once.
                    let fails = if which == "corto" { 2 } else { 1 };
                    if *n > fails {
                        AxumStatus::OK
                    } else {
                        AxumStatus::SERVICE_UNAVAILABLE
                    }
                },
            ),
        )
        .with_state(counts.clone());
    let addr = serve_loopback(app).await;
    // The retry consumer joins its group seconds after start: one retry
    // through it first.
    let warm = sub_id(&create_ok(&m, &t, json!({"url": format!("http://{addr}/calentar")})).await);
    post(&m, &t, t.instances[0], json!([{"type": "t", "data": {}}])).await;
    wait_state(&m, warm, "entregada", 1).await;

    let long = sub_id(
        &create_ok(
            &m,
            &t,
            json!({"url": format!("http://{addr}/largo"), "contrato": "visito",
                   "tipos": ["largo"]}),
        )
        .await,
    );
    post(
        &m,
        &t,
        t.instances[0],
        json!([{"type": "largo", "data": {}}]),
    )
    .await;
    // Its first attempt failed: parked, no lease, due 10 s after it.
    let deadline = Instant::now() + WAIT;
    while attempts(&m, long).await.is_empty() {
        assert!(Instant::now() < deadline, "no first attempt");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (lease, due, state): (Option<DateTime<Utc>>, DateTime<Utc>, String) = sqlx::query_as(
        "SELECT reservado_hasta, proximo_intento, estado FROM deliveries WHERE subscription_id = $1",
    )
    .bind(long.as_uuid())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    let first = attempts(&m, long).await[0].0;
    assert_eq!((lease, state.as_str()), (None, "pendiente"));
    assert!(
        (due - first).num_milliseconds() >= 10_000,
        "due {due}, first attempt {first}"
    );

    // Meanwhile another subscription's short retries go through the one
    // slot, both before the parked delivery's due time.
    let short = sub_id(
        &create_ok(
            &m,
            &t,
            json!({"url": format!("http://{addr}/corto"), "tipos": ["corto"]}),
        )
        .await,
    );
    post(
        &m,
        &t,
        t.instances[0],
        json!([{"type": "corto", "data": {}}]),
    )
    .await;
    wait_state(&m, short, "entregada", 1).await;
    let short_done = attempts(&m, short).await.last().unwrap().0;
    assert_eq!(attempts(&m, long).await.len(), 1, "the parked one waits");
    assert!(
        short_done < due,
        "short retries done at {short_done}, the long one due {due}"
    );

    // The sweeper hands it back once due, never before.
    wait_state(&m, long, "entregada", 1).await;
    let rows = attempts(&m, long).await;
    assert_eq!(
        rows.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
        [Some(503), Some(200)]
    );
    assert!(
        rows[1].0 >= due,
        "second attempt {} before its due {due}",
        rows[1].0
    );
    assert_eq!(counts.0.lock().unwrap()["largo"], 2);
    m.stop().await;
}
