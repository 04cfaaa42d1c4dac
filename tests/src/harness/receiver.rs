//! A webhook receiver written from the contract, on a plain TCP listener
//! so it can misbehave the way real ones do: answer a status (with
//! `Retry-After`), hang until the client gives up, trickle its body, or
//! reset the connection. It verifies every signature, attributes each
//! connection to the Motor process that opened it (Linux `/proc`), and
//! records every request in the run's history.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

use super::contracts::{self, Product};
use crate::history::{now_us, Answer, ContractSeen, Record, Recorder};

/// What the script sees of one request.
#[derive(Debug, Clone)]
pub struct Incoming {
    pub delivery_id: String,
    pub instance_id: String,
    pub seq: i64,
    /// Requests of this delivery id this receiver saw before.
    pub previous: usize,
    /// `X-MW-Timestamp`.
    pub timestamp: i64,
}

/// How to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    Status(u16),
    /// `status` after `ms` milliseconds.
    Delay(u64, u16),
    /// 429/503 with `Retry-After: <seconds>`.
    RetryAfter(u16, u64),
    Hang,
    /// The status line and headers of `status` at once, then the body a
    /// byte every 300 ms, for longer than any timeout.
    Trickle(u16),
    Reset,
}

pub type Script = Arc<dyn Fn(&Incoming) -> Behaviour + Send + Sync>;

struct Shared {
    name: String,
    recorder: Recorder,
    secrets: Trusted,
    script: Mutex<Script>,
    counts: Mutex<HashMap<String, usize>>,
    pids: Arc<Mutex<Vec<u32>>>,
    conns: AtomicU64,
    requests: AtomicU64,
    /// Set: a receiver written from this product's document instead.
    product: std::sync::OnceLock<Product>,
}

#[derive(Clone)]
pub struct Receiver {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Receiver {
    pub async fn start(name: &str, recorder: Recorder, pids: Arc<Mutex<Vec<u32>>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared {
            name: name.into(),
            recorder,
            secrets: Trusted::default(),
            script: Mutex::new(Arc::new(|_: &Incoming| Behaviour::Status(204))),
            counts: Mutex::default(),
            pids,
            conns: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            product: std::sync::OnceLock::new(),
        });
        let accepting = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, peer)) = listener.accept().await {
                let shared = accepting.clone();
                tokio::spawn(async move { serve(shared, stream, peer, addr).await });
            }
        });
        Self { addr, shared }
    }

    /// The URL of a subscription to this receiver (its last segment is
    /// the receiver's name, which the checker reads back).
    pub fn url(&self) -> String {
        format!("http://{}/r/{}", self.addr, self.shared.name)
    }

    pub fn name(&self) -> &str {
        &self.shared.name
    }

    pub fn trust(&self, key_id: &str, secret: &str) {
        self.shared.secrets.trust(key_id, secret);
    }

    pub fn script(&self, script: impl Fn(&Incoming) -> Behaviour + Send + Sync + 'static) {
        *self.shared.script.lock().expect("not poisoned") = Arc::new(script);
    }

    /// From now on it reads requests as `product`'s document says
    /// (`harness::contracts`); the script's `delivery_id` is then the id
    /// the body carries (Visito `eventId`, Asixto `id`).
    pub fn written_for(&self, product: Product) {
        let _ = self.shared.product.set(product);
    }

    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::Relaxed)
    }
}

fn header<'a>(headers: &'a [httparse::Header<'_>], name: &str) -> &'a str {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .and_then(|h| std::str::from_utf8(h.value).ok())
        .unwrap_or_default()
}

/// `X-MW-Signature` as a receiver written from the docs checks it: one
/// `v1=` per key id, in the same order; any may match (a rotation's new
/// key may not be known yet), but one for a known key that does not
/// verify fails the request.
/// The secrets a receiver trusts, by key id.
#[derive(Default)]
pub(crate) struct Trusted(Mutex<HashMap<String, String>>);

impl Trusted {
    pub(crate) fn trust(&self, key_id: &str, secret: &str) {
        self.0
            .lock()
            .expect("not poisoned")
            .insert(key_id.into(), secret.into());
    }

    pub(crate) fn secrets(&self) -> Vec<String> {
        self.0
            .lock()
            .expect("not poisoned")
            .values()
            .cloned()
            .collect()
    }

    pub(crate) fn verify(&self, key_ids: &[String], sigs: &str, signed: &[u8]) -> bool {
        verify(&self.0.lock().expect("not poisoned"), key_ids, sigs, signed)
    }
}

fn verify(
    secrets: &HashMap<String, String>,
    key_ids: &[String],
    sigs: &str,
    signed: &[u8],
) -> bool {
    let sigs: Vec<&str> = sigs.split(',').map(str::trim).collect();
    if key_ids.is_empty() || key_ids.len() != sigs.len() {
        return false;
    }
    let mut matched = false;
    for (key_id, sig) in key_ids.iter().zip(sigs) {
        let Some(secret) = secrets.get(key_id) else {
            continue;
        };
        let Some(expected) = sig.strip_prefix("v1=").and_then(|h| hex::decode(h).ok()) else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
        mac.update(signed);
        if mac.verify_slice(&expected).is_err() {
            return false;
        }
        matched = true;
    }
    matched
}

struct Parsed {
    delivery_id: String,
    event_id: String,
    timestamp: i64,
    key_ids: Vec<String>,
    verified: bool,
    instance_id: String,
    seq: i64,
    contract: Option<ContractSeen>,
}

/// Reads one request off `stream` (`buf` keeps what follows it). None:
/// the client closed the connection.
async fn read_request(
    shared: &Shared,
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> Option<Parsed> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        if let Ok(httparse::Status::Complete(head)) = req.parse(buf) {
            let length: usize = header(req.headers, "content-length").parse().unwrap_or(0);
            while buf.len() < head + length {
                let mut chunk = [0u8; 8192];
                let n = stream.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            req.parse(buf).ok()?;
            let body = buf[head..head + length].to_vec();
            if let Some(product) = shared.product.get() {
                let read = contracts::read(
                    *product,
                    |name| header(req.headers, name),
                    &body,
                    &shared.secrets.secrets(),
                );
                let seen = read.seen;
                buf.drain(..head + length);
                return Some(Parsed {
                    // The script counts requests by the id the body
                    // carries; the checker resolves the delivery.
                    delivery_id: seen.body_id.clone(),
                    event_id: seen.replay_of.clone().unwrap_or(seen.body_id.clone()),
                    timestamp: read.timestamp,
                    key_ids: Vec::new(),
                    verified: read.verified,
                    instance_id: String::new(),
                    seq: -1,
                    contract: Some(seen),
                });
            }
            let delivery_id = header(req.headers, "x-mw-delivery-id").to_owned();
            let timestamp = header(req.headers, "x-mw-timestamp").to_owned();
            let key_ids: Vec<String> = header(req.headers, "x-mw-key-id")
                .split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect();
            let mut signed = format!("{timestamp}.{delivery_id}.").into_bytes();
            signed.extend_from_slice(&body);
            let verified =
                shared
                    .secrets
                    .verify(&key_ids, header(req.headers, "x-mw-signature"), &signed);
            let envelope: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let parsed = Parsed {
                event_id: header(req.headers, "x-mw-event-id").to_owned(),
                delivery_id,
                timestamp: timestamp.parse().unwrap_or(0),
                key_ids,
                verified,
                instance_id: envelope["instance_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                seq: envelope["seq"].as_i64().unwrap_or(-1),
                contract: None,
            };
            buf.drain(..head + length);
            return Some(parsed);
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Waits until the client closes (or `most` passes).
async fn until_closed(stream: &mut TcpStream, most: Duration) {
    let mut chunk = [0u8; 1024];
    let _ = tokio::time::timeout(most, async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
}

async fn serve(shared: Arc<Shared>, mut stream: TcpStream, peer: SocketAddr, local: SocketAddr) {
    let conn = shared.conns.fetch_add(1, Ordering::Relaxed);
    let pids = shared.pids.clone();
    let pid = tokio::task::spawn_blocking(move || owner(peer, local, &pids))
        .await
        .ok()
        .flatten();
    let mut buf = Vec::new();
    loop {
        let Some(p) = read_request(&shared, &mut stream, &mut buf).await else {
            return;
        };
        let arrived_us = now_us();
        shared.requests.fetch_add(1, Ordering::Relaxed);
        let previous = {
            let mut counts = shared.counts.lock().expect("not poisoned");
            let n = counts.entry(p.delivery_id.clone()).or_default();
            *n += 1;
            *n - 1
        };
        let incoming = Incoming {
            delivery_id: p.delivery_id.clone(),
            instance_id: p.instance_id.clone(),
            seq: p.seq,
            previous,
            timestamp: p.timestamp,
        };
        let script = shared.script.lock().expect("not poisoned").clone();
        let behaviour = script(&incoming);
        let mut answering_us = None;
        let (answer, status, retry_after_ms, keep) = match behaviour {
            Behaviour::Status(s) | Behaviour::RetryAfter(s, _) | Behaviour::Delay(_, s) => {
                if let Behaviour::Delay(ms, _) = behaviour {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                answering_us = Some(now_us());
                let mut head = format!("HTTP/1.1 {s} X\r\ncontent-length: 0\r\n");
                let mut ra = None;
                if let Behaviour::RetryAfter(_, secs) = behaviour {
                    head.push_str(&format!("retry-after: {secs}\r\n"));
                    ra = Some(secs * 1000);
                }
                head.push_str("\r\n");
                let ok = stream.write_all(head.as_bytes()).await.is_ok();
                (Answer::Status, Some(s), ra, ok)
            }
            Behaviour::Hang => {
                until_closed(&mut stream, Duration::from_secs(300)).await;
                (Answer::Hang, None, None, false)
            }
            Behaviour::Trickle(status) => {
                let head = format!("HTTP/1.1 {status} X\r\ncontent-length: 100000\r\n\r\n");
                answering_us = Some(now_us());
                let _ = stream.write_all(head.as_bytes()).await;
                let mut chunk = [0u8; 1024];
                loop {
                    tokio::select! {
                        read = stream.read(&mut chunk) => {
                            if matches!(read, Ok(0) | Err(_)) { break; }
                        }
                        _ = tokio::time::sleep(Duration::from_millis(300)) => {
                            if stream.write_all(b"x").await.is_err() { break; }
                        }
                    }
                }
                (Answer::Trickle, Some(status), None, false)
            }
            Behaviour::Reset => {
                let _ = stream.set_zero_linger();
                (Answer::Reset, None, None, false)
            }
        };
        let recorded_delivery = if p.contract.is_some() {
            String::new()
        } else {
            p.delivery_id
        };
        shared.recorder.record(&Record::Request {
            receiver: shared.name.clone(),
            pid,
            conn,
            delivery_id: recorded_delivery,
            event_id: p.event_id,
            instance_id: p.instance_id,
            seq: p.seq,
            key_ids: p.key_ids,
            verified: p.verified,
            timestamp: p.timestamp,
            arrived_us,
            answering_us,
            ended_us: now_us(),
            answer,
            status,
            retry_after_ms,
            contract: p.contract.clone(),
        });
        if !keep {
            return;
        }
    }
}

/// The pid (among the run's Motor processes) whose socket is the other
/// end of this connection: its inode from `/proc/net/tcp`, then the
/// process holding that inode.
fn owner(peer: SocketAddr, local: SocketAddr, pids: &Mutex<Vec<u32>>) -> Option<u32> {
    let hex = |a: SocketAddr| match a {
        SocketAddr::V4(v4) => format!(
            "{:08X}:{:04X}",
            u32::from_le_bytes(v4.ip().octets()),
            v4.port()
        ),
        SocketAddr::V6(_) => String::new(),
    };
    let (want_local, want_remote) = (hex(peer), hex(local));
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let inode = table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() > 9 && f[1] == want_local && f[2] == want_remote).then(|| f[9].to_owned())
    })?;
    let target = format!("socket:[{inode}]");
    let candidates = pids.lock().expect("not poisoned").clone();
    candidates.into_iter().rev().find(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|dir| {
                dir.filter_map(Result::ok).any(|fd| {
                    std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy() == target)
                })
            })
            .unwrap_or(false)
    })
}
