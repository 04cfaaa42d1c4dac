//! `/metrics` after a known run: counts exact, histograms populated, the
//! sampled gauges (DLQ, pending, oldest pending, outbox, subscriptions,
//! consumer lag, memory) set by the sampler.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::scrape_until;
use crate::dispatch::{motor, subscribe, WAIT};
use crate::{
    deliveries::{post, set_state},
    dispatch::receiver::{Receiver, Reply},
};

fn tag(body: &[u8]) -> String {
    let envelope: Value = serde_json::from_slice(body).unwrap();
    envelope["data"]["tag"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_known_run_is_counted_exactly() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let r = Receiver::start().await;
    // `ok` is delivered at once; `gone` ends fallida (410); `flaky` fails
    // once with 503 then is delivered (one retry, in the 1 s tier).
    r.script(|seen| match (tag(&seen.body).as_str(), seen.previous) {
        ("gone", _) => Reply::status(410),
        ("flaky", 0) => Reply::status(503),
        _ => Reply::status(204),
    });
    let live = subscribe(&m, &t, &r, json!({})).await;
    let paused = subscribe(&m, &t, &r, json!({"nombre": "pausada"})).await;
    set_state(&m, &t, paused, "pausada").await;

    for (tag, source) in [("ok", "s-ok"), ("gone", "s-gone"), ("flaky", "s-flaky")] {
        post(
            &m,
            &t,
            instance,
            json!({"type": "message.sent", "data": {"tag": tag}, "source_id": source}),
        )
        .await;
    }
    // The same provider event again: answered from the ledger (200).
    let (status, _) = crate::subscriptions::call(
        &m,
        reqwest::Method::POST,
        &format!("/v1/instances/{instance}/events"),
        &t.token,
        Some(json!({"type": "message.sent", "data": {"tag": "ok"}, "source_id": "s-ok"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    r.wait_for("4 requests", WAIT, |seen| seen.len() >= 4).await;

    let app = t.app.to_string();
    let metrics = scrape_until(&m, "the run counted and sampled", |m| {
        m.get("motor_deliveries_finished_total{estado=\"entregada\"}") == Some(&2.0)
            && m.get("motor_dlq_size") == Some(&1.0)
            && m.get("motor_outbox_depth") == Some(&0.0)
            && m.get("motor_deliveries_pending") == Some(&3.0)
    })
    .await;
    let at = |name: &str| {
        *metrics
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in {metrics:#?}"))
    };
    assert_eq!(
        at(&format!(
            "motor_app_events_accepted_total{{app_id=\"{app}\"}}"
        )),
        3.0
    );
    assert_eq!(
        at(&format!(
            "motor_app_events_duplicate_total{{app_id=\"{app}\"}}"
        )),
        1.0
    );
    assert_eq!(at("motor_attempts_total{clase=\"2xx\"}"), 2.0);
    assert_eq!(at("motor_attempts_total{clase=\"4xx\"}"), 1.0);
    assert_eq!(at("motor_attempts_total{clase=\"5xx\"}"), 1.0);
    assert_eq!(at("motor_delivery_attempts_total"), 4.0);
    assert_eq!(
        at("motor_deliveries_finished_total{estado=\"fallida\"}"),
        1.0
    );
    assert_eq!(
        at("motor_deliveries_failed_total{ultimo_error=\"http_410\"}"),
        1.0
    );
    assert_eq!(at("motor_retries_total{tier=\"1s\"}"), 1.0);
    // Histograms: every producer request, attempt and delivered delivery
    // observed (three appends and the duplicate's).
    assert_eq!(at("motor_ingest_ack_duration_seconds_count"), 4.0);
    assert!(at("motor_ingest_ack_duration_seconds_sum") > 0.0);
    assert_eq!(at("motor_attempt_duration_seconds_count"), 4.0);
    assert_eq!(at("motor_delivery_latency_seconds_count"), 2.0);
    assert!(at("motor_attempt_duration_seconds_sum") > 0.0);
    assert!(at("motor_delivery_latency_seconds_sum") > 0.0);
    assert_eq!(
        at("motor_delivery_latency_seconds_bucket{le=\"+Inf\"}"),
        2.0
    );
    // The retried one waited ≥ 200 ms between its commit and its delivery.
    assert!(at("motor_delivery_latency_seconds_sum") >= 0.2);

    // Sampled: the paused subscription's three deliveries are pending.
    assert_eq!(at("motor_deliveries_pending"), 3.0);
    assert_eq!(at("motor_subscriptions{estado=\"activa\"}"), 1.0);
    assert_eq!(at("motor_subscriptions{estado=\"pausada\"}"), 1.0);
    assert_eq!(at("motor_subscriptions{estado=\"suspendida\"}"), 0.0);
    assert!(
        at(&format!(
            "motor_oldest_pending_age_seconds{{subscription_id=\"{paused}\"}}"
        )) > 0.0
    );
    assert!(!metrics
        .keys()
        .any(|k| k.contains(&format!("subscription_id=\"{live}\""))));
    assert_eq!(at("motor_outbox_oldest_age_seconds"), 0.0);
    assert!(at("motor_process_resident_memory_bytes") > 1e6);
    assert_eq!(at("motor_streams_open"), 0.0);
    assert!(at("motor_sampled_at_seconds") > 1.7e9);
    // Consumer lag of the dispatch group on its topic (read from Kafka).
    let lag = format!(
        "motor_consumer_lag{{group=\"{p}.dispatch\",topic=\"{p}.deliveries\"}}",
        p = m.prefix
    );
    let metrics = scrape_until(&m, "consumer lag sampled", |m| m.contains_key(&lag)).await;
    assert!(metrics[&lag] >= 0.0);
    m.stop().await;
}

/// Per instance and per event type (issue 36, item 4), with at most 2 of
/// each named: the first two instances and types seen have their own
/// label, the rest are summed under `other`, and no family shows more
/// than 3 values. `motor_build_info` carries the version.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn per_instance_and_type_metrics_keep_their_cardinality_bounded() {
    use crate::util::{TestDb, TestMotor, ALL_ROLES};

    let m = TestMotor::start_configured(TestDb::new().await, &ALL_ROLES, |c| {
        c.metrics_top_instances = 2;
        c.metrics_top_types = 2;
    })
    .await;
    let t = m.tenant(4).await;
    let r = Receiver::start().await;
    r.script(|seen| match tag(&seen.body).as_str() {
        "gone" => Reply::status(410),
        _ => Reply::status(204),
    });
    subscribe(&m, &t, &r, json!({})).await;
    // One event per instance, in order: i0 (a), i1 (b), i2 (c), i3 (c, fails).
    let events = [("a", "ok"), ("b", "ok"), ("c", "ok"), ("c", "gone")];
    for (i, (event_type, tag)) in events.iter().enumerate() {
        post(
            &m,
            &t,
            t.instances[i],
            json!({"type": event_type, "data": {"tag": tag}}),
        )
        .await;
    }
    let [i0, i1, ..] = [0, 1].map(|i| t.instances[i].to_string());
    // Every delivery counted, whatever order the four lanes finished in
    // (the first one, i0's, can finish last: waiting for i1's alone
    // scraped before it once).
    let metrics = scrape_until(&m, "the deliveries counted", |m| {
        m.get("motor_instance_deliveries_failed_total{instance=\"other\"}") == Some(&1.0)
            && m.get("motor_type_deliveries_delivered_total{event_type=\"other\"}") == Some(&1.0)
            && [&i0, &i1].iter().all(|i| {
                m.get(&format!(
                    "motor_instance_deliveries_delivered_total{{instance=\"{i}\"}}"
                )) == Some(&1.0)
            })
    })
    .await;
    let at = |name: String| {
        *metrics
            .get(&name)
            .unwrap_or_else(|| panic!("no {name} in {metrics:#?}"))
    };
    for (family, other) in [
        ("instance_events_accepted", 2.0),
        ("instance_deliveries_delivered", 1.0),
    ] {
        assert_eq!(
            at(format!("motor_{family}_total{{instance=\"{i0}\"}}")),
            1.0
        );
        assert_eq!(
            at(format!("motor_{family}_total{{instance=\"{i1}\"}}")),
            1.0
        );
        assert_eq!(
            at(format!("motor_{family}_total{{instance=\"other\"}}")),
            other
        );
    }
    for (family, other) in [
        ("type_events_accepted", 2.0),
        ("type_deliveries_delivered", 1.0),
    ] {
        assert_eq!(at(format!("motor_{family}_total{{event_type=\"a\"}}")), 1.0);
        assert_eq!(at(format!("motor_{family}_total{{event_type=\"b\"}}")), 1.0);
        assert_eq!(
            at(format!("motor_{family}_total{{event_type=\"other\"}}")),
            other
        );
    }
    assert_eq!(
        at("motor_type_deliveries_failed_total{event_type=\"other\"}".into()),
        1.0
    );
    assert_eq!(
        at(format!(
            "motor_instance_delivery_latency_seconds_count{{instance=\"{i0}\"}}"
        )),
        1.0
    );
    assert_eq!(
        at(format!(
            "motor_build_info{{version=\"{}\"}}",
            env!("CARGO_PKG_VERSION")
        )),
        1.0
    );
    // No instance label beyond the two named and other; none for i2, i3.
    for (label, limit) in [("instance", 2), ("event_type", 2)] {
        let values: std::collections::BTreeSet<&str> = metrics
            .keys()
            .filter_map(|k| k.split(&format!("{label}=\"")).nth(1))
            .filter_map(|rest| rest.split('"').next())
            .collect();
        assert!(values.len() <= limit + 1, "{label}: {values:?}");
        assert!(values.contains("other"), "{label}: {values:?}");
    }
    for i in [2, 3] {
        let id = t.instances[i].to_string();
        assert!(!metrics.keys().any(|k| k.contains(&id)), "{id} is named");
    }
    m.stop().await;
}
