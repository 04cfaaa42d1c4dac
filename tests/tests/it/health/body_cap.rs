//! The body cap (seed 003): no delivery's body is over 256 KiB. `data`
//! whose envelope cannot fit is refused with a 413 naming it; an optional
//! `metadata` object is dropped first, with `"metadata_omitted": true`,
//! when the rest fits — and that is what the ledger keeps and every
//! receiver gets.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{
    dispatch::{motor, receiver::Receiver, subscribe, wait_state, WAIT},
    subscriptions::call,
};

const CAP: usize = 256 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metadata_is_dropped_first_and_data_that_cannot_fit_is_refused() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({})).await;
    let events = format!("/v1/instances/{instance}/events");

    // A result that fills the body by itself, with 4 KB of metadata.
    let result = "r".repeat(CAP - 2_000);
    let metadata = json!({"pedido": "p".repeat(4_000)});
    let (status, stored) = call(
        &m,
        Method::POST,
        &events,
        &t.token,
        Some(json!({"type": "job.succeeded", "data": {"result": result, "metadata": metadata}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(stored["data"]["metadata_omitted"], true);
    assert!(stored["data"].get("metadata").is_none());
    assert_eq!(
        stored["data"]["result"].as_str().unwrap().len(),
        result.len()
    );

    // Small enough: metadata stays, nothing is added.
    let (status, small) = call(
        &m,
        Method::POST,
        &events,
        &t.token,
        Some(json!({"type": "job.succeeded", "data": {"result": "ok", "metadata": metadata}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(small["data"]["metadata"], metadata);
    assert!(small["data"].get("metadata_omitted").is_none());

    // Cannot fit even without metadata, or has none: 413 naming data, in a
    // batch the element's; nothing of the batch is stored.
    let huge = "r".repeat(CAP);
    for (body, field) in [
        (
            json!({"type": "t", "data": {"result": huge, "metadata": {}}}),
            "body.data",
        ),
        (
            json!({"type": "t", "data": "x".repeat(CAP - 100)}),
            "body.data",
        ),
        (
            json!([{"type": "t", "data": 1}, {"type": "t", "data": {"result": huge}}]),
            "body[1].data",
        ),
    ] {
        let (status, answer) = call(&m, Method::POST, &events, &t.token, Some(body)).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
        assert_eq!(answer["error"]["campo"], field);
    }

    // The ledger keeps the capped form, and the receiver gets those bytes,
    // under the cap.
    let (_, page) = call(
        &m,
        Method::GET,
        &format!("{events}?limit=10"),
        &t.token,
        None,
    )
    .await;
    let ledger: Vec<Value> = page["events"].as_array().unwrap().clone();
    assert_eq!(ledger.len(), 2, "the refused batch stored nothing");
    assert_eq!(ledger[0]["data"]["metadata_omitted"], true);
    wait_state(&m, sub, "entregada", 2).await;
    r.wait_for("2 deliveries", WAIT, |seen| seen.len() >= 2)
        .await;
    let seen = r.seen();
    let big = seen.iter().find(|s| s.seq == 1).unwrap();
    assert!(big.body.len() <= CAP, "{} bytes", big.body.len());
    let body: Value = serde_json::from_slice(&big.body).unwrap();
    assert_eq!(body, ledger[0]);
}
