//! The RabbitMQ destination: publish the envelope to the target's exchange
//! with the resolved routing key, `mandatory`, persistent, `message_id` =
//! the delivery id and the X-MW-* values as headers, on a channel in
//! publisher-confirm mode. Only an `Ack` of a message the broker did not
//! return is delivered: a `Nack` is `broker_rechazo`, a returned
//! (unroutable) message or a missing exchange `broker_sin_ruta`, both
//! retried. Refused credentials suspend (`rechazo_credenciales`).
//!
//! One connection per destination (host, port, TLS, vhost, login) is
//! shared by every lane that delivers there; a connection or channel that
//! died is replaced on the next message, reconnecting with backoff within
//! the attempt's timeout. Names resolve through `guard`, so the address
//! connected to is the one checked.

mod client;
mod config;
mod outcome;
#[cfg(test)]
mod tests;

pub use client::Amqp;
pub use config::{CONTENT_TYPE, PERSISTENT};
