//! Who may replay: the `deliveries:replay` scope, keys restricted to
//! instances, other apps' subscriptions and instances, and the operator's
//! route for an app.

use motor::serve::Role;
use motor_domain::subscription::SubscriptionId;
use reqwest::StatusCode;
use serde_json::json;
use uuid::Uuid;

use super::{append, range, replay, replay_at, replay_id, subscribe};
use crate::{
    subscriptions::assert_field,
    util::{key, TestMotor, ADMIN_TOKEN},
};

#[tokio::test]
async fn scope_restriction_and_ownership() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let other = m.tenant(1).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let on_a = append(&m, &t, a, &["t"]).await;
    let on_b = append(&m, &t, b, &["t"]).await;
    let everything = subscribe(&m, &t, json!({})).await;
    let only_a = subscribe(&m, &t, json!({"instancias": [a]})).await;
    let both = subscribe(&m, &t, json!({"instancias": [a, b]})).await;

    // The scope is deliveries:replay; subscriptions:manage is not enough.
    let manager = key(
        &m.db.pool,
        t.app,
        &["subscriptions:manage", "events:read"],
        &[],
    )
    .await;
    let (status, answer) = replay(&m, &manager, everything, Some("k"), &range(a, 1, 1)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert_eq!(answer["error"]["code"], "sin_permiso");
    let (status, _) = replay(&m, "mtr_nope", everything, Some("k"), &range(a, 1, 1)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let replayer = key(&m.db.pool, t.app, &["deliveries:replay"], &[]).await;
    let (status, answer) = replay(&m, &replayer, everything, Some("k"), &range(a, 1, 1)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");

    // A key restricted to instance a.
    let restricted = key(&m.db.pool, t.app, &["deliveries:replay"], &[a]).await;
    let forbidden = [
        // a subscription it cannot see (all instances; a and b)
        (everything, range(a, 1, 1)),
        (both, range(a, 1, 1)),
        // an instance outside its restriction
        (only_a, range(b, 1, 1)),
        (
            only_a,
            json!({"event_ids": [on_a[0], on_b[0]], "motivo": "m"}),
        ),
    ];
    for (sub, body) in &forbidden {
        let (status, answer) = replay(&m, &restricted, *sub, Some("r"), body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{sub} {body}: {answer}");
    }
    // A request the key may not make gets no stored answer either.
    let (status, answer) = replay(&m, &t.token, only_a, Some("shared"), &range(b, 1, 1)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let (status, answer) = replay(&m, &restricted, only_a, Some("shared"), &range(b, 1, 1)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    let (status, answer) = replay(&m, &restricted, only_a, Some("r"), &range(a, 1, 1)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer["entregas"], 1);

    // Another app's subscription, or none at all: 404.
    let theirs = subscribe(&m, &other, json!({})).await;
    for sub in [theirs, SubscriptionId::new()] {
        let (status, _) = replay(&m, &t.token, sub, Some("x"), &range(a, 1, 1)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    let (status, _) = replay_at(
        &m,
        "/v1/subscriptions/not-an-id/replays",
        &t.token,
        Some("x"),
        &range(a, 1, 1),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_operator_replays_for_an_app() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let sub = subscribe(&m, &t, json!({})).await;
    append(&m, &t, a, &["t"; 2]).await;
    let path = format!("/v1/admin/apps/{}/subscriptions/{sub}/replays", t.app);

    let (status, answer) = replay_at(&m, &path, &t.token, Some("op"), &range(a, 1, 2)).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "an API key is not the operator: {answer}"
    );
    let (status, answer) = replay_at(&m, &path, ADMIN_TOKEN, None, &range(a, 1, 2)).await;
    assert_field(&(status, answer), "header.Idempotency-Key");
    let (status, answer) = replay_at(&m, &path, ADMIN_TOKEN, Some("op"), &range(a, 1, 2)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer["entregas"], 2);
    let (status, again) = replay_at(&m, &path, ADMIN_TOKEN, Some("op"), &range(a, 1, 2)).await;
    assert_eq!((status, &again), (StatusCode::ACCEPTED, &answer));
    let by: String = sqlx::query_scalar("SELECT solicitado_por FROM replays WHERE id = $1")
        .bind(Uuid::from(replay_id(&answer)))
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(by, "operador");

    // Another app's subscription through this app's route: 404.
    let other = m.tenant(1).await;
    let path = format!("/v1/admin/apps/{}/subscriptions/{sub}/replays", other.app);
    let (status, _) = replay_at(&m, &path, ADMIN_TOKEN, Some("op2"), &range(a, 1, 2)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
