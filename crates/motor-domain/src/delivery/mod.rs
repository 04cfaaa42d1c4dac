//! The delivery engine's pure rules: what one attempt's result means
//! ([`outcome`]), when and through which delay tier the next attempt goes
//! ([`retry`], [`tier`], [`retry_after`]), and the job that carries a delivery
//! over Kafka ([`job`]). The dispatcher, the store and the bus apply these
//! rules; nothing here does I/O, and every rule takes `now` and its
//! randomness as arguments so tests can fix them.

pub mod ids;
pub mod job;
pub mod outcome;
pub mod retry;
pub mod retry_after;
pub mod state;
pub mod tier;

pub use ids::{DeliveryId, Lane, OrderKey, ReplayId, MAX_ORDER_KEY_CHARS};
pub use job::{time_until, DeliveryJob};
pub use outcome::{AttemptResult, ErrorCode, LastError, Outcome, TransportFailure};
pub use retry::{Decision, Jitter, PolicyError, RetryPolicy};
pub use retry_after::{parse_retry_after, RETRY_AFTER_CAP};
pub use state::{CancelReason, DeliveryState};
pub use tier::Tier;

/// Why the engine suspends a subscription; the same type the subscription
/// carries in `motivo`.
pub use crate::subscription::SuspensionReason;
