//! The hand-over race: streams opened while ten producers commit — from
//! the start (`desde=0`), from a cursor, and from "now" — each see every
//! seq after their start exactly once, in order, whatever committed
//! between the catch-up and the live tail.

use std::time::Duration;

use motor::serve::Role;
use tokio::sync::watch;

use super::client::{ledger, open_ws, ws_close, ws_next, Frame, Producer, Sse, WsFrame};
use crate::util::TestMotor;

/// Whether `seqs` reached the final last seq, once it is known.
fn done(seqs: &[i64], start: i64, last: &watch::Receiver<Option<i64>>) -> bool {
    last.borrow()
        .is_some_and(|last| seqs.last().copied().unwrap_or(start) >= last)
}

/// Reads an SSE stream as it comes until the final last seq; its opening
/// id and the seqs of its events.
async fn read_sse(mut sse: Sse, mut last: watch::Receiver<Option<i64>>) -> (i64, Vec<i64>) {
    let mut opening = None;
    let mut seqs = Vec::new();
    while opening.is_none() || !done(&seqs, opening.unwrap(), &last) {
        let frame = tokio::select! {
            frame = sse.next() => frame.expect("the stream goes on"),
            _ = last.changed() => continue,
        };
        match frame {
            Frame::Id(id) => opening = opening.or(Some(id)),
            Frame::Event { id, data, .. } => {
                let envelope: serde_json::Value = serde_json::from_str(&data).unwrap();
                assert_eq!(envelope["seq"], id);
                seqs.push(id);
            }
            Frame::Comment(_) => {}
        }
    }
    (opening.expect("an opening id"), seqs)
}

async fn read_ws(mut ws: super::client::Ws, mut last: watch::Receiver<Option<i64>>) -> Vec<i64> {
    let mut seqs = Vec::new();
    while seqs.is_empty() || !done(&seqs, 0, &last) {
        let frame = tokio::select! {
            frame = ws_next(&mut ws) => frame.expect("the stream goes on"),
            _ = last.changed() => continue,
        };
        match frame {
            WsFrame::Envelope(e) => seqs.push(e["seq"].as_i64().unwrap()),
            WsFrame::Ping => {}
            WsFrame::Close(c) => panic!("closed: {c:?}"),
        }
    }
    ws_close(ws).await;
    seqs
}

#[tokio::test]
async fn streams_opened_while_ten_producers_commit_see_every_seq_once() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    let producers: Vec<Producer> = (0..10)
        .map(|_| Producer::start(m.db.pool.clone(), m.url(""), t.token.clone(), i))
        .collect();
    let (last_tx, last_rx) = watch::channel(None);

    // Open streams at staggered moments while the producers run, each read
    // as it comes.
    let mut sse = Vec::new();
    let mut ws = Vec::new();
    for round in 0..6 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let now = motor_store::ledger::stream::last_seq(&m.db.pool, i)
            .await
            .unwrap()
            .unwrap();
        let query = match round % 3 {
            0 => "?desde=0".to_owned(),
            1 => format!("?desde={}", now / 2),
            _ => String::new(),
        };
        let stream = Sse::open(&m.http, &m.url(""), &t.token, i, &query, None).await;
        sse.push((
            query.clone(),
            tokio::spawn(read_sse(stream, last_rx.clone())),
        ));
        let stream = open_ws(&m.url(""), &t.token, i, &query, None).await;
        ws.push((query, now, tokio::spawn(read_ws(stream, last_rx.clone()))));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut produced = 0;
    for p in producers {
        produced += p.stop().await;
    }
    let last = ledger(&m.db.pool, i).await.last().unwrap().0;
    assert_eq!(last as usize, produced);
    assert!(last > 500, "only {last} events: the race needs traffic");
    last_tx.send(Some(last)).unwrap();

    for (query, reader) in sse {
        let (opening, seqs) = reader.await.unwrap();
        let expected: Vec<i64> = (opening + 1..=last).collect();
        assert!(
            seqs == expected,
            "SSE {query:?} from {opening}: not every seq exactly once"
        );
        if query == "?desde=0" {
            assert_eq!(opening, 0);
        }
    }
    for (query, opened_at, reader) in ws {
        let seqs = reader.await.unwrap();
        let first = seqs[0];
        match query.as_str() {
            "?desde=0" => assert_eq!(first, 1),
            "" => assert!(first > opened_at, "{first} <= {opened_at}"),
            _ => assert_eq!(first, opened_at / 2 + 1),
        }
        let expected: Vec<i64> = (first..=last).collect();
        assert!(
            seqs == expected,
            "WebSocket {query:?}: not every seq exactly once"
        );
    }
    m.stop().await;
}
