//! The NATS destination: publish the envelope to the resolved subject with
//! the X-MW-* values, `Content-Type: application/json` and `Nats-Msg-Id` =
//! the delivery id as headers, and wait for JetStream's publish ack (a
//! retry of the same delivery within the stream's duplicate window is
//! acked as a duplicate, not stored twice). A subject no stream captures
//! is `sin_stream` and retried — unless the operator setting
//! `brokers.nats_sin_jetstream` allows core NATS, where a flushed publish
//! counts (status 202: the server had it; nothing stored it).
//! Refused credentials suspend (`rechazo_credenciales`).
//!
//! One client per destination (host, port, TLS, login), shared by every
//! lane that publishes there. The first connect retries with backoff
//! within the attempt's timeout; after that the client reconnects by
//! itself, and a message sent while it is disconnected fails at once as
//! `red` instead of waiting out the timeout.

mod client;
mod config;
mod outcome;
#[cfg(test)]
mod tests;

pub use client::Nats;
pub use config::{CONTENT_TYPE, MSG_ID_HEADER};
