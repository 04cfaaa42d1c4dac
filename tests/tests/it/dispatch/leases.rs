//! A claim that waits for a slot of its unordered subscription longer than
//! its lease allows: the lease runs out, the sweeper hands the delivery to
//! another claim, which sends and records it. The waiting claim must then
//! not send it again: it renews its lease before its attempt, and one that
//! was lost meanwhile is dropped.

use std::{collections::HashMap, time::Duration};

use motor::serve::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{
    receiver::{Receiver, Reply},
    subscribe, wait_state,
};
use crate::{deliveries::post, health::patch_settings, util::TestMotor};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_that_wait_past_their_lease_for_a_slot_are_not_sent_twice() {
    // The API, the relay and the sweeper in one process, the dispatcher in
    // another (as in the fault matrix): the dispatcher takes every job of
    // the backlog at once, each waiting for one of the subscription's 8
    // slots, and the chains' claims queue behind them.
    let front = TestMotor::start(&[Role::Api, Role::Relay, Role::Sweeper]).await;
    // A 1 s timeout: a claim's lease is 6 s.
    let (status, body) = patch_settings(&front, json!({"webhooks.timeout_segundos": 1})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let back = TestMotor::start_configured(front.db.clone(), &[Role::Dispatch, Role::Retry], |c| {
        c.topic_prefix = front.prefix.clone()
    })
    .await;
    let t = front.tenant(1).await;
    let receiver = Receiver::start().await;
    // 8 at a time at 300 ms each: about 27 a second, so the last of 300
    // waits about 11 s for a slot.
    receiver.script(|_| Reply::status(204).after(Duration::from_millis(300)));
    let sub = subscribe(&front, &t, &receiver, json!({"ordenado": false})).await;
    for batch in 0..3 {
        let events: Vec<Value> = (0..100)
            .map(|i| json!({"type": "message.sent", "data": {"batch": batch, "i": i}}))
            .collect();
        post(&front, &t, t.instances[0], Value::Array(events)).await;
    }

    wait_state(&front, sub, "entregada", 300).await;
    // A stale claim would be sent after the delivery was recorded.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut sent: HashMap<String, usize> = HashMap::new();
    for seen in receiver.seen() {
        *sent.entry(seen.delivery_id).or_default() += 1;
    }
    let twice: Vec<_> = sent.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    assert_eq!(sent.len(), 300);
    back.stop().await;
    front.stop().await;
}
