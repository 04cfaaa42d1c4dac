//! Subscriptions through the operations every door calls: a key's
//! restriction, the version check, the operator's state change and what
//! a deleted subscription refuses.

use motor_app::{
    instances,
    subscriptions::{self, NewSubscriptionInput, SubscriptionChange},
    Access, AppError,
};
use motor_domain::{seal::SealingKey, subscription::SubscriptionState};

use crate::{app, db};

#[tokio::test]
async fn a_subscription_is_changed_under_its_rules() {
    let pool = db().await;
    let sealing = SealingKey::derive(&"m".repeat(32)).unwrap();
    let acme = app(&pool, "Acme").await;
    let one = instances::create(&pool, acme.id, "one").await.unwrap();
    let two = instances::create(&pool, acme.id, "two").await.unwrap();
    let operator = Access::operator(&pool, acme.id).await.unwrap();

    let refused = NewSubscriptionInput {
        name: "s".into(),
        url: "http://example.com/hook".into(),
        ..Default::default()
    };
    match subscriptions::create(&pool, &sealing, &operator, refused).await {
        Err(AppError::Invalid(e)) => assert_eq!(e.field, "url"),
        other => panic!("{other:?}"),
    }
    let input = NewSubscriptionInput {
        name: "s".into(),
        url: "http://127.0.0.1:9/hook".into(),
        instances: vec![one.id.to_string()],
        ..Default::default()
    };
    let created = subscriptions::create(&pool, &sealing, &operator, input)
        .await
        .unwrap();
    assert!(created.secret.secret.expose().starts_with("whsec_"));
    let sub = created.subscription;

    // A key restricted to another instance neither sees nor lists it.
    let restricted = Access {
        app: acme.id,
        restriction: vec![two.id],
        key_id: None,
        read_scopes: None,
    };
    assert!(matches!(
        subscriptions::get(&pool, &restricted, sub.id).await,
        Err(AppError::Forbidden(_))
    ));
    assert!(subscriptions::list(&pool, &restricted, None)
        .await
        .unwrap()
        .is_empty());
    match subscriptions::list(&pool, &operator, Some("activa,rota")).await {
        Err(AppError::Invalid(e)) => assert_eq!(e.field, "estado"),
        other => panic!("{other:?}"),
    }

    // A change based on another version is a conflict; nothing changes.
    let stale = SubscriptionChange {
        name: Some("t".into()),
        expected_version: Some(sub.version + 1),
        ..Default::default()
    };
    assert!(matches!(
        subscriptions::update(&pool, &sealing, &operator, sub.id, stale).await,
        Err(AppError::Conflict(_))
    ));
    assert_eq!(
        subscriptions::get(&pool, &operator, sub.id)
            .await
            .unwrap()
            .name,
        "s"
    );

    // The operator pauses it by id alone.
    let paused = subscriptions::set_state(&pool, &sealing, sub.id, "pausada")
        .await
        .unwrap();
    assert_eq!(paused.state, SubscriptionState::Paused);
    let rotated = subscriptions::rotate_secret(&pool, &sealing, &operator, sub.id)
        .await
        .unwrap();
    assert_ne!(rotated.secret.key_id, created.secret.key_id);

    // Deleted: twice is fine, any change after it a conflict.
    subscriptions::delete(&pool, &operator, sub.id)
        .await
        .unwrap();
    subscriptions::delete(&pool, &operator, sub.id)
        .await
        .unwrap();
    assert!(matches!(
        subscriptions::rotate_secret(&pool, &sealing, &operator, sub.id).await,
        Err(AppError::Conflict(_))
    ));
    assert!(subscriptions::list(&pool, &operator, None)
        .await
        .unwrap()
        .is_empty());
}
