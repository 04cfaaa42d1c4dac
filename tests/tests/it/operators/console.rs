//! The web console in a real browser: headless Chromium driven through
//! chromedriver (WebDriver, `fantoccini`). Log in, look at every page, find
//! a failed delivery, retry it with a motivo, see it delivered. Screenshots
//! of each page go to `$CARGO_TARGET_DIR/console-screenshots/`. Chromium
//! and chromedriver are installed from the Debian packages by
//! `scripts/chromium` when missing: this test is never skipped.
//!
//! Also, without a browser: an action without a valid session or CSRF
//! token is refused (403) and changes nothing; bad form input names the
//! field and changes nothing.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use fantoccini::{Client, ClientBuilder, Locator};
use motor_system_tests::harness::services::{free_port, wait_port};
use reqwest::{redirect::Policy, StatusCode};
use serde_json::json;

use crate::dispatch::{motor, subscribe, WAIT};
use crate::{
    deliveries::post,
    dispatch::receiver::{Receiver, Reply},
    util::{TestMotor, ADMIN_TOKEN},
};

/// Where the screenshots go: `$CARGO_TARGET_DIR/console-screenshots/`.
fn screenshots_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// chromedriver on a free port, stopped when dropped.
pub(crate) struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    pub(crate) fn start() -> Self {
        let script = crate::util::repo_root().join("scripts/chromium");
        let out = Command::new(&script)
            .output()
            .expect("running scripts/chromium");
        assert!(
            out.status.success(),
            "scripts/chromium could not install Chromium: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = free_port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting chromedriver");
        wait_port(
            &format!("127.0.0.1:{port}"),
            "chromedriver",
            Duration::from_secs(20),
        );
        Self { child, port }
    }

    pub(crate) async fn browser(&self) -> Client {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,1000"],
            }),
        );
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("a Chromium session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "{name}: not a PNG");
    std::fs::write(screenshots_dir().join(format!("{name}.png")), png).unwrap();
}

/// The text of the element at `css`, once the page shows it (a click's
/// navigation may still be under way).
async fn text(c: &Client, css: &str) -> String {
    c.wait()
        .for_element(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Types `keys` into the element at `css`.
pub(crate) async fn fill(c: &Client, css: &str, keys: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .send_keys(keys)
        .await
        .unwrap();
}

/// Clicks the element at `css`.
pub(crate) async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// The page's source once it contains `wanted`, or as it is after 20 s
/// (a click's navigation may still be under way when it returns).
pub(crate) async fn page_with(c: &Client, wanted: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let page = c.source().await.unwrap();
        if page.contains(wanted) || Instant::now() > deadline {
            return page;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The current URL once `wanted` says yes, or as it is after 20 s.
pub(super) async fn url_when(c: &Client, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let url = c.current_url().await.unwrap().to_string();
        if wanted(&url) || Instant::now() > deadline {
            return url;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A failed delivery: a subscription whose receiver answers 410 while
/// `broken` holds, and one event.
async fn failed_delivery(m: &TestMotor, r: &Receiver, broken: &Arc<AtomicBool>) -> String {
    let t = m.tenant(1).await;
    let flag = broken.clone();
    r.script(move |_| {
        if flag.load(Ordering::SeqCst) {
            Reply::status(410)
        } else {
            Reply::status(204)
        }
    });
    subscribe(m, &t, r, json!({"nombre": "receptor <b>del</b> cliente"})).await;
    post(
        m,
        &t,
        t.instances[0],
        json!({"type": "pedido.creado", "data": {"n": 1}}),
    )
    .await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_operator_retries_a_failed_delivery_in_the_browser() {
    let driver = Driver::start();
    let m = motor(None).await;
    let r = Receiver::start().await;
    let broken = Arc::new(AtomicBool::new(true));
    let failed = failed_delivery(&m, &r, &broken).await;
    let c = driver.browser().await;

    // Not logged in: the login page. A wrong token is refused.
    c.goto(&m.url("/console")).await.unwrap();
    assert!(c
        .current_url()
        .await
        .unwrap()
        .path()
        .ends_with("/console/login"));
    shot(&c, "01-login").await;
    fill(&c, "#token", "wrong").await;
    click(&c, "#entrar").await;
    assert!(page_with(&c, "no es el token de operador")
        .await
        .contains("no es el token de operador"));
    fill(&c, "#token", ADMIN_TOKEN).await;
    click(&c, "#entrar").await;
    let url = url_when(&c, |u| u.ends_with("/console")).await;
    assert!(url.ends_with("/console"), "{url}");
    // The sampler takes a point a second (in tests); a chart has a line
    // once it has two. A busy machine may take longer than that.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let overview = loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        c.refresh().await.unwrap();
        let overview = c.source().await.unwrap();
        if overview.contains("<polyline") || std::time::Instant::now() > deadline {
            break overview;
        }
    };
    assert!(overview.contains("<polyline"), "no chart drawn");
    assert!(!overview.contains(ADMIN_TOKEN), "the token is shown");
    shot(&c, "02-overview").await;

    c.goto(&m.url("/console/subscriptions")).await.unwrap();
    let subs = c.source().await.unwrap();
    // Data is escaped; the destination shows scheme and host only.
    assert!(subs.contains("receptor &lt;b&gt;del&lt;/b&gt; cliente"));
    assert!(!subs.contains("/hook"));
    assert!(!subs.contains("whsec_"));
    shot(&c, "03-subscriptions").await;

    c.goto(&m.url("/console/dlq")).await.unwrap();
    assert!(c.source().await.unwrap().contains("http_410"));
    shot(&c, "04-dlq").await;

    c.goto(&m.url("/console/alerts")).await.unwrap();
    shot(&c, "05-alerts").await;

    // Find the failed delivery by searching.
    c.goto(&m.url("/console/deliveries")).await.unwrap();
    fill(&c, "#f-estado", "fallida").await;
    click(&c, "#buscar-btn").await;
    // The page before the search lists deliveries too: wait for the
    // search's own page before reading a link off it.
    let url = url_when(&c, |u| u.contains("estado=fallida")).await;
    assert!(url.contains("estado=fallida"), "{url}");
    let link = c
        .wait()
        .for_element(Locator::Css("a.entrega"))
        .await
        .unwrap();
    shot(&c, "06-deliveries-search").await;
    assert_eq!(link.text().await.unwrap(), failed);
    link.click().await.unwrap();
    assert_eq!(text(&c, "#estado").await, "fallida");
    assert!(text(&c, "#intentos").await.contains("410"));
    shot(&c, "07-delivery-failed").await;

    // The receiver is fixed; retry with a motivo, confirm.
    broken.store(false, Ordering::SeqCst);
    fill(&c, "#motivo", "receptor arreglado").await;
    click(&c, "#reintentar-btn").await;
    assert!(page_with(&c, "Confirmar el reintento")
        .await
        .contains("Confirmar el reintento"));
    shot(&c, "08-retry-confirm").await;
    click(&c, "#confirmar-btn").await;
    let url = url_when(&c, |u| u.contains("reintentadas=1")).await;
    assert!(url.contains("reintentadas=1"), "{url}");

    // The retry (a new delivery of the same event) is delivered.
    let deadline = Instant::now() + WAIT;
    loop {
        let other = c.find(Locator::Css("td.otra-estado")).await;
        if let Ok(cell) = other {
            if cell.text().await.is_ok_and(|t| t == "entregada") {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the retry was not delivered");
        tokio::time::sleep(Duration::from_millis(300)).await;
        c.refresh().await.unwrap();
    }
    c.execute("document.getElementById('otras').scrollIntoView()", vec![])
        .await
        .unwrap();
    shot(&c, "09-delivery-retried").await;
    let motivo: String = sqlx::query_scalar("SELECT motivo FROM replays")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(motivo, "receptor arreglado");
    c.close().await.unwrap();
    m.stop().await;
}

/// A session cookie from the login form.
async fn login(m: &TestMotor, http: &reqwest::Client) -> String {
    let res = http
        .post(m.url("/console/login"))
        .form(&[("token", ADMIN_TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    cookie.split(';').next().unwrap().to_owned()
}

/// The CSRF token a page's forms carry.
async fn csrf(m: &TestMotor, http: &reqwest::Client, cookie: &str) -> String {
    let page = http
        .get(m.url("/console/dlq"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let at = page.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    page[at..at + 64].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn console_actions_need_a_session_and_its_csrf_token() {
    let m = motor(None).await;
    let r = Receiver::start().await;
    let broken = Arc::new(AtomicBool::new(true));
    let failed = failed_delivery(&m, &r, &broken).await;
    let http = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap();
    let replays = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM replays")
            .fetch_one(&m.db.pool)
            .await
            .unwrap()
    };
    let action = m.url(&format!("/console/deliveries/{failed}/retry"));
    let form = |csrf: &str| {
        vec![
            ("csrf", csrf.to_owned()),
            ("motivo", "x".to_owned()),
            ("confirmar", "si".to_owned()),
        ]
    };

    // Pages without a session go to the login page.
    let res = http.get(m.url("/console/dlq")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    // A wrong token does not log in.
    let res = http
        .post(m.url("/console/login"))
        .form(&[("token", "nope")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(res.headers().get("set-cookie").is_none());

    let cookie = login(&m, &http).await;
    let token = csrf(&m, &http, &cookie).await;
    // No session, a forged session, a missing or wrong CSRF token: 403.
    let forged = format!("motor_console=99999999999.{}", "0".repeat(64));
    for (cookie, csrf) in [
        (None, token.clone()),
        (Some(forged.as_str()), token.clone()),
        (Some(cookie.as_str()), String::new()),
        (Some(cookie.as_str()), "0".repeat(64)),
    ] {
        let mut req = http.post(&action).form(&form(&csrf));
        if let Some(cookie) = cookie {
            req = req.header("cookie", cookie);
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{cookie:?} {csrf}");
        assert!(res.text().await.unwrap().contains("No se cambió nada"));
    }
    assert_eq!(replays().await, 0);
    let sub: uuid::Uuid = sqlx::query_scalar("SELECT id FROM subscriptions")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    let res = http
        .post(m.url(&format!("/console/subscriptions/{sub}/pause")))
        .header("cookie", &cookie)
        .form(&[("csrf", "bad")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let estado: String = sqlx::query_scalar("SELECT estado FROM subscriptions")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(estado, "activa");

    // Bad input: an empty motivo is named, nothing is retried.
    let res = http
        .post(&action)
        .header("cookie", &cookie)
        .form(&[
            ("csrf", token.as_str()),
            ("motivo", " "),
            ("confirmar", "si"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(res.text().await.unwrap().contains("body.motivo"));
    assert_eq!(replays().await, 0);
    // A bad search names its field.
    let res = http
        .get(m.url("/console/deliveries?estado=rota"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(res.text().await.unwrap().contains("query.estado"));

    // With both, the action is done: pause, then the retry.
    let res = http
        .post(m.url(&format!("/console/subscriptions/{sub}/pause")))
        .header("cookie", &cookie)
        .form(&[("csrf", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let res = http
        .post(&action)
        .header("cookie", &cookie)
        .form(&form(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(replays().await, 1);

    // A DLQ group: the first POST only asks for confirmation.
    let group = |confirm: bool| {
        let mut f = vec![
            ("csrf", token.clone()),
            ("suscripcion_id", sub.to_string()),
            ("ultimo_error", "http_410".to_owned()),
            ("motivo", "lote".to_owned()),
        ];
        if confirm {
            f.push(("confirmar", "si".to_owned()));
        }
        f
    };
    let res = http
        .post(m.url("/console/dlq/retry"))
        .header("cookie", &cookie)
        .form(&group(false))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.text().await.unwrap().contains("Confirmar el reintento"));
    assert_eq!(replays().await, 1);
    let res = http
        .post(m.url("/console/dlq/retry"))
        .header("cookie", &cookie)
        .form(&group(true))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    // The group's one failed delivery was just sent again (its retry is
    // pending, the subscription paused): it has left the DLQ, so the
    // group sends nothing more (issue 36, item 6).
    assert!(res
        .text()
        .await
        .unwrap()
        .contains("0 entregas nuevas en 0 replays"));
    assert_eq!(replays().await, 1);
    m.stop().await;
}
