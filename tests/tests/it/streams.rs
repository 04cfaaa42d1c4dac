//! `GET /v1/instances/{id}/events/stream`: SSE and WebSocket over the
//! ledger, resumable by cursor. Here the contract's edges (access, cursors,
//! the 410 window, types, heartbeats, the connection bound, shutdown);
//! `resume` and `handover` prove no gap and no duplicate, `load` the fan-out
//! and the slow-reader cut-off, `faults` a kill -9 of the serving process.

pub(crate) mod client;
mod faults;
mod handover;
mod load;
mod resume;

use std::time::Duration;

use motor::serve::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use self::client::{
    append, ledger, open_sse, open_ws, word, ws_close, ws_next, Frame, Sse, WsFrame,
};
use crate::{
    subscriptions::call,
    util::{key, TestMotor, ADMIN_TOKEN},
};

async fn refusal(
    m: &TestMotor,
    token: &str,
    instance: &str,
    query: &str,
    last: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = m
        .http
        .get(m.url(&format!("/v1/instances/{instance}/events/stream{query}")))
        .bearer_auth(token);
    if let Some(last) = last {
        req = req.header("Last-Event-ID", last);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    if status == StatusCode::OK {
        // A stream, not a refusal: it never ends, so its body is not read.
        return (status, Value::Null);
    }
    (status, res.json().await.unwrap())
}

#[tokio::test]
async fn access_cursors_and_types_are_checked() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    append(&m.db.pool, a, "x", 5).await;

    // A key restricted to instance a: 403 on b, 200 on a.
    let only_a = key(&m.db.pool, t.app, &["events:read"], &[a]).await;
    let (status, body) = refusal(&m, &only_a, &b.to_string(), "", None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("sin_permiso"))
    );
    Sse::open(&m.http, &m.url(""), &only_a, a, "?desde=0", None).await;
    // Without events:read: 403. Without a key: 401.
    let writer = key(&m.db.pool, t.app, &["events:write"], &[]).await;
    let (status, _) = refusal(&m, &writer, &a.to_string(), "", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let res = m
        .http
        .get(m.url(&format!("/v1/instances/{a}/events/stream")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    // Unknown instance, or another app's: 404; not an id: 422.
    let (status, _) = refusal(&m, &t.token, &uuid::Uuid::new_v4().to_string(), "", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let other = m.tenant(1).await;
    let (status, _) = refusal(&m, &t.token, &other.instances[0].to_string(), "", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Bad cursors name where they came from.
    for bad in ["abc", "-1", "1.5", "", "6"] {
        let (status, body) =
            refusal(&m, &t.token, &a.to_string(), &format!("?desde={bad}"), None).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "desde={bad}");
        assert_eq!(body["error"]["campo"], "query.desde", "desde={bad}");
        let (status, body) = refusal(&m, &t.token, &a.to_string(), "?desde=1", Some(bad)).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "Last-Event-ID: {bad}"
        );
        assert_eq!(body["error"]["campo"], "header.Last-Event-ID");
    }
    // The header wins over a good `desde`, not over one that is no cursor
    // at all ("6", past the end, is a cursor: the header's 1 wins).
    for bad in ["abc", "-1", "1.5", ""] {
        let (status, body) = refusal(
            &m,
            &t.token,
            &a.to_string(),
            &format!("?desde={bad}"),
            Some("1"),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "desde={bad}");
        assert_eq!(body["error"]["campo"], "query.desde", "desde={bad}");
    }
    Sse::open(&m.http, &m.url(""), &t.token, a, "?desde=6", Some(1)).await;
    // The last event is a fine cursor: nothing to catch up.
    Sse::open(&m.http, &m.url(""), &t.token, a, "?desde=5", None).await;
    let many = vec!["t"; 21].join(",");
    let (status, body) = refusal(
        &m,
        &t.token,
        &a.to_string(),
        &format!("?types={many}"),
        None,
    )
    .await;
    assert_eq!(
        (status, body["error"]["campo"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("query.types"))
    );
    m.stop().await;
}

#[tokio::test]
async fn types_filter_the_catch_up_and_the_live_events() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    for n in 0..30 {
        let kind = ["a.uno", "b.dos", "c.tres"][n % 3];
        append(&m.db.pool, i, kind, 1).await;
    }
    let mut sse = Sse::open(
        &m.http,
        &m.url(""),
        &t.token,
        i,
        "?desde=0&types=a.uno,c.tres",
        None,
    )
    .await;
    let mut ws = open_ws(&m.url(""), &t.token, i, "?desde=0&types=c.tres", None).await;
    for n in 0..30 {
        let kind = ["a.uno", "b.dos", "c.tres"][n % 3];
        append(&m.db.pool, i, kind, 1).await;
    }
    let all = ledger(&m.db.pool, i).await;
    let wanted = |types: &[&str]| {
        all.iter()
            .filter(|(_, ty, _)| types.contains(&ty.as_str()))
            .cloned()
            .collect::<Vec<_>>()
    };
    let expected = wanted(&["a.uno", "c.tres"]);
    assert_eq!(expected.len(), 40);
    let mut comments = Vec::new();
    for (seq, ty, envelope) in &expected {
        let (id, event, data) = sse.next_event(&mut comments).await.unwrap();
        assert_eq!((&id, &event, &data), (seq, ty, envelope));
    }
    for (seq, _, envelope) in wanted(&["c.tres"]) {
        let Some(WsFrame::Envelope(e)) = ws_next(&mut ws).await else {
            panic!("an envelope")
        };
        assert_eq!(e["seq"], seq);
        assert_eq!(e, serde_json::from_str::<Value>(&envelope).unwrap());
    }
    ws_close(ws).await;
    m.stop().await;
}

#[tokio::test]
async fn expired_cursors_are_410_with_the_first_resumable_one() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    append(&m.db.pool, i, "x", 20).await;
    // Events 1–10 were received 100 h ago, past the default 72 h.
    sqlx::query("UPDATE events SET recibido_en = now() - interval '100 hours' WHERE seq <= 10")
        .execute(&m.db.pool)
        .await
        .unwrap();
    for (query, last) in [
        ("?desde=3", None),
        ("?desde=9", None),
        ("?desde=15", Some("3")),
    ] {
        let (status, body) = refusal(&m, &t.token, &i.to_string(), query, last).await;
        assert_eq!(status, StatusCode::GONE, "{query} {last:?}");
        assert_eq!(body["error"]["code"], "cursor_vencido");
        assert!(body["error"]["message"].is_string());
        assert_eq!(body["primer_cursor"], 10);
    }
    // Cursor 10 misses nothing: its next event is recent.
    let mut sse = Sse::open(&m.http, &m.url(""), &t.token, i, "?desde=10", None).await;
    assert_eq!(sse.next().await, Some(Frame::Id(10)));
    let mut comments = Vec::new();
    assert_eq!(sse.next_event(&mut comments).await.unwrap().0, 11);
    // desde=0 starts at the first resumable event.
    let mut sse = Sse::open(&m.http, &m.url(""), &t.token, i, "?desde=0", None).await;
    assert_eq!(sse.next_event(&mut comments).await.unwrap().0, 11);
    // A wider window makes cursor 3 resumable again.
    let (status, _) = call(
        &m,
        reqwest::Method::PATCH,
        "/v1/admin/settings",
        ADMIN_TOKEN,
        Some(json!({"streams.retencion_horas": 200})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let mut sse = Sse::open(&m.http, &m.url(""), &t.token, i, "?desde=3", None).await;
    assert_eq!(sse.next_event(&mut comments).await.unwrap().0, 4);
    // Nothing after the cursor: resumable however old it is.
    sqlx::query("UPDATE events SET recibido_en = now() - interval '1000 hours'")
        .execute(&m.db.pool)
        .await
        .unwrap();
    Sse::open(&m.http, &m.url(""), &t.token, i, "?desde=20", None).await;
    let (status, body) = refusal(&m, &t.token, &i.to_string(), "?desde=19", None).await;
    assert_eq!(
        (status, body["primer_cursor"].as_i64()),
        (StatusCode::GONE, Some(20))
    );
    m.stop().await;
}

#[tokio::test]
async fn a_cursor_whose_next_event_was_redacted_is_410() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    append(&m.db.pool, i, "x", 12).await;
    // Events 1–5 received 2 days ago (inside the 72 h stream window), and
    // content kept for 1 day: retention redacts them.
    sqlx::query("UPDATE events SET recibido_en = now() - interval '2 days' WHERE seq <= 5")
        .execute(&m.db.pool)
        .await
        .unwrap();
    let (status, _) = call(
        &m,
        reqwest::Method::PATCH,
        "/v1/admin/settings",
        ADMIN_TOKEN,
        Some(json!({"retencion.dias_contenido": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let config = motor_engine::SweeperConfig::default();
    assert_eq!(
        motor_engine::redact_once(&config, &m.db.pool)
            .await
            .unwrap(),
        5
    );
    for cursor in ["?desde=1", "?desde=4"] {
        let (status, body) = refusal(&m, &t.token, &i.to_string(), cursor, None).await;
        assert_eq!(status, StatusCode::GONE, "{cursor}");
        assert_eq!(body["error"]["code"], "cursor_vencido");
        assert_eq!(body["primer_cursor"], 5, "{cursor}");
    }
    // The first resumable cursor, and desde=0, start after the redacted part.
    let mut comments = Vec::new();
    let mut sse = Sse::open(&m.http, &m.url(""), &t.token, i, "?desde=5", None).await;
    assert_eq!(sse.next_event(&mut comments).await.unwrap().0, 6);
    let mut sse = Sse::open(&m.http, &m.url(""), &t.token, i, "?desde=0", None).await;
    assert_eq!(sse.next_event(&mut comments).await.unwrap().0, 6);
    m.stop().await;
}

#[tokio::test]
async fn opening_position_heartbeats_and_live_events() {
    let m = TestMotor::start_configured(crate::util::TestDb::new().await, &[Role::Api], |c| {
        c.streams_heartbeat_ms = Some(200)
    })
    .await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    append(&m.db.pool, i, "antes", 3).await;
    // No cursor: events committed after the request; the opening id says
    // where it starts.
    let mut sse = Sse::open(&m.http, &m.url(""), &t.token, i, "", None).await;
    let mut ws = open_ws(&m.url(""), &t.token, i, "", None).await;
    let mut frames = Vec::new();
    while frames.len() < 2 {
        frames.push(sse.next().await.unwrap());
    }
    // The opening block: `: motor stream cursor=3` and `id: 3`.
    assert_eq!(frames[0], Frame::Id(3));
    assert_eq!(frames[1], Frame::Comment("ping".into()));
    assert!(matches!(ws_next(&mut ws).await, Some(WsFrame::Ping)));
    append(&m.db.pool, i, "despues", 2).await;
    let mut comments = Vec::new();
    let (id, event, data) = sse.next_event(&mut comments).await.unwrap();
    assert_eq!((id, event.as_str()), (4, "despues"));
    assert_eq!(serde_json::from_str::<Value>(&data).unwrap()["seq"], 4);
    loop {
        match ws_next(&mut ws).await.unwrap() {
            WsFrame::Envelope(e) => {
                assert_eq!(e["seq"], 4);
                break;
            }
            WsFrame::Ping => {}
            WsFrame::Close(c) => panic!("closed: {c:?}"),
        }
    }
    // Both streams count in /metrics; the closed WebSocket stops counting.
    assert_eq!(streams_open(&m).await, 2);
    ws_close(ws).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while streams_open(&m).await != 1 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(streams_open(&m).await, 1);
    drop(sse);
    m.stop().await;
}

/// `motor_streams_open` as `/metrics` shows it.
async fn streams_open(m: &TestMotor) -> i64 {
    m.metrics()
        .await
        .lines()
        .find_map(|l| l.strip_prefix("motor_streams_open "))
        .and_then(|v| v.trim().parse().ok())
        .expect("motor_streams_open in /metrics")
}

#[tokio::test]
async fn connections_are_bounded_and_shutdown_ends_streams_with_their_cursor() {
    let m = TestMotor::start_configured(crate::util::TestDb::new().await, &[Role::Api], |c| {
        c.streams_max_connections = 2
    })
    .await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    append(&m.db.pool, i, "x", 4).await;
    let mut sse = Sse::open(&m.http, &m.url(""), &t.token, i, "?desde=0", None).await;
    let mut ws = open_ws(&m.url(""), &t.token, i, "?desde=2", None).await;
    let res = open_sse(&m.http, &m.url(""), &t.token, i, "", None).await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(res.headers()["retry-after"], "5");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "no_disponible");
    let mut comments = Vec::new();
    for seq in 1..=4 {
        assert_eq!(sse.next_event(&mut comments).await.unwrap().0, seq);
    }
    for seq in 3..=4 {
        let Some(WsFrame::Envelope(e)) = ws_next(&mut ws).await else {
            panic!()
        };
        assert_eq!(e["seq"], seq);
    }
    // A closed stream frees its slot.
    drop(sse);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut sse = loop {
        let res = open_sse(&m.http, &m.url(""), &t.token, i, "?desde=1", None).await;
        if res.status() == StatusCode::OK {
            break res;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slot never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    drop(sse.chunk().await);

    // Shutdown: each stream ends with its cursor, and stop() returns.
    let stop = tokio::spawn(m.stop());
    let mut text = String::new();
    while let Ok(Some(chunk)) = sse.chunk().await {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert!(
        text.ends_with(": fin motivo=apagado cursor=4\n\n"),
        "{text}"
    );
    let Some(WsFrame::Close(Some(close))) = ws_next(&mut ws).await else {
        panic!("a close frame")
    };
    assert_eq!(u16::from(close.code), 1001);
    assert_eq!(word(&close.reason, "cursor").as_deref(), Some("4"));
    tokio::time::timeout(Duration::from_secs(20), stop)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_websocket_that_stops_reading_is_closed_with_its_cursor() {
    let m = TestMotor::start_configured(crate::util::TestDb::new().await, &[Role::Api], |c| {
        c.streams_buffer = 16
    })
    .await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    // A client socket with a 4 KiB receive buffer (Linux lets a plain one
    // grow to 32 MB here), reading nothing while 10 MB of 100 KB events
    // commit: far more than the kernel and the server's socket hold for
    // it (about 4 MB), and its buffer is 16 events.
    let addr = m.addr.unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let tcp = socket.connect(addr).await.unwrap();
    let mut req = format!("ws://{addr}/v1/instances/{i}/events/stream?desde=0")
        .into_client_request()
        .unwrap();
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {}", t.token).parse().unwrap(),
    );
    let (ws, _) =
        tokio_tungstenite::client_async(req, tokio_tungstenite::MaybeTlsStream::Plain(tcp))
            .await
            .unwrap();
    let mut ws: client::Ws = ws;
    // Commits of 4 events: fewer than the buffer, so the client is live
    // (not catching up) when it falls behind.
    for _ in 0..25 {
        client::append_padded(&m.db.pool, i, "grande", 4, 100_000).await;
    }
    let mut seqs = Vec::new();
    let close = loop {
        match ws_next(&mut ws).await.expect("a close frame") {
            WsFrame::Envelope(e) => seqs.push(e["seq"].as_i64().unwrap()),
            WsFrame::Ping => {}
            WsFrame::Close(close) => break close.expect("a close frame with a reason"),
        }
    };
    assert_eq!(u16::from(close.code), 1013);
    assert_eq!(word(&close.reason, "motivo").as_deref(), Some("lento"));
    let cursor: i64 = word(&close.reason, "cursor").unwrap().parse().unwrap();
    assert!(cursor < 100, "never cut off");
    assert_eq!(seqs, (1..=cursor).collect::<Vec<_>>());
    // It resumes from the cursor in the reason and gets the rest.
    let mut ws = open_ws(&m.url(""), &t.token, i, &format!("?desde={cursor}"), None).await;
    for seq in cursor + 1..=100 {
        let Some(WsFrame::Envelope(e)) = ws_next(&mut ws).await else {
            panic!("an envelope")
        };
        assert_eq!(e["seq"], seq);
    }
    ws_close(ws).await;
    m.stop().await;
}
