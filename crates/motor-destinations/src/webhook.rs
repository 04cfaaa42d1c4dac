//! The webhook destination: `POST` the envelope with the X-MW-* headers,
//! never following redirects, within the attempt's timeout, reading (and
//! discarding) at most 4 KB of the answer. Names are resolved by a resolver
//! that refuses any answer containing a blocked or loopback address, so the
//! check is on the address actually connected to (a literal loopback IP in
//! the URL is only reachable when the allowed destinations list it).

use std::{net::SocketAddr, sync::Arc, time::Duration};

use motor_domain::{
    delivery::TransportFailure,
    destination::{canonical_ip, is_blocked_ip},
};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

pub const USER_AGENT: &str = "motor-whatsapp/webhooks";
/// Most bytes of a receiver's answer Motor reads (and discards).
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024;

/// The receiver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// The raw `Retry-After` header, if any.
    pub retry_after: Option<String>,
}

/// A name resolved to an address Motor never connects to.
#[derive(Debug)]
struct BlockedAddress;

impl std::fmt::Display for BlockedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("destino_bloqueado")
    }
}
impl std::error::Error for BlockedAddress {}

#[derive(Debug)]
struct DnsFailure;

impl std::fmt::Display for DnsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("dns")
    }
}
impl std::error::Error for DnsFailure {}

/// Resolves with the system resolver and refuses the whole answer if any
/// address is blocked or loopback.
struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|_| Box::new(DnsFailure) as Box<dyn std::error::Error + Send + Sync>)?
                .collect();
            if addrs.is_empty() {
                return Err(Box::new(DnsFailure) as _);
            }
            if addrs.iter().any(|a| {
                let ip = canonical_ip(a.ip());
                is_blocked_ip(ip) || ip.is_loopback()
            }) {
                return Err(Box::new(BlockedAddress) as _);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// What a failed request was: never a URL or a body. Typed causes are
/// looked for first, along the whole chain; only then the causes' messages
/// (never the top one, which carries the URL).
fn failure(e: &reqwest::Error) -> TransportFailure {
    if e.is_timeout() {
        return TransportFailure::Timeout;
    }
    if e.is_redirect() {
        return TransportFailure::Redirect;
    }
    if e.is_builder() {
        return TransportFailure::BadUrl;
    }
    let is_connect = e.is_connect();
    let chain = || std::iter::successors(std::error::Error::source(e), |err| err.source());
    for err in chain() {
        if err.downcast_ref::<BlockedAddress>().is_some() {
            return TransportFailure::DestinationBlocked;
        }
        if err.downcast_ref::<DnsFailure>().is_some() {
            return TransportFailure::Dns;
        }
        // An io::Error's source() skips its own payload: unwrap by hand.
        let mut io = err.downcast_ref::<std::io::Error>();
        while let Some(e) = io {
            use std::io::ErrorKind::*;
            match e.kind() {
                ConnectionRefused => return TransportFailure::ConnectionRefused,
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                    return TransportFailure::ConnectionReset
                }
                TimedOut => return TransportFailure::Timeout,
                // Bytes that are not TLS while connecting: rustls says so
                // with InvalidData.
                InvalidData if is_connect => return TransportFailure::Tls,
                _ => {}
            }
            io = e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<std::io::Error>());
        }
    }
    for err in chain() {
        let text = err.to_string().to_ascii_lowercase();
        if text.contains("certificate") || text.contains("tls") || text.contains("handshake") {
            return TransportFailure::Tls;
        }
        if text.contains("connection closed") || text.contains("incomplete message") {
            return TransportFailure::ConnectionReset;
        }
    }
    TransportFailure::Network
}

/// A webhook sender; one per process (it pools connections).
#[derive(Clone)]
pub struct Webhook {
    client: reqwest::Client,
}

impl Default for Webhook {
    fn default() -> Self {
        Self::new()
    }
}

impl Webhook {
    pub fn new() -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(GuardedResolver))
            .user_agent(USER_AGENT)
            .build()
            .expect("a client with these settings always builds");
        Self { client }
    }

    /// Sends one signed request and reads at most 4 KB of the answer.
    pub async fn send(
        &self,
        url: &str,
        timeout: Duration,
        headers: &[(&str, String)],
        body: impl Into<reqwest::Body>,
    ) -> Result<Answer, TransportFailure> {
        let mut request = self
            .client
            .post(url)
            .timeout(timeout)
            .header("content-type", "application/json")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let mut response = request.send().await.map_err(|e| failure(&e))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut read = 0;
        while read < MAX_RESPONSE_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                Ok(None) => break,
                // The status is what counts; a body cut short changes nothing.
                Err(_) => break,
            }
        }
        Ok(Answer {
            status,
            retry_after,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn names_resolving_to_loopback_are_refused() {
        let err = GuardedResolver
            .resolve("localhost".parse().unwrap())
            .await
            .err()
            .expect("localhost resolves to loopback");
        assert!(err.downcast_ref::<BlockedAddress>().is_some(), "{err}");
    }

    #[tokio::test]
    async fn a_refused_connection_is_named() {
        // A port nobody listens on: bind one, then free it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let webhook = Webhook::new();
        for path in ["", "tls-certificate-handshake"] {
            // A URL that happens to say "tls" is still a refused connection.
            let outcome = webhook
                .send(
                    &format!("http://127.0.0.1:{port}/{path}"),
                    Duration::from_secs(5),
                    &[],
                    "{}",
                )
                .await;
            assert_eq!(outcome, Err(TransportFailure::ConnectionRefused));
        }
    }

    #[tokio::test]
    async fn a_plain_http_server_spoken_to_in_tls_is_a_tls_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            while let Ok((mut socket, _)) = listener.accept().await {
                let _ = socket
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                    .await;
            }
        });
        let outcome = Webhook::new()
            .send(
                &format!("https://127.0.0.1:{port}/"),
                Duration::from_secs(5),
                &[],
                "{}",
            )
            .await;
        assert_eq!(outcome, Err(TransportFailure::Tls));
    }

    #[tokio::test]
    async fn answers_status_and_retry_after_without_following_redirects() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut n = 0;
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let answer: &[u8] = if n == 0 {
                    b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 7\r\ncontent-length: 0\r\n\r\n"
                } else {
                    b"HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:1/\r\ncontent-length: 0\r\n\r\n"
                };
                n += 1;
                let _ = socket.write_all(answer).await;
            }
        });
        let webhook = Webhook::new();
        let url = format!("http://127.0.0.1:{port}/");
        let answer = webhook
            .send(&url, Duration::from_secs(5), &[], "{}")
            .await
            .unwrap();
        assert_eq!(
            (answer.status, answer.retry_after.as_deref()),
            (503, Some("7"))
        );
        let answer = webhook
            .send(&url, Duration::from_secs(5), &[], "{}")
            .await
            .unwrap();
        assert_eq!(answer.status, 302, "a redirect is answered, not followed");
    }

    #[tokio::test]
    async fn an_endless_answer_is_read_only_up_to_4_kb() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                .await
                .unwrap();
            // A body that never ends, for as long as anyone reads it.
            let chunk = format!("1000\r\n{}\r\n", "x".repeat(0x1000));
            while socket.write_all(chunk.as_bytes()).await.is_ok() {}
        });
        let answer = Webhook::new()
            .send(
                &format!("http://127.0.0.1:{port}/"),
                Duration::from_secs(5),
                &[],
                "{}",
            )
            .await;
        // Reading it all would end in the attempt's timeout instead.
        assert_eq!(answer.map(|a| a.status), Ok(200));
    }
}
