//! A receiver on a raw TCP socket, for answers no HTTP framework sends: a
//! status line trickled a byte a second, a body declared far larger than
//! what comes, one large chunk and then silence.

use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

/// How the receiver answers every request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// These bytes, one a second, then the connection stays open.
    Trickle(&'static [u8]),
    /// These bytes in one write, then the connection stays open (silent).
    OnceThenHold(Vec<u8>),
}

pub struct RawReceiver {
    pub addr: SocketAddr,
    /// Requests read so far.
    pub requests: Arc<AtomicUsize>,
}

impl RawReceiver {
    pub async fn start(answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicUsize::new(0));
        let count = requests.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let answer = answer.clone();
                let count = count.clone();
                tokio::spawn(async move { serve(socket, answer, count).await });
            }
        });
        Self { addr, requests }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Reads one request (headers and a `content-length` body), then answers.
async fn serve(mut socket: TcpStream, answer: Answer, count: Arc<AtomicUsize>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let Ok(n) = socket.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_ascii_lowercase();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                break;
            }
        }
    }
    count.fetch_add(1, Ordering::SeqCst);
    match answer {
        Answer::Trickle(bytes) => {
            for b in bytes {
                if socket.write_all(&[*b]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        Answer::OnceThenHold(bytes) => {
            if socket.write_all(&bytes).await.is_err() {
                return;
            }
        }
    }
    // Hold the connection until the client gives up on it.
    let _ = socket.read(&mut chunk).await;
    tokio::time::sleep(Duration::from_secs(120)).await;
}
