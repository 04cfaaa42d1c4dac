//! Outcome mapping: what a failed connect or publish was, in the
//! contract's sanitised terms — never the broker's text.

use lapin::ErrorKind;
use motor_domain::delivery::TransportFailure;

/// AMQP reply codes Motor reads.
const ACCESS_REFUSED: u16 = 403;
const NOT_FOUND: u16 = 404;
const NOT_ALLOWED: u16 = 530;
const NO_ROUTE: u16 = 312;

pub(super) fn failure(e: &lapin::Error) -> TransportFailure {
    match e.kind() {
        ErrorKind::ProtocolError(amqp) => match amqp.get_id() {
            // Bad login, or a login without access to the vhost.
            ACCESS_REFUSED | NOT_ALLOWED => TransportFailure::CredentialsRefused,
            // The exchange does not exist (the channel is closed).
            NOT_FOUND | NO_ROUTE => TransportFailure::BrokerUnroutable,
            _ => TransportFailure::ConnectionReset,
        },
        ErrorKind::IOError(io) => {
            use std::io::ErrorKind::*;
            match io.kind() {
                ConnectionRefused => TransportFailure::ConnectionRefused,
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                    TransportFailure::ConnectionReset
                }
                TimedOut => TransportFailure::Timeout,
                InvalidData => TransportFailure::Tls,
                _ => TransportFailure::Network,
            }
        }
        _ => TransportFailure::Network,
    }
}

/// Whether connecting again at once may help (the broker was unreachable,
/// not refusing Motor).
pub(super) fn is_transient(failure: TransportFailure) -> bool {
    matches!(
        failure,
        TransportFailure::ConnectionRefused
            | TransportFailure::ConnectionReset
            | TransportFailure::Network
    )
}
