//! The webhook sender against real sockets on loopback.

use std::{net::IpAddr, sync::Arc, time::Duration};

use motor_domain::delivery::TransportFailure;
use reqwest::dns::Resolve;

use super::{client::GuardedResolver, outcome::BlockedAddress, Webhook};
use crate::{
    resolve::{Lookup, Resolver, SystemResolver},
    Answer,
};

/// `webhook`'s `POST` of `{}` to `url` with no headers of its own.
async fn post(webhook: &Webhook, url: &str, timeout: Duration) -> Result<Answer, TransportFailure> {
    webhook.post(url, timeout, &[], "{}", false).await
}

#[tokio::test]
async fn names_resolving_to_loopback_are_refused() {
    let err = GuardedResolver::new(Arc::new(SystemResolver), false)
        .resolve("localhost".parse().unwrap())
        .await
        .err()
        .expect("localhost resolves to loopback");
    assert!(err.downcast_ref::<BlockedAddress>().is_some(), "{err}");
}

/// Answers every name with one address.
struct Pointing(IpAddr);

impl Resolver for Pointing {
    fn lookup(&self, _: &str) -> Lookup {
        let ip = self.0;
        Box::pin(async move { Ok(vec![ip]) })
    }
}

#[tokio::test]
async fn an_injected_resolver_is_asked_and_its_answer_judged() {
    let url = "http://receiver.test:8080/hook";
    for blocked in ["127.0.0.1", "169.254.169.254", "64:ff9b::a9fe:a9fe"] {
        let webhook = Webhook::with_resolver(Arc::new(Pointing(blocked.parse().unwrap())));
        let outcome = post(&webhook, url, Duration::from_secs(5)).await;
        assert_eq!(
            outcome,
            Err(TransportFailure::DestinationBlocked),
            "{blocked}"
        );
    }
    // A public IPv6 address passes the standard check, not `publica_https`.
    let v6 = GuardedResolver::new(
        Arc::new(Pointing("2001:4860::8888".parse().unwrap())),
        false,
    );
    assert!(v6.resolve("receiver.test".parse().unwrap()).await.is_ok());
    let err = GuardedResolver::new(Arc::new(Pointing("2001:4860::8888".parse().unwrap())), true)
        .resolve("receiver.test".parse().unwrap())
        .await
        .err()
        .expect("not public IPv4");
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
        let outcome = post(
            &webhook,
            &format!("http://127.0.0.1:{port}/{path}"),
            Duration::from_secs(5),
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
    let outcome = post(
        &Webhook::new(),
        &format!("https://127.0.0.1:{port}/"),
        Duration::from_secs(5),
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
    let answer = post(&webhook, &url, Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        (answer.status, answer.retry_after.as_deref()),
        (503, Some("7"))
    );
    let answer = post(&webhook, &url, Duration::from_secs(5)).await.unwrap();
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
    let answer = post(
        &Webhook::new(),
        &format!("http://127.0.0.1:{port}/"),
        Duration::from_secs(5),
    )
    .await;
    // Reading it all would end in the attempt's timeout instead.
    assert_eq!(answer.map(|a| a.status), Ok(200));
}

/// An HTTPS receiver on loopback with the fixed test certificate
/// (`testdata/tls`, issued for 127.0.0.1 by the test CA): answers 204 to
/// every request; counts the TLS handshakes it completed.
async fn https_receiver() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::{
        self,
        pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer},
    };
    let certs = CertificateDer::pem_slice_iter(include_bytes!("../../testdata/tls/server.pem"))
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key =
        PrivateKeyDer::from_pem_slice(include_bytes!("../../testdata/tls/server.key")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let handshakes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = handshakes.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (acceptor, counted) = (acceptor.clone(), counted.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                // One request per read is enough for these small bodies.
                let mut buf = [0u8; 8192];
                while matches!(tls.read(&mut buf).await, Ok(n) if n > 0) {
                    let answer = b"HTTP/1.1 204 No Content\r\n\r\n";
                    if tls.write_all(answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, handshakes)
}

#[tokio::test]
async fn an_extra_root_is_trusted_and_its_connection_reused() {
    let (port, handshakes) = https_receiver().await;
    let url = format!("https://127.0.0.1:{port}/hook");
    let five = Duration::from_secs(5);
    // The built-in roots do not know the test CA.
    assert_eq!(
        post(&Webhook::new(), &url, five).await,
        Err(TransportFailure::Tls)
    );
    let roots = crate::ExtraRoots::from_pem(include_bytes!("../../testdata/tls/ca.pem")).unwrap();
    let trusting = Webhook::trusting(Arc::new(SystemResolver), &roots);
    for _ in 0..3 {
        // Clones share one pool, as the dispatcher's tasks do.
        let answer = post(&trusting.clone(), &url, five).await.unwrap();
        assert_eq!(answer.status, 204);
    }
    // Three requests, one handshake: the connection is pooled per host.
    assert_eq!(handshakes.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// [`answering_on`] a listener of its own on 127.0.0.1.
async fn answering(
    answer: &'static [u8],
    hold: Duration,
) -> (u16, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    answering_on(listener, answer, hold)
}

/// A receiver on `listener` that reads each request's head and body (by
/// its `content-length`), sends `answer` and then holds the connection for
/// `hold`; the requests it read come back on the channel.
fn answering_on(
    listener: tokio::net::TcpListener,
    answer: &'static [u8],
    hold: Duration,
) -> (u16, tokio::sync::mpsc::UnboundedReceiver<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let port = listener.local_addr().unwrap().port();
    let (read_tx, read_rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let read_tx = read_tx.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).into_owned();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length: ")
                                    .map(str::to_owned)
                            })
                            .and_then(|n| n.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if body.len() >= length {
                            let _ = read_tx.send(text);
                            break;
                        }
                    }
                }
                let _ = socket.write_all(answer).await;
                tokio::time::sleep(hold).await;
            });
        }
    });
    (port, read_rx)
}

#[tokio::test]
async fn the_request_carries_its_body_and_headers_as_given() {
    let (port, mut requests) =
        answering(b"HTTP/1.1 204 No Content\r\n\r\n", Duration::from_secs(5)).await;
    let headers = [
        ("X-MW-Event-Id", "evt-1".to_owned()),
        ("webhook-signature", "v1,abc=".to_owned()),
    ];
    let answer = Webhook::new()
        .post(
            &format!("http://127.0.0.1:{port}/hook?x=1"),
            Duration::from_secs(5),
            &headers,
            r#"{"a":"ü"}"#,
            false,
        )
        .await;
    assert_eq!(answer.map(|a| a.status), Ok(204));
    let request = requests.recv().await.unwrap();
    let (head, body) = request.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    assert_eq!(lines.next(), Some("POST /hook?x=1 HTTP/1.1"));
    let fields: Vec<String> = lines.map(str::to_ascii_lowercase).collect();
    for expected in [
        format!("host: 127.0.0.1:{port}"),
        "content-type: application/json".to_owned(),
        format!("user-agent: {}", super::USER_AGENT),
        "accept: */*".to_owned(),
        "content-length: 10".to_owned(),
        "x-mw-event-id: evt-1".to_owned(),
        "webhook-signature: v1,abc=".to_owned(),
    ] {
        assert!(fields.contains(&expected), "{expected} in {fields:?}");
    }
    assert_eq!(body, r#"{"a":"ü"}"#, "the body's bytes as given");
}

#[tokio::test]
async fn a_header_the_request_cannot_carry_fails_as_url() {
    let (port, _requests) = answering(b"HTTP/1.1 204 No Content\r\n\r\n", Duration::ZERO).await;
    let outcome = Webhook::new()
        .post(
            &format!("http://127.0.0.1:{port}/"),
            Duration::from_secs(5),
            &[("X-MW-Event-Id", "a\r\nb".to_owned())],
            "{}",
            false,
        )
        .await;
    assert_eq!(outcome, Err(TransportFailure::BadUrl));
}

#[tokio::test]
async fn the_timeout_covers_the_answer_and_its_body() {
    // No answer at all: a timeout.
    let (port, _requests) = answering(b"", Duration::from_secs(30)).await;
    let started = std::time::Instant::now();
    let outcome = post(
        &Webhook::new(),
        &format!("http://127.0.0.1:{port}/"),
        Duration::from_millis(300),
    )
    .await;
    assert_eq!(outcome, Err(TransportFailure::Timeout));
    assert!(started.elapsed() < Duration::from_secs(10));
    // A status, then a body that never comes: the status counts, and the
    // attempt still ends at its timeout.
    let (port, _requests) = answering(
        b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc",
        Duration::from_secs(30),
    )
    .await;
    let started = std::time::Instant::now();
    let answer = post(
        &Webhook::new(),
        &format!("http://127.0.0.1:{port}/"),
        Duration::from_millis(300),
    )
    .await;
    assert_eq!(answer.map(|a| a.status), Ok(200));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_secs(10),
        "{took:?}"
    );
}

#[tokio::test]
async fn an_ipv6_literal_is_reached_and_named_in_host() {
    let Ok(listener) = tokio::net::TcpListener::bind("[::1]:0").await else {
        eprintln!("no IPv6 loopback on this machine: nothing to test");
        return;
    };
    let (port, mut requests) =
        answering_on(listener, b"HTTP/1.1 204 No Content\r\n\r\n", Duration::ZERO);
    let answer = post(
        &Webhook::new(),
        &format!("http://[::1]:{port}/hook"),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(answer.map(|a| a.status), Ok(204));
    let request = requests.recv().await.unwrap().to_ascii_lowercase();
    assert!(
        request.contains(&format!("\r\nhost: [::1]:{port}\r\n")),
        "{request}"
    );
}
