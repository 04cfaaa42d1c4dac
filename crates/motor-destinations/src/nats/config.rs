//! What every NATS message carries and how a client reconnects.

use std::time::Duration;

/// `Content-Type` header of every message.
pub const CONTENT_TYPE: &str = "application/json";
/// JetStream's dedup header: the delivery id.
pub const MSG_ID_HEADER: &str = "Nats-Msg-Id";
/// First connect: backoff inside one attempt.
pub(super) const CONNECT_MIN: Duration = Duration::from_millis(50);
pub(super) const CONNECT_MAX: Duration = Duration::from_secs(1);
pub(super) const CONNECT_TIMES: usize = 3;

/// The pause before the client's `n`-th reconnect: doubling from 50 ms,
/// at most 2 s.
pub(super) fn reconnect_delay(n: usize) -> Duration {
    Duration::from_millis(50u64.saturating_mul(1 << n.min(6))).min(Duration::from_secs(2))
}
