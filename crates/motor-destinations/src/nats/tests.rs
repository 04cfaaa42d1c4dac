use async_nats::jetstream::context::PublishErrorKind;
use motor_domain::delivery::{Outcome, TransportFailure};

use super::{config::reconnect_delay, outcome::publish_failure};

#[test]
fn a_missing_stream_or_a_refusal_is_never_delivered() {
    for kind in [
        PublishErrorKind::StreamNotFound,
        PublishErrorKind::TimedOut,
        PublishErrorKind::BrokenPipe,
        PublishErrorKind::Other,
        PublishErrorKind::WrongLastMessageId,
    ] {
        for connected in [true, false] {
            let outcome = Outcome::from_transport(publish_failure(kind, connected));
            assert!(matches!(outcome, Outcome::Retry { .. }), "{kind:?}");
        }
    }
    assert_eq!(
        publish_failure(PublishErrorKind::StreamNotFound, true),
        TransportFailure::NoStream
    );
    assert_eq!(
        publish_failure(PublishErrorKind::TimedOut, false),
        TransportFailure::Network
    );
}

#[test]
fn reconnects_back_off_to_a_bound() {
    assert!(reconnect_delay(0) < reconnect_delay(3));
    assert_eq!(reconnect_delay(40), std::time::Duration::from_secs(2));
}
