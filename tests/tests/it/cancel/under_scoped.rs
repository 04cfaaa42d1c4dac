//! An under-scoped key (seed 001: "Una clave revocada/vencida/sin permisos
//! … cancela entregas pendientes"): a catalogue `PUT` that maps a type a
//! `visito` subscription selects to a read scope its bound API key lacks
//! suspends it (`clave_sin_permiso`) and cancels its pending deliveries in
//! the catalogue's transaction; nothing is sent to it after. A `motor`
//! subscription of the same key, and a `visito` one whose types still
//! need only what the key holds, are untouched.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;

use super::{patch, post_events, reasons, subscribe, wait_subscription, Receiver};
use crate::{
    dispatch::{states, wait_state},
    subscriptions::call,
    util::ADMIN_TOKEN,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_catalogue_change_that_under_scopes_the_bound_key_cancels_a_visito_subscription() {
    let m = crate::dispatch::motor(None).await;
    let t = m.tenant(1).await;
    // Always 503: after its first attempt a visito@1 delivery waits 1 min,
    // pending; the motor one is unordered so every new event is tried at
    // once, in parallel with the failing ones.
    let r = Receiver::start(Duration::ZERO, 503).await;
    let catalogue = format!("/v1/admin/apps/{}/event-types", t.app);
    let tipos = json!(["message.created", "message.delivery.updated"]);
    let (status, set) = call(
        &m,
        Method::PUT,
        &catalogue,
        ADMIN_TOKEN,
        Some(json!({"tipos": tipos, "permisos_lectura": {
            "message.created": "conversations:read",
            "message.delivery.updated": "conversations:read",
        }})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    let (status, created) = call(
        &m,
        Method::POST,
        &format!("/v1/admin/apps/{}/keys", t.app),
        ADMIN_TOKEN,
        Some(
            json!({"nombre": "bound", "scopes": ["subscriptions:manage"],
                    "permisos_lectura": ["conversations:read"]}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let bound = created["token"].as_str().unwrap().to_owned();
    let hook = |name: &str, contrato: &str, tipo: &str, extra: serde_json::Value| {
        let mut body = json!({"nombre": name, "url": r.url(name), "contrato": contrato,
                              "tipos": [tipo]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let visito = subscribe(
        &m,
        &bound,
        hook("visito", "visito", "message.created", json!({})),
    )
    .await;
    let motor = subscribe(
        &m,
        &bound,
        hook(
            "motor",
            "motor",
            "message.created",
            json!({"ordenado": false}),
        ),
    )
    .await;
    // A visito subscription of the same key to the other type, whose scope
    // the catalogue change leaves as it was.
    let other = subscribe(
        &m,
        &bound,
        hook("other", "visito", "message.delivery.updated", json!({})),
    )
    .await;

    let first = post_events(&m, &t, 0, 5, "before").await;
    r.wait_for("the first attempts", |r| {
        r.seen("visito").len() >= 5 && r.seen("motor").len() >= 5
    })
    .await;
    wait_state(&m, visito, "pendiente", 5).await;
    wait_state(&m, motor, "pendiente", 5).await;
    let sent_before = r.seen("visito").len();

    // message.created now needs messages:read, which the key lacks.
    let (status, set) = call(
        &m,
        Method::PUT,
        &catalogue,
        ADMIN_TOKEN,
        Some(json!({"tipos": tipos, "permisos_lectura": {
            "message.created": "messages:read",
            "message.delivery.updated": "conversations:read",
        }})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    // In the catalogue's transaction: no wait.
    assert_eq!(
        reasons(&m, visito).await,
        [(
            "cancelada".to_owned(),
            Some("clave_sin_permiso".to_owned()),
            5
        )]
    );
    wait_subscription(&m, visito, "suspendida", Some("clave_sin_permiso")).await;
    let (_, got) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{visito}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(
        (&got["estado"], &got["motivo"]),
        (&json!("suspendida"), &json!("clave_sin_permiso")),
        "{got}"
    );
    let (status, page) = call(
        &m,
        Method::GET,
        &format!("/v1/deliveries?estado=cancelada&suscripcion_id={visito}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let listed = page["entregas"].as_array().unwrap();
    assert_eq!(listed.len(), 5, "{page}");
    for d in listed {
        assert_eq!(d["motivo"], "clave_sin_permiso", "{d}");
    }
    // Untouched: the motor one (the next change gets the 403), and the
    // visito one whose type needs what the key still holds.
    assert_eq!(states(&m, motor).await.get("cancelada"), None);
    wait_subscription(&m, motor, "activa", None).await;
    wait_subscription(&m, other, "activa", None).await;

    // Nothing is sent to it after: new events reach the motor subscription
    // at once and never the suspended one.
    let later = post_events(&m, &t, 0, 3, "after").await;
    r.wait_for("the motor subscription's new events", |r| {
        let seen = r.seen("motor");
        later
            .iter()
            .all(|id| seen.iter().any(|s| &s.event_id == id))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let visito_seen = r.seen("visito");
    assert_eq!(
        visito_seen.len(),
        sent_before,
        "nothing sent after the catalogue change: {visito_seen:?}"
    );
    assert!(visito_seen.iter().all(|s| first.contains(&s.event_id)));
    let now = reasons(&m, visito).await;
    assert!(
        now.iter()
            .all(|(estado, _, _)| estado == "cancelada" || estado == "pendiente"),
        "{now:?}"
    );
    assert_eq!(states(&m, visito).await.get("entregada"), None);

    // The key keeps working, but not for this subscription's type: its
    // reactivation is the 403 of a change.
    let (status, body) = patch(&m, &bound, visito, json!({"estado": "activa"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = patch(&m, &bound, motor, json!({"nombre": "renamed"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    m.stop().await;
}
