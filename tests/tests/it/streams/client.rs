//! Plain stream clients for the tests (no Motor code): an SSE reader over
//! reqwest, a WebSocket reader over tokio-tungstenite, and helpers to
//! produce events and read the ledger back.

use std::time::Duration;

use crate::util::append_to_ledger;
use futures::StreamExt;
use motor_domain::InstanceId;
use motor_store::Pool;
use serde_json::{json, Value};
use tokio_tungstenite::{
    tungstenite::{client::IntoClientRequest, protocol::CloseFrame, Message},
    MaybeTlsStream, WebSocketStream,
};

/// How long a test waits for the next frame before it calls the stream stuck.
pub const STUCK: Duration = Duration::from_secs(30);

/// One SSE block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Event {
        id: i64,
        event: String,
        data: String,
    },
    /// A block with an `id:` and no data (the opening position).
    Id(i64),
    /// A block of comments only (`: ping`, `: fin …`).
    Comment(String),
}

/// Opens `GET {base}/v1/instances/{instance}/events/stream{query}`.
pub async fn open_sse(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    instance: InstanceId,
    query: &str,
    last_event_id: Option<i64>,
) -> reqwest::Response {
    let mut req = http
        .get(format!(
            "{base}/v1/instances/{instance}/events/stream{query}"
        ))
        .bearer_auth(token);
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id.to_string());
    }
    req.send().await.unwrap()
}

/// An open SSE stream, read block by block.
pub struct Sse {
    res: reqwest::Response,
    buf: Vec<u8>,
    frames: std::collections::VecDeque<Frame>,
}

impl Sse {
    pub async fn open(
        http: &reqwest::Client,
        base: &str,
        token: &str,
        instance: InstanceId,
        query: &str,
        last_event_id: Option<i64>,
    ) -> Self {
        let res = open_sse(http, base, token, instance, query, last_event_id).await;
        assert_eq!(res.status(), 200, "{:?}", res.text().await);
        assert_eq!(res.headers()["content-type"], "text/event-stream");
        Self {
            res,
            buf: Vec::new(),
            frames: Default::default(),
        }
    }

    /// The next block; `None` at the end of the stream (or a cut
    /// connection).
    pub async fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some(frame) = self.frames.pop_front() {
                return Some(frame);
            }
            match tokio::time::timeout(STUCK, self.res.chunk()).await {
                Ok(Ok(Some(chunk))) => {
                    self.buf.extend_from_slice(&chunk);
                    let used = parse_blocks(&self.buf, &mut self.frames);
                    self.buf.drain(..used);
                }
                Ok(Ok(None)) | Ok(Err(_)) => return None,
                Err(_) => panic!("no SSE data for {STUCK:?}"),
            }
        }
    }

    /// The next event, skipping comments and id-only blocks; `None` at the
    /// end, with the comments seen on the way. Stuck when no event comes
    /// for [`STUCK`]: the server's `: ping` comments keep the connection's
    /// data flowing, so without this a test whose producer died waited for
    /// its events forever (a CI run hung 437 s on one until killed).
    pub async fn next_event(
        &mut self,
        comments: &mut Vec<String>,
    ) -> Option<(i64, String, String)> {
        let deadline = tokio::time::Instant::now() + STUCK;
        loop {
            let frame = tokio::time::timeout_at(deadline, self.next())
                .await
                .unwrap_or_else(|_| panic!("no SSE event for {STUCK:?}; comments {comments:?}"))?;
            match frame {
                Frame::Event { id, event, data } => return Some((id, event, data)),
                Frame::Comment(c) => comments.push(c),
                Frame::Id(_) => {}
            }
        }
    }
}

/// Parses every complete block of `buf` into `out`; the bytes used.
pub fn parse_blocks(buf: &[u8], out: &mut std::collections::VecDeque<Frame>) -> usize {
    let mut used = 0;
    while let Some(end) = buf[used..].windows(2).position(|w| w == b"\n\n") {
        let block = &buf[used..used + end + 2];
        out.push_back(parse_block(std::str::from_utf8(block).unwrap()));
        used += end + 2;
    }
    used
}

fn parse_block(block: &str) -> Frame {
    let (mut id, mut event, mut data, mut comment) = (None, None, None, Vec::new());
    for line in block.lines().filter(|l| !l.is_empty()) {
        if let Some(c) = line.strip_prefix(':') {
            comment.push(c.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("id: ") {
            id = Some(v.parse::<i64>().unwrap());
        } else if let Some(v) = line.strip_prefix("event: ") {
            event = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("data: ") {
            assert!(data.is_none(), "one data line per event: {block}");
            data = Some(v.to_owned());
        } else {
            panic!("unexpected SSE line {line:?}");
        }
    }
    match (id, event, data) {
        (Some(id), Some(event), Some(data)) => Frame::Event { id, event, data },
        (Some(id), None, None) => Frame::Id(id),
        (None, None, None) => Frame::Comment(comment.join("\n")),
        _ => panic!("malformed SSE block {block:?}"),
    }
}

pub type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens the stream as a WebSocket.
pub async fn open_ws(
    base: &str,
    token: &str,
    instance: InstanceId,
    query: &str,
    last_event_id: Option<i64>,
) -> Ws {
    let url = format!(
        "{}/v1/instances/{instance}/events/stream{query}",
        base.replacen("http://", "ws://", 1)
    );
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    if let Some(id) = last_event_id {
        req.headers_mut()
            .insert("last-event-id", id.to_string().parse().unwrap());
    }
    let (ws, res) = tokio_tungstenite::connect_async(req).await.unwrap();
    assert_eq!(res.status(), 101);
    ws
}

/// What a WebSocket gives next.
#[derive(Debug)]
pub enum WsFrame {
    Envelope(Value),
    Ping,
    Close(Option<CloseFrame>),
}

pub async fn ws_next(ws: &mut Ws) -> Option<WsFrame> {
    let message = match tokio::time::timeout(STUCK, ws.next()).await {
        Ok(Some(Ok(m))) => m,
        Ok(_) => return None,
        Err(_) => panic!("no WebSocket frame for {STUCK:?}"),
    };
    Some(match message {
        Message::Text(text) => WsFrame::Envelope(serde_json::from_str(&text).unwrap()),
        Message::Ping(_) => WsFrame::Ping,
        Message::Close(frame) => WsFrame::Close(frame),
        other => panic!("unexpected frame {other:?}"),
    })
}

/// Closes from the client side, cleanly.
pub async fn ws_close(mut ws: Ws) {
    ws.close(None).await.unwrap();
    // The server answers the close; then the stream ends.
    while let Ok(Some(Ok(_))) = tokio::time::timeout(STUCK, ws.next()).await {}
}

/// Appends `n` events of `event_type` in one library call (a producer in
/// another process: nothing wakes the stream's tail but its poll).
pub async fn append(pool: &Pool, instance: InstanceId, event_type: &str, n: usize) {
    append_padded(pool, instance, event_type, n, 0).await
}

/// [`append`] with `pad` more bytes of data in each event.
pub async fn append_padded(
    pool: &Pool,
    instance: InstanceId,
    event_type: &str,
    n: usize,
    pad: usize,
) {
    let padding = "x".repeat(pad);
    let events: Vec<Value> = (0..n)
        .map(|i| json!({"type": event_type, "data": {"i": i, "pad": padding}}))
        .collect();
    append_to_ledger(pool, instance, &events).await;
}

/// Appends `n` events through the API (the serving process's own commit).
pub async fn post(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    instance: InstanceId,
    event_type: &str,
    n: usize,
) {
    let events: Vec<Value> = (0..n)
        .map(|i| json!({"type": event_type, "data": {"i": i}}))
        .collect();
    let res = http
        .post(format!("{base}/v1/instances/{instance}/events"))
        .bearer_auth(token)
        .json(&events)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
}

/// The ledger of `instance`: `(seq, type, envelope)` in seq order.
pub async fn ledger(pool: &Pool, instance: InstanceId) -> Vec<(i64, String, String)> {
    sqlx::query_as("SELECT seq, type, envelope FROM events WHERE instance_id = $1 ORDER BY seq")
        .bind(uuid::Uuid::from(instance))
        .fetch_all(pool)
        .await
        .unwrap()
}

/// A value of the `key=value` words of a comment (`fin motivo=lento cursor=7`).
pub fn word(comment: &str, key: &str) -> Option<String> {
    comment
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")).map(str::to_owned))
}

/// A producer that keeps appending small batches until stopped,
/// alternating the API (this process's commits) and the library call
/// (another process's).
pub struct Producer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<usize>,
}

impl Producer {
    pub fn start(pool: Pool, base: String, token: String, instance: InstanceId) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut n = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                if n % 2 == 0 {
                    post(&http, &base, &token, instance, "p.api", 5).await;
                } else {
                    append(&pool, instance, "p.lib", 5).await;
                }
                n += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            n * 5
        });
        Self { stop, task }
    }

    /// Stops; how many events it appended.
    pub async fn stop(self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.task.await.unwrap()
    }
}

/// Waits until the ledger of `instance` holds at least `n` events.
pub async fn wait_for_events(pool: &Pool, instance: InstanceId, n: i64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let last = motor_store::ledger::stream::last_seq(pool, instance)
            .await
            .unwrap()
            .unwrap();
        if last >= n {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "only {last} events");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
