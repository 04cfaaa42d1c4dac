//! The console shows whatever users typed as text, never as markup (issue
//! 34, item 4): an app, its instance and key, two subscriptions (one URL's
//! path and query full of markup), an event type and an alert whose
//! names and texts hold `<script>`, an attribute break-out with an event
//! handler, and entities, made through the operator and producer APIs of a
//! real Motor (the alert through the store function the engine opens them
//! with: no API takes an alert's text). Every console page, and the pages
//! that reflect a search or a form, is loaded in headless Chromium: no
//! element or handler came from the data, no dialog opened, and the text
//! reads literally. Also the filters with a closed set of values are select
//! lists, and times are readable with the RFC 3339 value on hover.

use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use motor_domain::{subscription::SubscriptionId, AppId};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::console::{click, fill, page_with, shot, url_when, Driver};
use crate::{
    dispatch::{
        motor,
        receiver::{Receiver, Reply},
        WAIT,
    },
    util::{TestMotor, ADMIN_TOKEN},
};

/// Markup, an attribute break-out with an event handler, and entities
/// that must stay literal.
const HOSTILE: [&str; 3] = [
    "<script>alert(1)</script>",
    "\"'><img src=x onerror=alert(1)>",
    "&amp;&lt;",
];

fn hostile() -> String {
    HOSTILE.join(" ")
}

/// A call to Motor's API with `token`; the status and the JSON answer.
async fn call(
    m: &TestMotor,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = m.http.request(method, m.url(path)).bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// Creates through the API, asserting success; the answer.
async fn created(m: &TestMotor, token: &str, path: &str, body: Value) -> Value {
    let (status, answer) = call(m, token, Method::POST, path, Some(body)).await;
    assert!(status.is_success(), "{path}: {status} {answer}");
    answer
}

/// What the page at hand holds that it must not: scripts it does not ship
/// itself, elements that load or run something, `on…` attributes. Also
/// its text (`innerText`).
const AUDIT: &str = r#"
const own = [
  "document.querySelectorAll('form[data-confirm]')",
  "setTimeout(()=>location.reload(),15000)",
];
const scripts = [...document.scripts]
  .map(s => s.src ? 'src=' + s.src : s.textContent)
  .filter(t => !own.some(o => t.startsWith(o)));
const elements = [...document.querySelectorAll('img, iframe, object, embed, svg script, [src]')]
  .map(e => e.outerHTML);
const handlers = [...document.querySelectorAll('*')]
  .flatMap(e => [...e.attributes].filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name));
return {foreign: [...scripts, ...elements, ...handlers], text: document.body.innerText};
"#;

/// Asserts the current page holds nothing from the data but text, and no
/// dialog opened; its text.
async fn audit(c: &Client, name: &str) -> String {
    assert!(
        c.get_alert_text().await.is_err(),
        "{name}: a dialog is open"
    );
    let found = c.execute(AUDIT, vec![]).await.unwrap();
    assert_eq!(found["foreign"], json!([]), "{name}: injected");
    found["text"].as_str().unwrap().to_owned()
}

/// Asserts the page's text shows the hostile text literally.
async fn shows_literally(c: &Client, name: &str) {
    let text = audit(c, name).await;
    for piece in HOSTILE {
        assert!(
            text.contains(piece),
            "{name}: {piece:?} not shown in {text}"
        );
    }
}

/// The `value` of the form field at `css`.
async fn value(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap_or_default()
}

/// The failed delivery's id, once there is one.
async fn failed_id(m: &TestMotor) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let id: Option<uuid::Uuid> =
            sqlx::query_scalar("SELECT id FROM deliveries WHERE estado = 'fallida'")
                .fetch_optional(&m.db.pool)
                .await
                .unwrap();
        if let Some(id) = id {
            return id.to_string();
        }
        assert!(Instant::now() < deadline, "no failed delivery");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An app, instance, key and two subscriptions named with hostile text,
/// one event of a hostile type that fails (410), an open alert; the
/// failed delivery's id.
async fn hostile_data(m: &TestMotor, r: &Receiver) -> String {
    let h = hostile();
    let app = created(
        m,
        ADMIN_TOKEN,
        "/v1/admin/apps",
        json!({"nombre": h, "destinos_permitidos": ["127.0.0.1"]}),
    )
    .await;
    let app_id = app["id"].as_str().unwrap().to_owned();
    let instance = created(
        m,
        ADMIN_TOKEN,
        &format!("/v1/admin/apps/{app_id}/instances"),
        json!({"nombre": h}),
    )
    .await;
    let key = created(
        m,
        ADMIN_TOKEN,
        &format!("/v1/admin/apps/{app_id}/keys"),
        json!({"nombre": h, "scopes": ["events:write", "subscriptions:manage"]}),
    )
    .await;
    let token = key["token"].as_str().unwrap().to_owned();
    r.script(|_| Reply::status(410));
    let url = reqwest::Url::parse_with_params(&r.url(), [("q", &h)]).unwrap();
    let sub = created(
        m,
        &token,
        "/v1/subscriptions",
        json!({"nombre": h, "url": url.as_str()}),
    )
    .await;
    r.trust(
        sub["secreto"]["key_id"].as_str().unwrap(),
        sub["secreto"]["valor"].as_str().unwrap(),
    );
    // A second one whose path is hostile (percent-encoded, as a URL
    // must be), paused before the event.
    let mut url = reqwest::Url::parse(&format!("http://{}/", r.addr)).unwrap();
    url.path_segments_mut().unwrap().extend(&HOSTILE[..2]);
    url.query_pairs_mut().append_pair("q", HOSTILE[2]);
    let other = created(
        m,
        &token,
        "/v1/subscriptions",
        json!({"nombre": format!("{h} 2"), "url": url.as_str()}),
    )
    .await;
    let other_id = other["suscripcion"]["id"].as_str().unwrap();
    let (status, answer) = call(
        m,
        ADMIN_TOKEN,
        Method::POST,
        &format!("/v1/admin/subscriptions/{other_id}/pause"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    created(
        m,
        &token,
        &format!("/v1/instances/{}/events", instance["id"].as_str().unwrap()),
        json!({"type": h, "data": {"texto": h}}),
    )
    .await;
    let failed = failed_id(m).await;
    let mut conn = m.db.pool.acquire().await.unwrap();
    motor_store::alerts::open(
        &mut conn,
        AppId::from_uuid(app_id.parse().unwrap()),
        Some(SubscriptionId::from_uuid(other_id.parse().unwrap())),
        &h,
        &h,
    )
    .await
    .unwrap();
    failed
}

/// Logs in through the login form.
pub(super) async fn login(c: &Client, m: &TestMotor) {
    c.goto(&m.url("/console/login")).await.unwrap();
    fill(c, "#token", ADMIN_TOKEN).await;
    click(c, "#entrar").await;
    let url = url_when(c, |u| u.ends_with("/console")).await;
    assert!(url.ends_with("/console"), "{url}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_console_page_shows_hostile_text_inert() {
    let driver = Driver::start();
    let m = motor(None).await;
    let r = Receiver::start().await;
    let failed = hostile_data(&m, &r).await;
    let h = hostile();
    let c = driver.browser().await;
    login(&c, &m).await;

    for (path, name) in [
        ("/console", "overview"),
        ("/console/subscriptions", "subscriptions"),
        ("/console/deliveries", "deliveries"),
        (&format!("/console/deliveries/{failed}"), "delivery"),
        ("/console/dlq", "dlq"),
        ("/console/alerts", "alerts"),
    ] {
        c.goto(&m.url(path)).await.unwrap();
        shows_literally(&c, name).await;
    }
    // The pages that manage (issue 36): the app's, a subscription's (its
    // name, its delivery's event type on the timeline), the new form.
    let sub: uuid::Uuid =
        sqlx::query_scalar("SELECT subscription_id FROM deliveries WHERE estado = 'fallida'")
            .fetch_one(&m.db.pool)
            .await
            .unwrap();
    for (path, name) in [
        ("/console/apps".to_owned(), "apps"),
        (format!("/console/subscriptions/{sub}"), "subscription"),
    ] {
        c.goto(&m.url(&path)).await.unwrap();
        shows_literally(&c, name).await;
    }
    c.goto(&m.url("/console/subscriptions/new")).await.unwrap();
    audit(&c, "new subscription").await;

    // Only scheme and host of a destination, never its path or query.
    c.goto(&m.url("/console/subscriptions")).await.unwrap();
    let text = audit(&c, "subscriptions").await;
    assert!(!text.contains("/hook") && !text.contains("?q="), "{text}");
    shot(&c, "10-inert-subscriptions").await;

    // A search reflects its values: kept in the form, as values.
    let search = search_link(&h);
    c.goto(&m.url(&search)).await.unwrap();
    let text = audit(&c, "search").await;
    // The first bad field is named; nothing else is said about the input.
    assert!(text.contains("query."), "{text}");
    assert_eq!(value(&c, "#f-desde").await, h);
    assert_eq!(value(&c, "#f-app_id").await, h);
    assert_eq!(value(&c, "#f-ultimo_error").await, h);
    shot(&c, "11-inert-search").await;

    // The retry's confirmation reflects the motivo typed.
    c.goto(&m.url(&format!("/console/deliveries/{failed}")))
        .await
        .unwrap();
    fill(&c, "#motivo", &h).await;
    click(&c, "#reintentar-btn").await;
    page_with(&c, "confirmar-btn").await;
    audit(&c, "confirm").await;
    assert_eq!(value(&c, "#motivo").await, h);
    shot(&c, "12-inert-confirm").await;

    // A DLQ group's form, its hidden error code altered: the confirmation
    // names it as text and keeps it as a value.
    c.goto(&m.url("/console/dlq")).await.unwrap();
    c.execute(
        "document.querySelector('form[action=\"/console/dlq/retry\"] input[name=ultimo_error]').value = arguments[0]",
        vec![json!(h)],
    )
    .await
    .unwrap();
    click(&c, "form[action=\"/console/dlq/retry\"] button").await;
    page_with(&c, "confirmar-btn").await;
    shows_literally(&c, "dlq confirm").await;
    assert_eq!(value(&c, "#confirmar input[name=ultimo_error]").await, h);

    let replays: i64 = sqlx::query_scalar("SELECT count(*) FROM replays")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(replays, 0, "nothing was confirmed");
    c.close().await.unwrap();
    m.stop().await;
}

/// A delivery search whose every free field and error code is `text`.
fn search_link(text: &str) -> String {
    let fields = ["app_id", "desde", "ultimo_error"].map(|k| (k, text));
    let url = reqwest::Url::parse_with_params("http://motor/console/deliveries", fields).unwrap();
    format!("{}?{}", url.path(), url.query().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn filters_are_select_lists_and_times_show_rfc3339_on_hover() {
    let driver = Driver::start();
    let m = motor(None).await;
    let r = Receiver::start().await;
    let failed = hostile_data(&m, &r).await;
    let c = driver.browser().await;
    login(&c, &m).await;

    c.goto(&m.url("/console/deliveries")).await.unwrap();
    let options = c
        .execute(
            "return [...document.querySelectorAll('#f-estado option')].map(o => o.value)",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        options,
        json!(["", "pendiente", "entregada", "fallida", "cancelada"])
    );
    let codes = c
        .execute(
            "return [...document.querySelectorAll('#f-ultimo_error option')].map(o => o.value)",
            vec![],
        )
        .await
        .unwrap();
    for code in [
        "",
        "http_410",
        "http_503_agotada",
        "timeout",
        "conexion_rechazada",
    ] {
        assert!(
            codes.as_array().unwrap().contains(&json!(code)),
            "{code}: {codes}"
        );
    }
    for (css, choice) in [("#f-estado", "fallida"), ("#f-ultimo_error", "http_410")] {
        c.find(Locator::Css(css))
            .await
            .unwrap()
            .select_by_value(choice)
            .await
            .unwrap();
    }
    click(&c, "#buscar-btn").await;
    let url = url_when(&c, |u| u.contains("ultimo_error=http_410")).await;
    assert!(url.contains("estado=fallida"), "{url}");
    let link = c
        .wait()
        .for_element(Locator::Css("a.entrega"))
        .await
        .unwrap();
    assert_eq!(link.text().await.unwrap(), failed);
    // The search's page keeps the choices.
    assert_eq!(value(&c, "#f-estado").await, "fallida");
    assert_eq!(value(&c, "#f-ultimo_error").await, "http_410");
    shot(&c, "13-select-filters").await;

    // Times: readable text, the RFC 3339 value in `title` (the hover) and
    // `datetime`.
    for path in [
        "/console/deliveries",
        &format!("/console/deliveries/{failed}"),
        "/console/dlq",
        "/console/alerts",
    ] {
        c.goto(&m.url(path)).await.unwrap();
        let times = c
            .execute(
                "return [...document.querySelectorAll('time')].map(t => [t.title, t.dateTime, t.textContent])",
                vec![],
            )
            .await
            .unwrap();
        let times = times.as_array().unwrap();
        assert!(!times.is_empty(), "{path}: no time shown");
        for t in times {
            let (title, datetime, text) = (
                t[0].as_str().unwrap(),
                t[1].as_str().unwrap(),
                t[2].as_str().unwrap(),
            );
            let at = chrono::DateTime::parse_from_rfc3339(title)
                .unwrap_or_else(|e| panic!("{path}: title {title:?}: {e}"));
            assert_eq!(datetime, title);
            assert_ne!(text, title);
            let clock = at.format("%H:%M:%S UTC").to_string();
            assert!(
                text.ends_with(&clock) && text.contains(&at.format("%Y").to_string()),
                "{path}: {text:?} for {title}"
            );
        }
    }
    c.close().await.unwrap();
    m.stop().await;
}
