//! What every RabbitMQ message carries and how a connection is made.

use std::time::Duration;

/// `content_type` of every message.
pub const CONTENT_TYPE: &str = "application/json";
/// AMQP `delivery_mode` 2: the broker writes the message to disk.
pub const PERSISTENT: u8 = 2;
/// Connection heartbeat, seconds: a dead TCP peer is noticed within two.
pub(super) const HEARTBEAT_SECONDS: u16 = 10;
/// Reconnect backoff inside one attempt: first and largest pause.
pub(super) const RECONNECT_MIN: Duration = Duration::from_millis(50);
pub(super) const RECONNECT_MAX: Duration = Duration::from_secs(1);
/// Tries to connect within one attempt (the attempt's timeout bounds them
/// too).
pub(super) const RECONNECT_TIMES: usize = 3;
