//! Outcome mapping: what a failed request was, in the contract's sanitised
//! terms — never a URL or a body. The clients' resolver fails with the two
//! errors below, which [`sent_failure`] (the sender's hyper client) and
//! [`failure`] (the conformance check's reqwest client) find again in the
//! error's chain.

use motor_domain::delivery::TransportFailure;

/// A name resolved to an address Motor never connects to.
#[derive(Debug, thiserror::Error)]
#[error("destino_bloqueado")]
pub(super) struct BlockedAddress;

/// A name that did not resolve (an error, or no address).
#[derive(Debug, thiserror::Error)]
#[error("dns")]
pub(super) struct DnsFailure;

/// What a request of the conformance check's reqwest client that failed
/// was (see [`from_chain`]).
pub(crate) fn failure(e: &reqwest::Error) -> TransportFailure {
    if e.is_timeout() {
        return TransportFailure::Timeout;
    }
    if e.is_redirect() {
        return TransportFailure::Redirect;
    }
    if e.is_builder() {
        return TransportFailure::BadUrl;
    }
    from_chain(e, e.is_connect())
}

/// What a request of the sender's client that failed before its answer
/// was (its timeout is the sender's own, and it never follows a redirect).
pub(super) fn sent_failure(e: &hyper_util::client::legacy::Error) -> TransportFailure {
    from_chain(e, e.is_connect())
}

/// What a failed request was: never a URL or a body. Typed causes are
/// looked for first, along the whole chain; only then the causes' messages
/// (never the top one, which may carry the URL). `is_connect`: it failed
/// while connecting.
fn from_chain(e: &(dyn std::error::Error + 'static), is_connect: bool) -> TransportFailure {
    let chain = || std::iter::successors(e.source(), |err| err.source());
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
