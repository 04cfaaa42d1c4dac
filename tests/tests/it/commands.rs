//! Commands reach executors through `{prefix}.commands`: the relay
//! publishes the store's outbox records for the new topic like any other
//! (no relay change), keyed by instance, in acceptance order per instance
//! (here). The producer's routes through HTTP: `producer.rs` (accept,
//! read, list, idempotency, generation, cancel), `refusals.rs` (scopes,
//! other apps, every 422 and 413), with the helpers in `client.rs`.

mod client;
mod producer;
mod refusals;

use std::time::Duration;

use motor::serve::Role;
use motor_domain::{
    command::{IdempotencyKey, NewCommand, RawOperation, RawOptions, RawSend},
    time,
};
use serde_json::{json, Value};

use crate::util::{read_topic, wait_outbox_empty, TestMotor};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn accepted_commands_reach_the_commands_topic_keyed_by_instance_in_order() {
    let m = TestMotor::start(&[Role::Relay]).await;
    let t = m.tenant(2).await;
    let now = time::now_millis();
    let mut accepted: Vec<(String, String)> = Vec::new();
    for round in 0..3 {
        for instance in &t.instances {
            let content = json!({ "texto": format!("hola {round}") });
            let new = if round == 1 {
                NewCommand::operation(
                    RawOperation {
                        kind: Some("reconectar"),
                        parameters: None,
                        options: RawOptions::default(),
                    },
                    now,
                )
            } else {
                NewCommand::send(
                    RawSend {
                        chat: Some("549"),
                        content: Some(&content),
                        options: RawOptions::default(),
                    },
                    now,
                )
            }
            .unwrap();
            let key = IdempotencyKey::parse(&format!("k{round}")).unwrap();
            let mut tx = m.db.pool.begin().await.unwrap();
            let stored =
                motor_store::commands::insert(&mut tx, t.app, *instance, &new, Some(&key), now)
                    .await
                    .unwrap();
            tx.commit().await.unwrap();
            accepted.push((instance.to_string(), stored.command.id.to_string()));
        }
    }
    wait_outbox_empty(&m.db.pool, Duration::from_secs(30)).await;
    let records = read_topic(&format!("{}.commands", m.prefix), accepted.len());
    assert_eq!(records.len(), accepted.len(), "no duplicates expected here");
    for instance in &t.instances {
        let instance = instance.to_string();
        let want: Vec<&str> = accepted
            .iter()
            .filter(|(i, _)| *i == instance)
            .map(|(_, c)| c.as_str())
            .collect();
        let mine: Vec<_> = records.iter().filter(|r| r.key == instance).collect();
        let partitions: std::collections::HashSet<i32> = mine.iter().map(|r| r.partition).collect();
        assert_eq!(partitions.len(), 1, "one partition per instance");
        let mut mine = mine;
        mine.sort_by_key(|r| r.offset);
        let got: Vec<String> = mine
            .iter()
            .map(|r| {
                let payload: Value = serde_json::from_slice(&r.payload).unwrap();
                assert_eq!(payload["instance_id"], instance.as_str());
                assert_eq!(
                    r.headers["command_id"],
                    payload["command_id"].as_str().unwrap()
                );
                payload["command_id"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(got, want, "instance {instance}: acceptance order");
    }
}
