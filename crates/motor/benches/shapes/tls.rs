//! The HTTPS receiver: the 204 receiver's routes served behind TLS with
//! the fixed test certificate (crates/motor-destinations/testdata/tls,
//! issued for 127.0.0.1 by a test CA Motor is told to trust through
//! `MOTOR_WEBHOOK_EXTRA_ROOTS`). Handshakes run in tasks of their own and
//! are counted: with connections reused per host, they stay near the
//! number of requests Motor had in flight at once, not the number sent.

use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
};

use tokio::{net::TcpListener, sync::mpsc};
use tokio_rustls::{
    rustls::{
        self,
        pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer},
    },
    server::TlsStream,
    TlsAcceptor,
};

use crate::receiver::Receiver;

/// The test CA's certificate, for `MOTOR_WEBHOOK_EXTRA_ROOTS`.
pub const CA_PEM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../motor-destinations/testdata/tls/ca.pem"
);
const SERVER_PEM: &[u8] = include_bytes!("../../../motor-destinations/testdata/tls/server.pem");
const SERVER_KEY: &[u8] = include_bytes!("../../../motor-destinations/testdata/tls/server.key");

/// TLS connections accepted, handshake done; what `axum::serve` reads.
struct Handshaken {
    ready: mpsc::Receiver<(TlsStream<tokio::net::TcpStream>, SocketAddr)>,
    addr: SocketAddr,
}

impl axum::serve::Listener for Handshaken {
    type Io = TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accepting task ended (it never does while serving).
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

/// A receiver behind HTTPS on a free loopback port; the handshakes it
/// completed so far.
pub async fn start() -> (Arc<Receiver>, SocketAddr, Arc<AtomicUsize>) {
    let certs = CertificateDer::pem_slice_iter(SERVER_PEM)
        .collect::<Result<Vec<_>, _>>()
        .expect("the test certificate");
    let key = PrivateKeyDer::from_pem_slice(SERVER_KEY).expect("the test key");
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handshakes = Arc::new(AtomicUsize::new(0));
    let (tx, ready) = mpsc::channel(1024);
    let counted = handshakes.clone();
    tokio::spawn(async move {
        while let Ok((socket, peer)) = listener.accept().await {
            let _ = socket.set_nodelay(true);
            let (acceptor, tx, counted) = (acceptor.clone(), tx.clone(), counted.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(socket).await {
                    counted.fetch_add(1, Ordering::Relaxed);
                    let _ = tx.send((tls, peer)).await;
                }
            });
        }
    });
    let (receiver, router) = Receiver::router();
    let listener = Handshaken { ready, addr };
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (receiver, addr, handshakes)
}
