//! Who may manage which subscriptions: the scope on every route, keys
//! restricted to instances, other apps, and the operator's routes for an
//! app's subscriptions.

use motor::serve::Role;
use motor_domain::InstanceId;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::{
    subscriptions::{assert_field, call, create, create_ok},
    util::{key, TestMotor, ADMIN_TOKEN},
};

#[tokio::test]
async fn scopes_guard_every_route() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({})).await;
    let id = created["suscripcion"]["id"].as_str().unwrap().to_owned();
    let weak = key(
        &m.db.pool,
        t.app,
        &["events:write", "events:read", "deliveries:replay"],
        &[],
    )
    .await;
    let routes = [
        (
            Method::POST,
            "/v1/subscriptions".to_owned(),
            Some(json!({"nombre": "n", "url": "http://127.0.0.1/"})),
        ),
        (Method::GET, "/v1/subscriptions".to_owned(), None),
        (Method::GET, format!("/v1/subscriptions/{id}"), None),
        (
            Method::PATCH,
            format!("/v1/subscriptions/{id}"),
            Some(json!({"nombre": "x"})),
        ),
        (Method::DELETE, format!("/v1/subscriptions/{id}"), None),
        (Method::POST, format!("/v1/subscriptions/{id}/rotate"), None),
    ];
    for (method, path, body) in &routes {
        let (status, answer) = call(&m, method.clone(), path, &weak, body.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["code"], "sin_permiso");
        let (status, answer) = call(&m, method.clone(), path, "mtr_not-a-key", body.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path}: {answer}"
        );
        assert_eq!(answer["error"]["code"], "no_autenticado");
        let res = m
            .http
            .request(method.clone(), m.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{method} {path}");
    }
    // Nothing changed.
    let (_, s) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{id}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(
        (s["version"].clone(), s["estado"].clone()),
        (json!(1), json!("activa"))
    );

    // Another app's subscription does not exist for this key.
    let other = m.tenant(1).await;
    for (method, path, body) in &routes[2..] {
        let (status, _) = call(&m, method.clone(), path, &other.token, body.clone()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
    }
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", &other.token, None).await;
    assert_eq!(list["suscripciones"], json!([]));
    m.stop().await;
}

#[tokio::test]
async fn keys_restricted_to_instances_manage_only_theirs() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(3).await;
    let (a, b, c) = (t.instances[0], t.instances[1], t.instances[2]);
    let restricted = key(&m.db.pool, t.app, &["subscriptions:manage"], &[a, b]).await;
    let url = "http://127.0.0.1:9/hook";

    // Must name instances, and only its own.
    let (status, _) = create(&m, &restricted, json!({"nombre": "n", "url": url})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = create(
        &m,
        &restricted,
        json!({"nombre": "n", "url": url, "instancias": [a, c]}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, mine) = create(
        &m,
        &restricted,
        json!({"nombre": "mine", "url": url, "instancias": [b]}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{mine}");
    let mine_path = format!(
        "/v1/subscriptions/{}",
        mine["suscripcion"]["id"].as_str().unwrap()
    );

    // Subscriptions of all instances, or of others, are not its business.
    let all = create_ok(&m, &t, json!({})).await;
    let theirs = create_ok(&m, &t, json!({"instancias": [a, c]})).await;
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", &restricted, None).await;
    let names: Vec<&str> = list["suscripciones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["nombre"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mine"]);
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", &t.token, None).await;
    assert_eq!(list["suscripciones"].as_array().unwrap().len(), 3);
    for foreign in [&all, &theirs] {
        let path = format!(
            "/v1/subscriptions/{}",
            foreign["suscripcion"]["id"].as_str().unwrap()
        );
        for (method, path, body) in [
            (Method::GET, path.clone(), None),
            (Method::PATCH, path.clone(), Some(json!({"nombre": "x"}))),
            (Method::POST, format!("{path}/rotate"), None),
            (Method::DELETE, path.clone(), None),
        ] {
            let (status, answer) = call(&m, method.clone(), &path, &restricted, body).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
        }
    }
    // Its own: it may change it, but not widen it beyond its instances.
    for body in [
        json!({"instancias": []}),
        json!({"instancias": [c]}),
        json!({"instancias": [b, c]}),
    ] {
        let (status, _) = call(
            &m,
            Method::PATCH,
            &mine_path,
            &restricted,
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    }
    let (status, s) = call(
        &m,
        Method::PATCH,
        &mine_path,
        &restricted,
        Some(json!({"instancias": [a, b]})),
    )
    .await;
    assert_eq!(
        (status, s["instancias"].clone()),
        (StatusCode::OK, json!([a, b]))
    );
    let (status, _) = call(
        &m,
        Method::POST,
        &format!("{mine_path}/rotate"),
        &restricted,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(&m, Method::DELETE, &mine_path, &restricted, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    m.stop().await;
}

#[tokio::test]
async fn the_operator_manages_an_apps_subscriptions() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let other = m.tenant(1).await;
    let base = format!("/v1/admin/apps/{}/subscriptions", t.app);
    let body = json!({"nombre": "del operador", "url": "http://127.0.0.1:9/hook"});
    let (status, created) = call(&m, Method::POST, &base, ADMIN_TOKEN, Some(body.clone())).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(created["secreto"]["valor"]
        .as_str()
        .unwrap()
        .starts_with("whsec_"));
    assert_eq!(created["suscripcion"]["cliente_id"], json!(t.app));
    let id = created["suscripcion"]["id"].as_str().unwrap().to_owned();
    let one = format!("{base}/{id}");

    // The app's own key sees the same subscription.
    let (_, mine) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{id}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(mine, created["suscripcion"]);
    let (_, listed) = call(&m, Method::GET, &base, ADMIN_TOKEN, None).await;
    assert_eq!(listed["suscripciones"].as_array().unwrap().len(), 1);

    let (status, s) = call(
        &m,
        Method::PATCH,
        &one,
        ADMIN_TOKEN,
        Some(json!({"estado": "pausada", "version_esperada": 1})),
    )
    .await;
    assert_eq!(
        (status, s["estado"].clone()),
        (StatusCode::OK, json!("pausada"))
    );
    let (status, r) = call(
        &m,
        Method::POST,
        &format!("{one}/rotate"),
        ADMIN_TOKEN,
        None,
    )
    .await;
    assert_eq!(
        (status, r["suscripcion"]["claves"].as_array().unwrap().len()),
        (StatusCode::OK, 2)
    );
    let (status, tested) = call(&m, Method::POST, &format!("{one}/test"), ADMIN_TOKEN, None).await;
    assert_eq!(
        (status, tested["ok"].clone()),
        (StatusCode::OK, json!(false))
    );
    assert_field(
        &call(
            &m,
            Method::POST,
            &base,
            ADMIN_TOKEN,
            Some(json!({"nombre": "n", "url": "ftp://x.io/"})),
        )
        .await,
        "body.url",
    );

    // Another app's path does not reach it; an API key is not the operator.
    let elsewhere = format!("/v1/admin/apps/{}/subscriptions/{id}", other.app);
    assert_eq!(
        call(&m, Method::GET, &elsewhere, ADMIN_TOKEN, None).await.0,
        StatusCode::NOT_FOUND
    );
    let missing_app = format!("/v1/admin/apps/{}/subscriptions", InstanceId::new());
    assert_eq!(
        call(&m, Method::GET, &missing_app, ADMIN_TOKEN, None)
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        call(&m, Method::POST, &missing_app, ADMIN_TOKEN, Some(body))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        call(&m, Method::GET, &one, &t.token, None).await.0,
        StatusCode::UNAUTHORIZED
    );

    let (status, _) = call(&m, Method::DELETE, &one, ADMIN_TOKEN, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, s) = call(&m, Method::GET, &one, ADMIN_TOKEN, None).await;
    assert_eq!(s["estado"], "eliminada");
    m.stop().await;
}
