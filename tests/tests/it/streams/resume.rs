//! Read 500 events, disconnect, resume with `Last-Event-ID` while a
//! producer keeps appending: the union of the two streams is exactly the
//! ledger, in seq order, with no duplicate and no gap — over SSE and over
//! WebSocket.

use motor::serve::Role;
use serde_json::Value;

use super::client::{
    append, ledger, open_ws, wait_for_events, ws_close, ws_next, Producer, Sse, WsFrame,
};
use crate::util::TestMotor;

#[tokio::test]
async fn sse_resumes_with_last_event_id_and_loses_nothing() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    append(&m.db.pool, i, "antes", 300).await;
    let producer = Producer::start(m.db.pool.clone(), m.url(""), t.token.clone(), i);

    let mut received: Vec<(i64, String)> = Vec::new();
    let mut comments = Vec::new();
    let mut first = Sse::open(&m.http, &m.url(""), &t.token, i, "?desde=0", None).await;
    while received.len() < 500 {
        let (id, _, data) = first
            .next_event(&mut comments)
            .await
            .expect("the stream goes on");
        received.push((id, data));
    }
    drop(first);
    let cursor = received.last().unwrap().0;
    assert_eq!(cursor, 500);

    // The URL keeps its first desde (as EventSource does); the header wins.
    let mut second = Sse::open(&m.http, &m.url(""), &t.token, i, "?desde=0", Some(cursor)).await;
    wait_for_events(&m.db.pool, i, 1_500).await;
    producer.stop().await;
    let ledger = ledger(&m.db.pool, i).await;
    let last = ledger.last().unwrap().0;
    while received.last().unwrap().0 < last {
        let (id, _, data) = second
            .next_event(&mut comments)
            .await
            .expect("the stream goes on");
        received.push((id, data));
    }
    // Each stream opens with its cursor line; a slow run (a loaded machine)
    // also sees the 15 s keep-alive. Nothing else: no `fin`.
    assert!(
        comments
            .iter()
            .all(|c| c.starts_with("motor stream") || c == "ping"),
        "{comments:?}"
    );
    let expected: Vec<(i64, String)> = ledger.into_iter().map(|(s, _, e)| (s, e)).collect();
    assert_eq!(received.len(), expected.len());
    assert!(
        received == expected,
        "the union of the streams is not the ledger"
    );
    m.stop().await;
}

#[tokio::test]
async fn websocket_resumes_with_last_event_id_and_loses_nothing() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    append(&m.db.pool, i, "antes", 300).await;
    let producer = Producer::start(m.db.pool.clone(), m.url(""), t.token.clone(), i);

    let mut received: Vec<Value> = Vec::new();
    let mut first = open_ws(&m.url(""), &t.token, i, "?desde=0", None).await;
    while received.len() < 500 {
        match ws_next(&mut first).await.expect("the stream goes on") {
            WsFrame::Envelope(e) => received.push(e),
            WsFrame::Ping => {}
            WsFrame::Close(c) => panic!("closed: {c:?}"),
        }
    }
    ws_close(first).await;
    let cursor = received.last().unwrap()["seq"].as_i64().unwrap();
    assert_eq!(cursor, 500);

    let mut second = open_ws(&m.url(""), &t.token, i, "", Some(cursor)).await;
    wait_for_events(&m.db.pool, i, 1_500).await;
    producer.stop().await;
    let ledger = ledger(&m.db.pool, i).await;
    let last = ledger.last().unwrap().0;
    while received.last().unwrap()["seq"].as_i64().unwrap() < last {
        match ws_next(&mut second).await.expect("the stream goes on") {
            WsFrame::Envelope(e) => received.push(e),
            WsFrame::Ping => {}
            WsFrame::Close(c) => panic!("closed: {c:?}"),
        }
    }
    ws_close(second).await;
    let expected: Vec<Value> = ledger
        .iter()
        .map(|(_, _, e)| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(received.len(), expected.len());
    assert!(
        received == expected,
        "the union of the streams is not the ledger"
    );
    m.stop().await;
}
