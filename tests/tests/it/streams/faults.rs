//! Kill -9 of the process serving a stream, mid-stream: the client resumes
//! on another process with its cursor and loses nothing.

use std::time::Duration;

use super::client::{append, ledger, Frame, Sse};
use crate::util::{topic_prefix, MotorProcess, Tenant, TestDb};

#[tokio::test]
async fn a_client_resumes_on_another_process_after_kill_9() {
    let db = TestDb::new().await;
    let prefix = topic_prefix();
    let (mut a, base_a) = MotorProcess::spawn_api(&db, &prefix, &[]).await;
    let (b, base_b) = MotorProcess::spawn_api(&db, &prefix, &[]).await;
    let t = Tenant::create(&db.pool, 1).await;
    let i = t.instances[0];
    let http = reqwest::Client::new();

    // A producer keeps committing through process B all along.
    let producing = {
        let (http, base_b, token) = (http.clone(), base_b.clone(), t.token.clone());
        tokio::spawn(async move {
            for _ in 0..300 {
                super::client::post(&http, &base_b, &token, i, "p", 5).await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    append(&db.pool, i, "antes", 100).await;

    let mut received: Vec<(i64, String)> = Vec::new();
    let mut sse = Sse::open(&http, &base_a, &t.token, i, "?desde=0", None).await;
    let mut comments = Vec::new();
    while received.len() < 400 {
        let (id, _, data) = sse.next_event(&mut comments).await.expect("A streams");
        received.push((id, data));
    }
    a.kill9();
    // Whatever A had sent before it died is read; then the stream breaks.
    while let Some(frame) = sse.next().await {
        if let Frame::Event { id, data, .. } = frame {
            received.push((id, data));
        }
    }
    let cursor = received.last().unwrap().0;

    let mut sse = Sse::open(&http, &base_b, &t.token, i, "", Some(cursor)).await;
    producing.await.unwrap();
    let ledger: Vec<(i64, String)> = ledger(&db.pool, i)
        .await
        .into_iter()
        .map(|(s, _, e)| (s, e))
        .collect();
    let last = ledger.last().unwrap().0;
    assert_eq!(last, 100 + 300 * 5);
    while received.last().unwrap().0 < last {
        let (id, _, data) = sse.next_event(&mut comments).await.expect("B streams");
        received.push((id, data));
    }
    assert!(
        received == ledger,
        "the client lost or repeated events across the kill"
    );
    drop(b);
}
