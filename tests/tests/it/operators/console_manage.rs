//! The console manages what it shows (issue 36, item 3), in headless
//! Chromium as `console.rs` drives it: a subscription created from the
//! form delivers to a real loopback receiver with the secret the answer
//! showed once; its page shows the numbers of a known mix of successes and
//! failures, the last errors and a delivery's attempts; the test button
//! reaches the receiver; a rotation's new key id signs the next attempt and
//! shows on its timeline; pause stops deliveries (another subscription to
//! another receiver, still active, proves the event went out) and
//! reactivating sends them; an edit saves, a bad one names its field; an
//! app's allowed destinations are edited. Without a browser: every new
//! action needs the session and its CSRF token; `/console/` is the
//! console; a retried DLQ group leaves the DLQ.

use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use reqwest::{redirect::Policy, StatusCode};
use serde_json::{json, Value};

use super::{
    console::{click, fill, page_with, shot, url_when, Driver},
    console_inert::login,
};
use crate::{
    deliveries::post,
    dispatch::{
        motor,
        receiver::{Receiver, Reply, Seen},
        subscribe, WAIT,
    },
    util::{TestMotor, ADMIN_TOKEN},
};

fn tag(seen: &Seen) -> String {
    let envelope: Value = serde_json::from_slice(&seen.body).unwrap_or(Value::Null);
    envelope["data"]["tag"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn event_type(seen: &Seen) -> String {
    let envelope: Value = serde_json::from_slice(&seen.body).unwrap_or(Value::Null);
    envelope["type"].as_str().unwrap_or_default().to_owned()
}

/// The text of the element at `css`, once the page shows one.
async fn text(c: &Client, css: &str) -> String {
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .text()
        .await
        .unwrap()
}

/// Clicks a button whose form asks first (`data-confirm`), and accepts.
async fn click_confirmed(c: &Client, css: &str) {
    click(c, css).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.get_alert_text().await.is_err() {
        assert!(Instant::now() < deadline, "{css}: no confirmation asked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.accept_alert().await.unwrap();
}

/// Replaces the value of the input at `css`.
async fn set(c: &Client, css: &str, value: &str) {
    let input = c.find(Locator::Css(css)).await.unwrap();
    input.clear().await.unwrap();
    input.send_keys(value).await.unwrap();
}

/// Counts of the subscription's deliveries by state.
async fn states(m: &TestMotor, sub: &str) -> (i64, i64, i64) {
    let sub: uuid::Uuid = sub.parse().unwrap();
    sqlx::query_as(
        "SELECT count(*) FILTER (WHERE estado = 'entregada'),
                count(*) FILTER (WHERE estado = 'fallida'),
                count(*) FILTER (WHERE estado = 'pendiente')
         FROM deliveries WHERE subscription_id = $1",
    )
    .bind(sub)
    .fetch_one(&m.db.pool)
    .await
    .unwrap()
}

async fn states_become(m: &TestMotor, sub: &str, wanted: (i64, i64, i64)) {
    let deadline = Instant::now() + WAIT;
    loop {
        let now = states(m, sub).await;
        if now == wanted {
            return;
        }
        assert!(Instant::now() < deadline, "{now:?}, wanted {wanted:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_operator_manages_a_subscription_in_the_browser() {
    let driver = Driver::start();
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let r = Receiver::start().await;
    r.script(|seen| match tag(seen).as_str() {
        "gone" => Reply::status(410),
        _ => Reply::status(204),
    });
    // Another receiver, subscribed through the API: the proof that an
    // event went out while the console's subscription is paused.
    let clock = Receiver::start().await;
    subscribe(&m, &t, &clock, json!({"nombre": "reloj"})).await;
    let c = driver.browser().await;
    login(&c, &m).await;

    // Create from the form; the answer shows the secret once.
    c.goto(&m.url("/console/subscriptions")).await.unwrap();
    click(&c, "#nueva-link").await;
    c.wait()
        .for_element(Locator::Css("#f-app_id"))
        .await
        .unwrap()
        .select_by_value(&t.app.to_string())
        .await
        .unwrap();
    fill(&c, "#f-nombre", "pedidos").await;
    fill(&c, "#f-url", &r.url()).await;
    fill(&c, "#f-tipos", "pedido.creado, pedido.anulado").await;
    c.find(Locator::Css("#f-firma"))
        .await
        .unwrap()
        .select_by_value("mw-v1")
        .await
        .unwrap();
    shot(&c, "20-manage-new").await;
    click(&c, "#crear-btn").await;
    let key_id = text(&c, "#key-id").await;
    let secret = text(&c, "#secreto").await;
    let sub = text(&c, "#sub-id").await;
    assert!(secret.starts_with("whsec_"), "{secret}");
    r.trust(&key_id, &secret);
    shot(&c, "21-manage-created").await;
    let stored: (String, Vec<String>) =
        sqlx::query_as("SELECT nombre, tipos FROM subscriptions WHERE id = $1::uuid")
            .bind(&sub)
            .fetch_one(&m.db.pool)
            .await
            .unwrap();
    assert_eq!(
        stored,
        (
            "pedidos".to_owned(),
            vec!["pedido.creado".to_owned(), "pedido.anulado".to_owned()]
        )
    );
    // The secret is not on the subscription's page.
    click(&c, "#ver").await;
    let page = page_with(&c, "id=\"datos\"").await;
    assert!(!page.contains(&secret) && page.contains(&key_id));

    // A known mix: three delivered, one refused for good (410).
    for t_ in ["ok", "ok", "gone", "ok"] {
        post(
            &m,
            &t,
            instance,
            json!({"type": "pedido.creado", "data": {"tag": t_}}),
        )
        .await;
    }
    states_become(&m, &sub, (3, 1, 0)).await;
    assert!(
        r.seen().iter().all(|s| s.verified),
        "signed with the secret shown"
    );
    c.refresh().await.unwrap();
    assert_eq!(text(&c, "#n-entregadas").await, "3");
    assert_eq!(text(&c, "#n-fallidas").await, "1");
    assert_eq!(text(&c, "#n-pendientes").await, "0");
    assert_eq!(text(&c, "#tasa").await, "75.0 %");
    assert!(text(&c, "#latencia").await.ends_with(" ms"));
    let errors = text(&c, "#errores").await;
    assert!(
        errors.contains("http_410") && errors.contains("410"),
        "{errors}"
    );
    let timeline = text(&c, "#linea").await;
    assert!(timeline.contains(&key_id), "{timeline}");
    shot(&c, "22-manage-numbers").await;

    // The test reaches the receiver.
    let before = r.seen().len();
    click(&c, "#probar-btn").await;
    let result = text(&c, "#prueba").await;
    assert!(result.contains("Prueba entregada: status 204"), "{result}");
    let seen = r.seen();
    assert_eq!(seen.len(), before + 1);
    assert_eq!(event_type(&seen[before]), "webhook.test");
    shot(&c, "23-manage-test").await;

    // Rotate: the new key id signs the next attempt and shows on its
    // timeline.
    click(&c, "#volver").await;
    click_confirmed(&c, "#rotar-btn").await;
    let new_key = text(&c, "#key-id").await;
    let new_secret = text(&c, "#secreto").await;
    assert_ne!(new_key, key_id);
    r.trust(&new_key, &new_secret);
    shot(&c, "24-manage-rotated").await;
    post(
        &m,
        &t,
        instance,
        json!({"type": "pedido.creado", "data": {"tag": "rotada"}}),
    )
    .await;
    states_become(&m, &sub, (4, 1, 0)).await;
    let last = r.seen().into_iter().find(|s| tag(s) == "rotada").unwrap();
    assert_eq!(last.key_ids.first(), Some(&new_key), "{:?}", last.key_ids);
    click(&c, "#ver").await;
    let linea = text(&c, "#linea-entrega").await;
    assert_eq!(linea, last.delivery_id);
    let keys = text(&c, "#linea td.claves").await;
    assert!(keys.starts_with(&new_key), "{keys}");
    shot(&c, "25-manage-timeline").await;

    // Pause: an event goes out (the other receiver has it) but not here.
    click_confirmed(&c, "#estado-btn").await;
    let url = url_when(&c, |u| u.contains("hecho=pausada")).await;
    assert!(url.contains("hecho=pausada"), "{url}");
    assert_eq!(text(&c, "#estado").await, "pausada");
    let answer = post(
        &m,
        &t,
        instance,
        json!({"type": "pedido.creado", "data": {"tag": "pausa"}}),
    )
    .await;
    let event = answer["event_id"].as_str().unwrap().to_owned();
    clock
        .wait_for("the event at the other receiver", WAIT, |seen| {
            seen.iter().any(|s| s.event_id == event)
        })
        .await;
    states_become(&m, &sub, (4, 1, 1)).await;
    assert!(
        !r.seen().iter().any(|s| s.event_id == event),
        "sent while paused"
    );
    c.refresh().await.unwrap();
    assert_eq!(text(&c, "#n-pendientes").await, "1");
    shot(&c, "26-manage-paused").await;
    click_confirmed(&c, "#estado-btn").await;
    let url = url_when(&c, |u| u.contains("hecho=activa")).await;
    assert!(url.contains("hecho=activa"), "{url}");
    r.wait_for("the paused event, once reactivated", WAIT, |seen| {
        seen.iter().any(|s| s.event_id == event)
    })
    .await;

    // Edit: a bad URL names the field and changes nothing; a good edit saves.
    set(&c, "#editar #f-url", "ftp://127.0.0.1/x").await;
    set(&c, "#editar #f-nombre", "pedidos (editada)").await;
    click(&c, "#guardar-btn").await;
    let error = text(&c, "div.error").await;
    assert!(error.contains("url"), "{error}");
    assert_eq!(
        c.find(Locator::Css("#editar #f-nombre"))
            .await
            .unwrap()
            .prop("value")
            .await
            .unwrap()
            .as_deref(),
        Some("pedidos (editada)"),
        "the values typed are kept"
    );
    let name: String = sqlx::query_scalar("SELECT nombre FROM subscriptions WHERE id = $1::uuid")
        .bind(&sub)
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(name, "pedidos");
    set(&c, "#editar #f-url", "").await;
    set(&c, "#editar #f-tipos", "pedido.creado").await;
    click(&c, "#guardar-btn").await;
    let url = url_when(&c, |u| u.contains("hecho=guardada")).await;
    assert!(url.contains("hecho=guardada"), "{url}");
    assert_eq!(text(&c, "h1").await, "pedidos (editada)");
    assert_eq!(text(&c, "#tipos").await, "pedido.creado");
    shot(&c, "27-manage-edited").await;

    // An app's allowed destinations: a bad host is named; a good list saves.
    c.goto(&m.url("/console/apps")).await.unwrap();
    let form = format!("form[action=\"/console/apps/{}/destinations\"]", t.app);
    set(
        &c,
        &format!("{form} input[name=destinos]"),
        "127.0.0.1, no es un host",
    )
    .await;
    click(&c, &format!("{form} button")).await;
    let error = text(&c, "div.error").await;
    assert!(error.contains("destinos_permitidos"), "{error}");
    set(
        &c,
        &format!("{form} input[name=destinos]"),
        "127.0.0.1, hooks.example.org",
    )
    .await;
    click(&c, &format!("{form} button")).await;
    let url = url_when(&c, |u| u.contains("hecho=guardada")).await;
    assert!(url.contains("hecho=guardada"), "{url}");
    let allowed: Vec<String> =
        sqlx::query_scalar("SELECT destinos_permitidos FROM apps WHERE id = $1")
            .bind(*t.app.as_uuid())
            .fetch_one(&m.db.pool)
            .await
            .unwrap();
    assert_eq!(allowed, ["127.0.0.1", "hooks.example.org"]);
    shot(&c, "28-manage-apps").await;
    c.close().await.unwrap();
    m.stop().await;
}

/// A session cookie and its CSRF token, from the login form and a page.
async fn session(m: &TestMotor, http: &reqwest::Client) -> (String, String) {
    let res = http
        .post(m.url("/console/login"))
        .form(&[("token", ADMIN_TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let cookie = res.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let page = http
        .get(m.url("/console/apps"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let at = page.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    let csrf = page[at..at + 64].to_owned();
    (cookie, csrf)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn management_needs_a_session_and_its_csrf_token() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({"nombre": "antes"})).await;
    let http = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap();
    let (cookie, csrf) = session(&m, &http).await;

    // `/console/` is the console.
    let res = http
        .get(m.url("/console/"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()["location"], "/console");

    let snapshot = || async {
        let subs: Vec<(String, String, i64)> =
            sqlx::query_as("SELECT nombre, estado, version FROM subscriptions ORDER BY id")
                .fetch_all(&m.db.pool)
                .await
                .unwrap();
        let keys: i64 = sqlx::query_scalar("SELECT count(*) FROM subscription_keys")
            .fetch_one(&m.db.pool)
            .await
            .unwrap();
        let apps: Vec<Vec<String>> = sqlx::query_scalar("SELECT destinos_permitidos FROM apps")
            .fetch_all(&m.db.pool)
            .await
            .unwrap();
        (subs, keys, apps, r.seen().len())
    };
    let before = snapshot().await;
    let new = vec![
        ("app_id", t.app.to_string()),
        ("nombre", "nueva".to_owned()),
        ("url", r.url()),
    ];
    let posts: Vec<(String, Vec<(&str, String)>)> = vec![
        ("/console/subscriptions/new".to_owned(), new),
        (
            format!("/console/subscriptions/{sub}/edit"),
            vec![("nombre", "después".to_owned())],
        ),
        (format!("/console/subscriptions/{sub}/rotate"), vec![]),
        (format!("/console/subscriptions/{sub}/test"), vec![]),
        (format!("/console/subscriptions/{sub}/pause"), vec![]),
        (
            format!("/console/apps/{}/destinations", t.app),
            vec![("destinos", "example.org".to_owned())],
        ),
    ];
    let forged = format!("motor_console=99999999999.{}", "0".repeat(64));
    for (path, fields) in &posts {
        for (cookie, token) in [
            (None, Some(csrf.as_str())),
            (Some(forged.as_str()), Some(csrf.as_str())),
            (Some(cookie.as_str()), None),
            (Some(cookie.as_str()), Some("bad")),
        ] {
            let mut form = fields.clone();
            if let Some(token) = token {
                form.push(("csrf", token.to_owned()));
            }
            let mut req = http.post(m.url(path)).form(&form);
            if let Some(cookie) = cookie {
                req = req.header("cookie", cookie);
            }
            let res = req.send().await.unwrap();
            assert_eq!(
                res.status(),
                StatusCode::FORBIDDEN,
                "{path} {cookie:?} {token:?}"
            );
            assert!(res.text().await.unwrap().contains("No se cambió nada"));
        }
    }
    assert_eq!(
        snapshot().await,
        before,
        "a refused action changed something"
    );

    // Bad input names the field (422), nothing is created.
    let res = http
        .post(m.url("/console/subscriptions/new"))
        .header("cookie", &cookie)
        .form(&[
            ("csrf", csrf.as_str()),
            ("app_id", &t.app.to_string()),
            ("nombre", "x"),
            ("url", "no es una url"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = res.text().await.unwrap();
    assert!(page.contains("url:"), "{page}");
    assert!(page.contains("value=\"no es una url\""), "kept: {page}");
    let res = http
        .post(m.url(&format!("/console/subscriptions/{sub}/edit")))
        .header("cookie", &cookie)
        .form(&[("csrf", csrf.as_str()), ("version", "999")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CONFLICT);
    assert_eq!(snapshot().await, before);

    // With both, an action is done.
    let res = http
        .post(m.url(&format!("/console/subscriptions/{sub}/pause")))
        .header("cookie", &cookie)
        .form(&[("csrf", csrf.as_str()), ("volver", "pagina")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        res.headers()["location"],
        format!("/console/subscriptions/{sub}?hecho=pausada").as_str()
    );
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retried_group_leaves_the_dlq() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let r = Receiver::start().await;
    let broken = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = broken.clone();
    r.script(move |_| {
        if flag.load(std::sync::atomic::Ordering::SeqCst) {
            Reply::status(410)
        } else {
            Reply::status(204)
        }
    });
    let sub = subscribe(&m, &t, &r, json!({})).await;
    for n in 0..2 {
        post(
            &m,
            &t,
            t.instances[0],
            json!({"type": "t", "data": {"n": n}}),
        )
        .await;
    }
    states_become(&m, &sub.to_string(), (0, 2, 0)).await;
    let http = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap();
    let (cookie, csrf) = session(&m, &http).await;
    let dlq = || async {
        http.get(m.url("/console/dlq"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let page = dlq().await;
    assert!(page.contains("<p>2 entregas fallidas."), "{page}");
    assert!(page.contains("action=\"/console/dlq/retry\""));
    super::scrape_until(&m, "the DLQ sampled", |m| {
        m.get("motor_dlq_size") == Some(&2.0)
    })
    .await;

    broken.store(false, std::sync::atomic::Ordering::SeqCst);
    let res = http
        .post(m.url("/console/dlq/retry"))
        .header("cookie", &cookie)
        .form(&[
            ("csrf", csrf.as_str()),
            ("suscripcion_id", &sub.to_string()),
            ("ultimo_error", "http_410"),
            ("motivo", "arreglado"),
            ("confirmar", "si"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res
        .text()
        .await
        .unwrap()
        .contains("2 entregas nuevas en 1 replays"));
    // The failed ones stay as history; the retries are delivered.
    states_become(&m, &sub.to_string(), (2, 2, 0)).await;
    let page = dlq().await;
    assert!(page.contains("<p>0 entregas fallidas."), "{page}");
    assert!(
        !page.contains("action=\"/console/dlq/retry\""),
        "still offered: {page}"
    );
    super::scrape_until(&m, "the DLQ sampled", |m| {
        m.get("motor_dlq_size") == Some(&0.0)
    })
    .await;
    // Retrying the group again sends nothing.
    let res = http
        .post(m.url("/console/dlq/retry"))
        .header("cookie", &cookie)
        .form(&[
            ("csrf", csrf.as_str()),
            ("suscripcion_id", &sub.to_string()),
            ("motivo", "otra vez"),
            ("confirmar", "si"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let page = res.text().await.unwrap();
    assert!(page.contains("0 entregas nuevas en 0 replays"), "{page}");
    states_become(&m, &sub.to_string(), (2, 2, 0)).await;
    m.stop().await;
}
