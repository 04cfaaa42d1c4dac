//! The stream's opening, as documented (issue 36, item 6): every SSE
//! stream opens with the comment `: motor stream cursor=N` and a data-less
//! `id: N` block — where the stream starts, so a client that reconnects
//! before any event resumes without a gap. `desde=0` starts at the first
//! event still resumable and is never a 410; it is not silent about what
//! it passed over: its opening cursor is the last event it skips.

use reqwest::StatusCode;

use crate::{
    streams::client::{append, STUCK},
    util::TestMotor,
};

/// The stream's first block, verbatim.
async fn opening(m: &TestMotor, token: &str, instance: &str, query: &str) -> String {
    let mut res = m
        .http
        .get(m.url(&format!("/v1/instances/{instance}/events/stream{query}")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "{query}");
    let mut buf = Vec::new();
    while !buf.windows(2).any(|w| w == b"\n\n") {
        let chunk = tokio::time::timeout(STUCK, res.chunk())
            .await
            .expect("the opening in time")
            .unwrap()
            .expect("the stream is open");
        buf.extend_from_slice(&chunk);
    }
    let text = String::from_utf8(buf).unwrap();
    let end = text.find("\n\n").unwrap() + 2;
    text[..end].to_owned()
}

#[tokio::test]
async fn every_stream_opens_with_its_cursor_and_a_start_at_0_says_what_it_skipped() {
    let m = TestMotor::start(&[motor::serve::Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    let instance = i.to_string();
    // No event yet: the cursor is 0.
    assert_eq!(
        opening(&m, &t.token, &instance, "").await,
        ": motor stream cursor=0\nid: 0\n\n"
    );
    append(&m.db.pool, i, "x", 20).await;
    assert_eq!(
        opening(&m, &t.token, &instance, "").await,
        ": motor stream cursor=20\nid: 20\n\n"
    );
    assert_eq!(
        opening(&m, &t.token, &instance, "?desde=7").await,
        ": motor stream cursor=7\nid: 7\n\n"
    );
    assert_eq!(
        opening(&m, &t.token, &instance, "?desde=0").await,
        ": motor stream cursor=0\nid: 0\n\n"
    );
    // Events 1–10 passed the 72 h window: desde=0 is a 200 that opens at
    // cursor 10 (events 1–10 are not sent), never a 410.
    sqlx::query("UPDATE events SET recibido_en = now() - interval '100 hours' WHERE seq <= 10")
        .execute(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(
        opening(&m, &t.token, &instance, "?desde=0").await,
        ": motor stream cursor=10\nid: 10\n\n"
    );
    m.stop().await;
}
