//! What operators see and do (issue 15): the metrics after a known run,
//! reconciliation and `motor doctor`, the operator API across apps, and
//! the web console.

mod api;
mod console;
mod logs;
mod metrics;
#[cfg(feature = "otlp")]
mod otlp;
mod reconcile;

use std::{collections::HashMap, time::Duration};

use motor_domain::subscription::SubscriptionId;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::{
    dispatch::receiver::Receiver,
    subscriptions::create,
    util::{Tenant, TestDb, TestMotor, ALL_ROLES},
};

pub const WAIT: Duration = Duration::from_secs(60);

/// Motor with every role and a retry schedule of 200 ms … 1.2 s.
pub async fn motor() -> TestMotor {
    TestMotor::start_configured(TestDb::new().await, &ALL_ROLES, |c| {
        c.retry_schedule_ms = Some(vec![200, 400, 600, 800, 1000, 1200]);
    })
    .await
}

/// A subscription to the receiver (`extra` adds fields), whose secret the
/// receiver trusts.
pub async fn subscribe(m: &TestMotor, t: &Tenant, r: &Receiver, extra: Value) -> SubscriptionId {
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

/// `/metrics` parsed: each sample line (`name{labels}` → value).
pub async fn scrape(m: &TestMotor) -> HashMap<String, f64> {
    let response = m.http.get(m.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("{l}"));
            (
                name.to_owned(),
                value.parse().unwrap_or_else(|_| panic!("{l}")),
            )
        })
        .collect()
}

/// Waits until the scraped metrics satisfy `check`; returns them.
pub async fn scrape_until(
    m: &TestMotor,
    what: &str,
    check: impl Fn(&HashMap<String, f64>) -> bool,
) -> HashMap<String, f64> {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let metrics = scrape(m).await;
        if check(&metrics) {
            return metrics;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}: {metrics:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
