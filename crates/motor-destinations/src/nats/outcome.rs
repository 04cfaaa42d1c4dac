//! Outcome mapping: what a failed connect or publish was, in the
//! contract's sanitised terms — never the server's text.

use async_nats::{jetstream::context::PublishErrorKind, ConnectErrorKind};
use motor_domain::delivery::TransportFailure;

pub(super) fn connect_failure(e: &async_nats::ConnectError) -> TransportFailure {
    match e.kind() {
        ConnectErrorKind::Authentication | ConnectErrorKind::AuthorizationViolation => {
            TransportFailure::CredentialsRefused
        }
        ConnectErrorKind::Dns => TransportFailure::Dns,
        ConnectErrorKind::TimedOut => TransportFailure::Timeout,
        ConnectErrorKind::Tls => TransportFailure::Tls,
        ConnectErrorKind::ServerParse => TransportFailure::BadUrl,
        ConnectErrorKind::Io => {
            let io = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>());
            match io.map(|e| e.kind()) {
                Some(std::io::ErrorKind::ConnectionRefused) => TransportFailure::ConnectionRefused,
                _ => TransportFailure::Network,
            }
        }
        ConnectErrorKind::MaxReconnects => TransportFailure::Network,
    }
}

/// A JetStream publish that got no positive ack. `connected`: whether the
/// client was connected when it gave up (a timeout while disconnected is
/// the broker being away, `red`).
pub(super) fn publish_failure(kind: PublishErrorKind, connected: bool) -> TransportFailure {
    match kind {
        PublishErrorKind::StreamNotFound => TransportFailure::NoStream,
        PublishErrorKind::TimedOut if connected => TransportFailure::Timeout,
        PublishErrorKind::TimedOut => TransportFailure::Network,
        PublishErrorKind::BrokenPipe => TransportFailure::ConnectionReset,
        // An error ack (stream full, expectations not met, …): the broker
        // refused this message.
        PublishErrorKind::WrongLastMessageId
        | PublishErrorKind::WrongLastSequence
        | PublishErrorKind::Other => TransportFailure::BrokerNack,
    }
}

/// Whether connecting again at once may help.
pub(super) fn is_transient(failure: TransportFailure) -> bool {
    matches!(
        failure,
        TransportFailure::ConnectionRefused
            | TransportFailure::ConnectionReset
            | TransportFailure::Network
    )
}
