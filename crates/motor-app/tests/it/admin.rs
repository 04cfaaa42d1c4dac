//! The operator's administration: input checked with the field named,
//! unknown apps not found, settings checked before anything is stored.

use motor_app::{
    apps::{self, AppChange, NewApp},
    instances,
    keys::{self, NewKey},
    settings, AppError,
};
use motor_domain::AppId;
use serde_json::json;

use crate::{app, db};

fn field(e: AppError) -> String {
    match e {
        AppError::Invalid(e) => e.field,
        other => panic!("not a field error: {other:?}"),
    }
}

#[tokio::test]
async fn apps_instances_and_keys_check_their_input() {
    let pool = db().await;
    let blank = NewApp {
        name: "  ".into(),
        ..Default::default()
    };
    assert_eq!(
        field(apps::create(&pool, blank).await.unwrap_err()),
        "nombre"
    );
    let bad_policy = NewApp {
        name: "a".into(),
        destination_policy: Some("libre".into()),
        ..Default::default()
    };
    assert_eq!(
        field(apps::create(&pool, bad_policy).await.unwrap_err()),
        "politica_destinos"
    );

    let acme = app(&pool, "Acme").await;
    let renamed = AppChange {
        name: Some("Acme 2".into()),
        ..Default::default()
    };
    assert_eq!(
        apps::update(&pool, acme.id, renamed).await.unwrap().name,
        "Acme 2"
    );
    assert_eq!(apps::list(&pool).await.unwrap().len(), 1);
    assert!(matches!(
        instances::list(&pool, AppId::new()).await,
        Err(AppError::NotFound("app"))
    ));

    let mine = instances::create(&pool, acme.id, "mine").await.unwrap();
    let other = app(&pool, "Other").await;
    let foreign = instances::create(&pool, other.id, "foreign").await.unwrap();
    let key = |instances: Vec<String>, scopes: Vec<&str>| NewKey {
        name: "k".into(),
        scopes: scopes.into_iter().map(String::from).collect(),
        instances,
        expires_at: None,
        read_scopes: vec![],
    };
    let e = keys::create(
        &pool,
        acme.id,
        key(vec![foreign.id.to_string()], vec!["events:read"]),
    )
    .await
    .unwrap_err();
    assert_eq!(field(e), "instancias");
    let e = keys::create(&pool, acme.id, key(vec!["x".into()], vec!["events:read"]))
        .await
        .unwrap_err();
    assert_eq!(field(e), "instancias[0]");
    let e = keys::create(&pool, acme.id, key(vec![], vec!["events:read", "root"]))
        .await
        .unwrap_err();
    assert_eq!(field(e), "scopes[1]");
    let created = keys::create(
        &pool,
        acme.id,
        key(vec![mine.id.to_string()], vec!["events:read"]),
    )
    .await
    .unwrap();
    let listed = keys::list(&pool, acme.id).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].key_id, created.key_id);
    keys::revoke(&pool, acme.id, &created.key_id).await.unwrap();
}

#[tokio::test]
async fn a_refused_setting_changes_nothing() {
    let pool = db().await;
    let before = settings::get(&pool).await.unwrap();
    let e = settings::update(
        &pool,
        &json!({"webhooks.timeout_segundos": 20, "webhooks.ventana_rotacion_minutos": 1}),
    )
    .await
    .unwrap_err();
    assert_eq!(field(e), "webhooks.ventana_rotacion_minutos");
    assert_eq!(
        settings::get(&pool).await.unwrap().timeout_seconds,
        before.timeout_seconds
    );
    let after = settings::update(&pool, &json!({"webhooks.timeout_segundos": 20}))
        .await
        .unwrap();
    assert_eq!(after.timeout_seconds, 20);
}
