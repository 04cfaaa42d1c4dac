//! What every webhook request carries and how much of the answer is read;
//! the per-attempt timeout comes from the operator setting
//! `webhooks.timeout_segundos` through the [`crate::Message`].

/// `User-Agent` of every request.
pub const USER_AGENT: &str = "motor-whatsapp/webhooks";

/// Most bytes of a receiver's answer Motor reads (and discards).
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024;
