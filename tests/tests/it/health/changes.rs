//! What an attempt reads without a version — its app (the allowed
//! destinations, `politica_destinos`), the settings, whether its
//! subscription is ordered — is trusted while Postgres announces its
//! changes (migration 0032, `motor_store::changes`): read once for many
//! attempts, read again at the attempt after any change, and forgotten
//! when the listener's connection is lost.

use std::{
    cell::Cell,
    time::{Duration, Instant},
};

use motor_store::changes::{ATTEMPT_READS, TRUSTED_WHILE_LISTENING};
use reqwest::{Method, StatusCode};
use serde_json::json;

use super::{patch_app, patch_settings, wait_suspended};
use crate::{
    dispatch::{motor, post_many, receiver::Receiver, subscribe, wait_state},
    subscriptions::call,
    util::TestMotor,
};

/// `motor_attempt_lookups_total`.
async fn lookups(m: &TestMotor) -> u64 {
    m.counter("motor_attempt_lookups").await
}

/// Longer than the second they are trusted without a listener.
const PAST_A_SECOND: Duration = Duration::from_millis(1_300);

/// Long enough for an announcement to reach the listener, and far
/// shorter than the trust of a listening process (30 s): where no
/// condition shows that it arrived (nothing is attempted meanwhile).
const ANNOUNCED: Duration = Duration::from_millis(300);

/// How long an attempt may take to read again after a change: a third
/// of a listening process's trust, so only the announcement (or the
/// listener's loss) can explain the read.
const HEARD_WITHIN: Duration = Duration::from_secs(TRUSTED_WHILE_LISTENING.as_secs() / 3);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_without_a_version_are_trusted_until_a_change_is_announced() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({})).await;
    m.listening(ATTEMPT_READS).await;
    let delivered = Cell::new(0);
    let deliver_one = async |tag: &str| {
        post_many(&m, &t, instance, 1, tag).await;
        delivered.set(delivered.get() + 1);
        wait_state(&m, sub, "entregada", delivered.get()).await;
    };
    // Delivers one event at a time until an attempt reads again (more
    // than `before` reads): `what` was heard.
    let read_again = async |what: &str, before: u64| {
        let since = Instant::now();
        loop {
            deliver_one(what).await;
            if lookups(&m).await > before {
                return;
            }
            assert!(since.elapsed() < HEARD_WITHIN, "{what}: not read again");
        }
    };

    deliver_one("first").await;
    let read = lookups(&m).await;
    assert!(read > 0, "the first attempt read them");
    for _ in 0..3 {
        tokio::time::sleep(PAST_A_SECOND).await;
        deliver_one("trusted").await;
    }
    assert_eq!(lookups(&m).await, read, "read again within the trust");

    // Each table's change is announced: the next attempt reads again.
    let path = format!("/v1/subscriptions/{sub}");
    let changes = [
        (
            "settings",
            json!({"webhooks.destinos_permitidos": ["global.example"]}),
        ),
        ("subscription", json!({"ordenado": false})),
        ("app", json!({"nombre": "Renombrada"})),
    ];
    for (what, body) in changes {
        let before = lookups(&m).await;
        let (status, answer) = match what {
            "settings" => patch_settings(&m, body).await,
            "subscription" => call(&m, Method::PATCH, &path, &t.token, Some(body)).await,
            _ => patch_app(&m, t.app, body).await,
        };
        assert_eq!(status, StatusCode::OK, "{what}: {answer}");
        read_again(&format!("a change of the {what}"), before).await;
    }

    // The listener's connection is lost: what it trusted is forgotten.
    let before = lookups(&m).await;
    assert_eq!(m.end_listeners(ATTEMPT_READS).await, 1, "one listens");
    read_again("the listener's loss", before).await;
    m.listening(ATTEMPT_READS).await;

    // The receiver's host leaves the app's list: the very next attempt
    // is refused, not one 30 s of trust later. The app is read first by
    // a listening process (the one just told it listens again).
    tokio::time::sleep(ANNOUNCED).await;
    deliver_one("listening again").await;
    let (status, answer) =
        patch_app(&m, t.app, json!({"destinos_permitidos": ["otro.example"]})).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    tokio::time::sleep(ANNOUNCED).await;
    post_many(&m, &t, instance, 1, "refused").await;
    wait_suspended(&m, &t.token, sub, "destino_no_permitido").await;
    assert_eq!(
        r.seen().len(),
        delivered.get() as usize,
        "nothing sent after the change"
    );
    m.stop().await;
}
