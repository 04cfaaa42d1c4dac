//! The example page `/console/stream` in headless Chromium: typed a key,
//! an instance and a type, it asks for a stream token, opens the stream
//! with `EventSource` and `?token=`, and shows the events appended after —
//! also after a restart of Motor, when its token is long gone from the
//! stream and it resumes after the last event it showed.

use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::json;

use crate::{
    operators::console::{click, fill, page_with, shot, Driver},
    util::{TestDb, TestMotor, ALL_ROLES},
};

/// The page's status line once `wanted` says yes, or as it is after 20 s.
async fn status_when(c: &fantoccini::Client, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = c
            .find(Locator::Css("#status"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if wanted(&text) || Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Appends through the producer API.
async fn post(m: &TestMotor, token: &str, instance: &str, marker: &str) {
    let res = m
        .http
        .post(m.url(&format!("/v1/instances/{instance}/events")))
        .bearer_auth(token)
        .json(&json!({"type": "pedido.creado", "data": {"marca": marker}}))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{:?}", res.text().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_follows_an_instance_live_through_a_stream_token() {
    let db = TestDb::new().await;
    let m = TestMotor::start_on(db.clone(), &ALL_ROLES).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0].to_string();
    // An event before the page opens: not shown (the page follows from now).
    post(&m, &t.token, &instance, "antes-de-abrir").await;

    let driver = Driver::start();
    let c = driver.browser().await;
    c.goto(&m.url("/console/stream")).await.unwrap();
    fill(&c, "#key", &t.token).await;
    fill(&c, "#instance", &instance).await;
    fill(&c, "#types", "pedido.creado").await;
    click(&c, "button[type=submit]").await;
    let status = status_when(&c, |s| s.starts_with("Following")).await;
    assert_eq!(status, format!("Following {instance}."));

    post(&m, &t.token, &instance, "primera-marca").await;
    let page = page_with(&c, "primera-marca").await;
    assert!(page.contains("primera-marca"), "the event never showed");
    assert!(!page.contains("antes-de-abrir"), "an older event showed");
    let row = c
        .find(Locator::Css("#events tr[data-seq='2']"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(row.contains("pedido.creado"), "{row}");
    shot(&c, "tools_stream_page").await;

    // Motor restarts on the same address: the page gets a new token and
    // resumes after seq 2.
    let addr = m.addr.unwrap();
    m.stop().await;
    let m = TestMotor::start_configured(db, &ALL_ROLES, |c| {
        c.http_addr = addr.to_string();
    })
    .await;
    post(&m, &t.token, &instance, "tras-reiniciar").await;
    let status = status_when(&c, |s| s.contains("from seq 2")).await;
    assert_eq!(status, format!("Following {instance} from seq 2."));
    let page = page_with(&c, "tras-reiniciar").await;
    assert!(
        page.contains("tras-reiniciar"),
        "no event after the restart"
    );
    let shown = c.find_all(Locator::Css("#events tr")).await.unwrap().len();
    assert_eq!(shown, 2, "an event shown twice or missing");
    c.close().await.unwrap();
    m.stop().await;
}
