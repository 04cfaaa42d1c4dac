use lapin::{
    protocol::{AMQPError, AMQPErrorKind, AMQPHardError, AMQPSoftError},
    ErrorKind,
};
use motor_domain::delivery::TransportFailure;

use super::outcome::{failure, is_transient};

fn protocol(kind: AMQPErrorKind) -> lapin::Error {
    lapin::Error::from(ErrorKind::ProtocolError(AMQPError::new(kind, "x".into())))
}

#[test]
fn reply_codes_map_to_the_contract() {
    assert_eq!(
        failure(&protocol(AMQPErrorKind::Soft(AMQPSoftError::ACCESSREFUSED))),
        TransportFailure::CredentialsRefused
    );
    assert_eq!(
        failure(&protocol(AMQPErrorKind::Soft(AMQPSoftError::NOTFOUND))),
        TransportFailure::BrokerUnroutable
    );
    assert_eq!(
        failure(&protocol(AMQPErrorKind::Hard(
            AMQPHardError::CONNECTIONFORCED
        ))),
        TransportFailure::ConnectionReset
    );
    let refused = lapin::Error::from(ErrorKind::IOError(std::sync::Arc::new(
        std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
    )));
    assert_eq!(failure(&refused), TransportFailure::ConnectionRefused);
    assert!(is_transient(TransportFailure::ConnectionRefused));
    assert!(!is_transient(TransportFailure::CredentialsRefused));
}
