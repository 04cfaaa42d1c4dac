//! Every limit of a replay request at its boundary, with the field named;
//! the Idempotency-Key: the first answer again for the same request (also
//! under concurrency), 409 for another.

use motor::serve::Role;
use motor_domain::EventId;
use reqwest::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

use super::{
    append, count, lane_deliveries, lane_jobs, range, replay, replay_id, replay_ok, subscribe,
};
use crate::{subscriptions::assert_field, util::TestMotor};

#[tokio::test]
async fn every_limit_at_its_boundary() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    let events = append(&m, &t, a, &["t"; 3]).await;
    let k = || Uuid::new_v4().to_string();
    let bad = |body: Value| {
        let m = &m;
        let t = &t;
        async move { replay(m, &t.token, sub, Some(&k()), &body).await }
    };

    // The range: 10 000 events at most, desde <= hasta, desde >= 1.
    assert_eq!(
        replay_ok(&m, &t, sub, range(a, 1, 10_000)).await["entregas"],
        3
    );
    assert_field(&bad(range(a, 1, 10_001)).await, "body.hasta_seq");
    assert_eq!(replay_ok(&m, &t, sub, range(a, 3, 3)).await["entregas"], 1);
    assert_field(&bad(range(a, 3, 2)).await, "body.hasta_seq");
    assert_field(&bad(range(a, 0, 2)).await, "body.desde_seq");
    assert_field(
        &bad(json!({"instancia_id": a, "desde_seq": 1, "motivo": "m"})).await,
        "body.hasta_seq",
    );
    assert_field(
        &bad(json!({"desde_seq": 1, "hasta_seq": 2, "motivo": "m"})).await,
        "body.instancia_id",
    );
    assert_field(
        &bad(json!({"instancia_id": "x", "desde_seq": 1, "hasta_seq": 2, "motivo": "m"})).await,
        "body.instancia_id",
    );
    assert_field(
        &bad(json!({"instancia_id": a, "desde_seq": "1", "hasta_seq": 2, "motivo": "m"})).await,
        "body.desde_seq",
    );

    // event_ids: 1 to 500; repeats count once.
    let mut ids: Vec<String> = (0..497).map(|_| EventId::new().to_string()).collect();
    ids.extend(events.iter().map(ToString::to_string));
    assert_eq!(ids.len(), 500);
    let answer = replay_ok(&m, &t, sub, json!({"event_ids": ids, "motivo": "m"})).await;
    assert_eq!(answer["entregas"], 3);
    ids.push(EventId::new().to_string());
    assert_field(
        &bad(json!({"event_ids": ids, "motivo": "m"})).await,
        "body.event_ids",
    );
    assert_field(
        &bad(json!({"event_ids": [], "motivo": "m"})).await,
        "body.event_ids",
    );
    assert_field(
        &bad(json!({"event_ids": [events[0], "nope"], "motivo": "m"})).await,
        "body.event_ids[1]",
    );

    // Both forms, or neither.
    assert_field(
        &bad(json!({"instancia_id": a, "desde_seq": 1, "hasta_seq": 2,
                    "event_ids": [events[0]], "motivo": "m"}))
        .await,
        "body.event_ids",
    );
    assert_field(&bad(json!({"motivo": "m"})).await, "body");
    assert_field(
        &bad(json!({"event_ids": [events[0]], "motivo": "m", "otro": 1})).await,
        "body.otro",
    );

    // motivo: 1 to 300 characters, required.
    let with = |motivo: Value| json!({"event_ids": [events[0]], "motivo": motivo});
    assert_field(&bad(with(json!(""))).await, "body.motivo");
    assert_field(&bad(json!({"event_ids": [events[0]]})).await, "body.motivo");
    assert_eq!(
        replay_ok(&m, &t, sub, with(json!("x"))).await["entregas"],
        1
    );
    assert_eq!(
        replay_ok(&m, &t, sub, with(json!("ñ".repeat(300)))).await["entregas"],
        1
    );
    assert_field(&bad(with(json!("ñ".repeat(301)))).await, "body.motivo");

    // Idempotency-Key: required, 1 to 200 characters.
    let body = with(json!("m"));
    assert_field(
        &replay(&m, &t.token, sub, None, &body).await,
        "header.Idempotency-Key",
    );
    assert_field(
        &replay(&m, &t.token, sub, Some(""), &body).await,
        "header.Idempotency-Key",
    );
    assert_field(
        &replay(&m, &t.token, sub, Some(&"k".repeat(201)), &body).await,
        "header.Idempotency-Key",
    );
    let (status, answer) = replay(&m, &t.token, sub, Some(&"k".repeat(200)), &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");

    // Refused requests created nothing: 6 accepted replays above.
    assert_eq!(count(&m.db.pool, "SELECT count(*) FROM replays").await, 6);
    assert_eq!(
        count(
            &m.db.pool,
            "SELECT count(*) FROM deliveries WHERE lane <> 'live'"
        )
        .await,
        3 + 1 + 3 + 1 + 1 + 1
    );
}

#[tokio::test]
async fn the_same_key_answers_the_first_replay_again_and_another_request_is_a_conflict() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    let other_sub = subscribe(&m, &t, json!({})).await;
    append(&m, &t, a, &["t"; 4]).await;
    let deliveries = "SELECT count(*) FROM deliveries";
    let outbox = "SELECT count(*) FROM outbox WHERE topic = 'deliveries'";

    let (status, first) = replay(&m, &t.token, sub, Some("k-1"), &range(a, 1, 4)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    let before = (
        count(&m.db.pool, deliveries).await,
        count(&m.db.pool, outbox).await,
    );

    // Same key, same request (keys in another order, motivo with spaces):
    // the first answer, nothing new.
    let same = json!({"motivo": " caída ", "hasta_seq": 4, "desde_seq": 1, "instancia_id": a});
    let (status, again) = replay(&m, &t.token, sub, Some("k-1"), &same).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{again}");
    assert_eq!(again, first);
    let after = (
        count(&m.db.pool, deliveries).await,
        count(&m.db.pool, outbox).await,
    );
    assert_eq!(after, before, "a repeat creates nothing");
    assert_eq!(count(&m.db.pool, "SELECT count(*) FROM replays").await, 1);

    // Same key, another request: 409, nothing new.
    for (target, body) in [
        (sub, range(a, 1, 3)),
        (
            sub,
            json!({"instancia_id": a, "desde_seq": 1, "hasta_seq": 4, "motivo": "otro"}),
        ),
        (other_sub, range(a, 1, 4)),
    ] {
        let (status, answer) = replay(&m, &t.token, target, Some("k-1"), &body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{answer}");
        assert_eq!(answer["error"]["code"], "conflicto");
    }
    assert_eq!(count(&m.db.pool, deliveries).await, before.0);
    assert_eq!(count(&m.db.pool, "SELECT count(*) FROM replays").await, 1);

    // Another key, the same request: a second replay.
    let (status, second) = replay(&m, &t.token, sub, Some("k-2"), &range(a, 1, 4)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{second}");
    assert_ne!(second["replay_id"], first["replay_id"]);
    assert_eq!(count(&m.db.pool, deliveries).await, before.0 + 4);
}

#[tokio::test]
async fn concurrent_requests_with_one_key_make_one_replay() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    let other_sub = subscribe(&m, &t, json!({})).await;
    append(&m, &t, a, &["t"; 5]).await;

    let body = range(a, 1, 5);
    let answers =
        futures::future::join_all((0..8).map(|_| replay(&m, &t.token, sub, Some("same"), &body)))
            .await;
    for (status, answer) in &answers {
        assert_eq!(*status, StatusCode::ACCEPTED, "{answer}");
        assert_eq!(answer, &answers[0].1);
    }
    assert_eq!(count(&m.db.pool, "SELECT count(*) FROM replays").await, 1);
    assert_eq!(
        count(
            &m.db.pool,
            "SELECT count(*) FROM deliveries WHERE lane <> 'live'"
        )
        .await,
        5
    );

    // One key raced over two subscriptions: one replay, one 409, no 500.
    let body = range(a, 2, 3);
    let (first, second) = tokio::join!(
        replay(&m, &t.token, sub, Some("raced"), &body),
        replay(&m, &t.token, other_sub, Some("raced"), &body),
    );
    let mut statuses = [first.0, second.0];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::ACCEPTED, StatusCode::CONFLICT],
        "{first:?} {second:?}"
    );
    assert_eq!(count(&m.db.pool, "SELECT count(*) FROM replays").await, 2);
    assert_eq!(
        count(
            &m.db.pool,
            "SELECT count(*) FROM deliveries WHERE lane <> 'live'"
        )
        .await,
        7
    );
}

#[tokio::test]
async fn a_full_range_is_ten_thousand_events_in_one_transaction_with_one_job() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    for _ in 0..21 {
        append(&m, &t, a, &["t"; 500]).await;
    }
    let answer = replay_ok(&m, &t, sub, range(a, 501, 10_500)).await;
    assert_eq!(answer["entregas"], 10_000);
    let id = replay_id(&answer);
    let lane = lane_deliveries(&m.db.pool, id).await;
    assert_eq!(lane.len(), 10_000);
    assert_eq!((lane[0].2, lane[9_999].2), (501, 10_500));
    assert_eq!(lane_jobs(&m.db.pool, id).await, [lane[0].0]);
    assert_field(
        &replay(
            &m,
            &t.token,
            sub,
            Some("one-too-many"),
            &range(a, 500, 10_500),
        )
        .await,
        "body.hasta_seq",
    );
}
