//! The webhook destination: `POST` the envelope with the X-MW-* headers,
//! never following redirects, within the attempt's timeout, reading (and
//! discarding) at most 4 KB of the answer. Names are resolved by a resolver
//! that refuses any answer containing a blocked or loopback address, so the
//! check is on the address actually connected to (a literal loopback IP in
//! the URL is only reachable when the allowed destinations list it).
//!
//! The shape every destination kind copies: `config` (what a request
//! carries), `client` (the pooled connection and the [`crate::Sender`]
//! impl), `outcome` (failures in the contract's terms), `tests`.

mod client;
mod config;
mod outcome;
#[cfg(test)]
mod tests;

pub(crate) use client::GuardedResolver;
pub use client::Webhook;
pub use config::{MAX_RESPONSE_BYTES, USER_AGENT};
pub(crate) use outcome::failure;
