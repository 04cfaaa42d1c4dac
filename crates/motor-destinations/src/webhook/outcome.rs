//! Outcome mapping: what a failed request was, in the contract's sanitised
//! terms — never a URL or a body.

use motor_domain::delivery::TransportFailure;

use super::client::{BlockedAddress, DnsFailure};

/// What a failed request was: never a URL or a body. Typed causes are
/// looked for first, along the whole chain; only then the causes' messages
/// (never the top one, which carries the URL).
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
