//! What operators see and do (issue 15): the metrics after a known run,
//! reconciliation and `motor doctor`, the operator API across apps, and
//! the web console.

mod api;
pub(crate) mod console;
mod console_inert;
mod console_manage;
mod logs;
mod metrics;
#[cfg(feature = "otlp")]
mod otlp;
mod reconcile;

use std::{collections::HashMap, time::Duration};

use serde_json::{json, Value};

use crate::{
    dispatch::{receiver::Receiver, WAIT},
    util::{Tenant, TestMotor},
};

/// Through the API of a `motor serve` process at `base`: a subscription
/// to `r` (whose secret `r` trusts) and one event on the tenant's first
/// instance; the subscription's and the event's ids.
pub async fn subscribe_and_post(base: &str, t: &Tenant, r: &Receiver) -> (String, String) {
    let http = reqwest::Client::new();
    let created: Value = http
        .post(format!("{base}/v1/subscriptions"))
        .bearer_auth(&t.token)
        .json(&json!({"nombre": "r", "url": r.url()}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sub = created["suscripcion"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no subscription id: {created}"))
        .to_owned();
    r.trust(
        created["secreto"]["key_id"].as_str().unwrap(),
        created["secreto"]["valor"].as_str().unwrap(),
    );
    let envelope: Value = http
        .post(format!("{base}/v1/instances/{}/events", t.instances[0]))
        .bearer_auth(&t.token)
        .json(&json!({"type": "t", "data": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let event_id = envelope["event_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no event id: {envelope}"))
        .to_owned();
    (sub, event_id)
}

/// `/metrics` parsed: each sample line (`name{labels}` → value).
pub async fn scrape(m: &TestMotor) -> HashMap<String, f64> {
    m.metrics()
        .await
        .lines()
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
