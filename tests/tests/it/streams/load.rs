//! 200 concurrent streams on one `motor serve --roles api` process follow
//! 10,000 events, while twelve readers that stop reading are cut off with a
//! resumable cursor and the others keep their pace. The process's RSS is
//! printed (and bounded) before, during and after.

use std::{
    io::Write as _,
    time::{Duration, Instant},
};

use futures::future::join_all;
use motor_domain::InstanceId;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::client::{append_padded, word, Frame, Sse};
use crate::util::{topic_prefix, MotorProcess, Tenant, TestDb};

const CLIENTS: usize = 200;
const EVENTS: i64 = 10_000;
const BATCH: usize = 100;
/// Readers that stop reading: enough that keeping their backlogs would
/// stand far above what the followers' bursts cost (see the RSS bound).
const STALLED: usize = 12;

/// A stream on a raw socket with a 4 KiB receive buffer, so that a reader
/// that stops reading blocks the server quickly.
async fn stalled_reader(base: &str, token: &str, instance: InstanceId) -> tokio::net::TcpStream {
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let mut request = Vec::new();
    write!(
        request,
        "GET /v1/instances/{instance}/events/stream?desde=0 HTTP/1.1\r\nHost: {addr}\r\n\
         Authorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    stream.write_all(&request).await.unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    stream
}

/// Decodes an HTTP/1.1 response read to EOF: its chunked body.
fn chunked_body(raw: &[u8]) -> Vec<u8> {
    let start = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let mut rest = &raw[start..];
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).unwrap(), 16).unwrap();
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&rest[line_end + 2..line_end + 2 + size]);
        rest = &rest[line_end + 2 + size + 2..];
    }
}

fn rss_mib(process: &MotorProcess) -> f64 {
    process.rss_kib() as f64 / 1024.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_streams_follow_ten_thousand_events_and_stalled_readers_are_cut_off() {
    let db = TestDb::new().await;
    // A buffer of 1,024 events per client (the default is 4,096) and 0.8 KB
    // events: a stalled reader overflows within the 10,000 events even
    // though the kernel and HTTP buffers hold a few MB for it.
    let (process, base) =
        MotorProcess::spawn_api(&db, &topic_prefix(), &[("MOTOR_STREAMS_BUFFER", "1024")]).await;
    let t = Tenant::create(&db.pool, 1).await;
    let i = t.instances[0];
    let idle = rss_mib(&process);

    let mut stalled = Vec::new();
    for _ in 0..STALLED {
        stalled.push(stalled_reader(&base, &t.token, i).await);
    }
    let http = reqwest::Client::new();
    let streams =
        join_all((0..CLIENTS).map(|_| Sse::open(&http, &base, &t.token, i, "?desde=0", None)))
            .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let open = rss_mib(&process);

    let started = Instant::now();
    let readers: Vec<_> = streams
        .into_iter()
        .map(|mut sse| {
            tokio::spawn(async move {
                let mut next = 1;
                while next <= EVENTS {
                    match sse.next().await.expect("a follower was cut off") {
                        Frame::Event { id, .. } => {
                            assert_eq!(id, next, "out of order or duplicated");
                            next += 1;
                        }
                        Frame::Comment(c) => assert!(!c.starts_with("fin"), "cut off: {c}"),
                        Frame::Id(_) => {}
                    }
                }
                Instant::now()
            })
        })
        .collect();

    // The producer: 10,000 events in batches of 100, paced at about
    // 2,000 events/s; the RSS sampled as it goes.
    let mut peak = open;
    for n in 0..EVENTS as usize / BATCH {
        append_padded(&db.pool, i, "carga", BATCH, 500).await;
        if n % 10 == 0 {
            peak = peak.max(rss_mib(&process));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let produced = Instant::now();
    let finished: Vec<Instant> = join_all(readers)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let slowest = finished
        .iter()
        .max()
        .unwrap()
        .saturating_duration_since(produced);
    let after = rss_mib(&process);
    println!(
        "streams: {CLIENTS} clients x {EVENTS} events in {:.1} s (producer {:.1} s, slowest reader \
         {:.0} ms after the last commit); motor RSS MiB: idle {idle:.1}, {} streams open {open:.1}, \
         peak {peak:.1}, after {after:.1}",
        (Instant::now() - started).as_secs_f64(),
        (produced - started).as_secs_f64(),
        slowest.as_secs_f64() * 1000.0,
        CLIENTS + STALLED,
    );
    // Keeping pace is behaviour, not a clock: no follower fell a buffer
    // (1,024 events) behind, or it would have been cut off above. Memory
    // stays flat: the stalled readers' backlogs are not kept. Measured on
    // a 2-core machine: the followers' bursts raise the peak by 7 to 8 MiB
    // with no stalled reader (200 connections' write queues while the
    // readers here lag; more under load: 13.4 once in CI with four), each
    // stalled reader adds about 0.5 MiB (the chunks the HTTP server queues
    // for it), and a stream that kept its backlog (tried: an unbounded
    // queue between follower and socket) adds about 8 MiB per stalled
    // reader: a peak of 173 MiB instead of 85.
    assert!(
        peak - open < 30.0,
        "RSS grew from {open:.1} to {peak:.1} MiB"
    );
    for stalled in stalled {
        let cursor = cut_off(stalled).await;
        println!("streams: a stalled reader was cut off at cursor {cursor}");
        // It resumes from its cursor and gets the rest.
        let mut sse = Sse::open(&http, &base, &t.token, i, "", Some(cursor)).await;
        let mut comments = Vec::new();
        for seq in cursor + 1..=EVENTS {
            assert_eq!(sse.next_event(&mut comments).await.unwrap().0, seq);
        }
    }
    drop(process);
}

/// Reads a stalled stream to its end: events 1..=N in order, then the
/// cut-off comment naming N. Returns N.
async fn cut_off(mut stalled: tokio::net::TcpStream) -> i64 {
    // It now reads: what was in flight, then the cut-off comment with its
    // cursor, then the end.
    let mut raw = Vec::new();
    let mut piece = vec![0u8; 64 * 1024];
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let n = match tokio::time::timeout(remaining, stalled.read(&mut piece)).await {
            Ok(n) => n.unwrap(),
            Err(_) => panic!(
                "the stalled stream never ended; {} bytes read, ending {:?}",
                raw.len(),
                String::from_utf8_lossy(&raw[raw.len().saturating_sub(300)..])
            ),
        };
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&piece[..n]);
    }
    let body = chunked_body(&raw);
    let mut frames = std::collections::VecDeque::new();
    let used = super::client::parse_blocks(&body, &mut frames);
    assert_eq!(used, body.len());
    let mut ids = Vec::new();
    let mut end = None;
    for frame in frames {
        match frame {
            Frame::Event { id, .. } => ids.push(id),
            Frame::Comment(c) if c.starts_with("fin") => end = Some(c),
            _ => {}
        }
    }
    let end = end.expect("a final comment");
    assert_eq!(word(&end, "motivo").as_deref(), Some("lento"), "{end}");
    let cursor: i64 = word(&end, "cursor").unwrap().parse().unwrap();
    assert_eq!(ids, (1..=cursor).collect::<Vec<_>>());
    assert!(cursor < EVENTS, "the stalled reader was never cut off");
    cursor
}
