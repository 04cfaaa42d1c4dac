//! Where Motor delivers, behind one seam. A destination kind implements
//! [`Sender`]: it takes a signed [`Message`] (the envelope's bytes, the
//! X-MW-* headers, a timeout) to a parsed target and answers what happened
//! in the domain's terms — an [`Answer`], or a
//! [`TransportFailure`](motor_domain::delivery::TransportFailure). The
//! kinds sit behind [`Destinations`], one per process, which dispatches on
//! [`Destination`]'s variant. [`attempt`] is the one attempt every caller
//! makes — the dispatcher and `POST /v1/subscriptions/{id}/test` — so the
//! probe tests exactly what production does.
//!
//! Modules: `attempt` (check the destination, sign, send, time it),
//! `webhook`, `amqp` (RabbitMQ) and `nats` (NATS JetStream), each with the
//! same inner shape (config, client, outcome, tests); `guard` is the
//! connect-time address check the broker kinds share, `links` the broker
//! connections they share (one per destination and login), `hosts` a
//! hosts-style name override every guard still judges.
//!
//! Neighbours: `motor-domain` (destinations, outcomes, signatures); used by
//! `motor-engine` (the dispatcher) and `motor-api` (the test probe).

pub mod amqp;
mod attempt;
pub mod check;
mod guard;
pub mod hosts;
mod links;
pub mod nats;
pub mod webhook;

use std::{future::Future, time::Duration};

use bytes::Bytes;
use motor_domain::{
    credentials::BrokerCredentials, delivery::TransportFailure, destination::Destination,
    InstanceId,
};

pub use attempt::{attempt, Attempt, AttemptReport};

/// A destination's answer to a message it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The receiver's status: HTTP for webhooks; for brokers
    /// [`BROKER_ACK`] (RabbitMQ publisher confirm, JetStream publish ack) or
    /// [`BROKER_SENT`] (core NATS, when `brokers.nats_sin_jetstream`
    /// allows it).
    pub status: u16,
    /// The raw `Retry-After` the receiver sent, if any.
    pub retry_after: Option<String>,
}

/// The status a broker's positive confirmation is recorded with.
pub const BROKER_ACK: u16 = 200;
/// The status of a core NATS publish the server took (flushed), with no
/// persistence guarantee.
pub const BROKER_SENT: u16 = 202;

/// One signed message, ready for any destination kind.
#[derive(Debug, Clone)]
pub struct Message {
    /// The envelope's bytes, exactly as the ledger holds them.
    pub body: Bytes,
    /// `X-MW-Event-Id`, `X-MW-Delivery-Id` and the signature headers.
    pub headers: Vec<(&'static str, String)>,
    /// How long the destination has to answer.
    pub timeout: Duration,
    /// `X-MW-Delivery-Id` (a broker's message id, JetStream's dedup key).
    pub delivery_id: String,
    /// The envelope's `type` and `instance_id`, for routing keys and
    /// subjects.
    pub event_type: String,
    pub instance_id: InstanceId,
    /// The broker login, if the subscription has one.
    pub credentials: Option<BrokerCredentials>,
    /// The operator setting `brokers.nats_sin_jetstream`.
    pub nats_without_jetstream: bool,
    /// The app's `politica_destinos` is `publica_https`: connect only to
    /// public IPv4 addresses.
    pub public_ipv4_only: bool,
}

/// A kind of destination: sends a [`Message`] to one of its targets.
pub trait Sender {
    /// The parsed address this kind sends to.
    type Target;

    fn send(
        &self,
        target: &Self::Target,
        message: &Message,
    ) -> impl Future<Output = Result<Answer, TransportFailure>> + Send;
}

/// Every destination kind's sender, made once per process (each pools its
/// connections).
#[derive(Clone, Default)]
pub struct Destinations {
    webhook: webhook::Webhook,
    amqp: amqp::Amqp,
    nats: nats::Nats,
}

impl Destinations {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends `message` to `destination` with the sender of its kind.
    pub async fn send(
        &self,
        destination: &Destination,
        message: &Message,
    ) -> Result<Answer, TransportFailure> {
        match destination {
            Destination::Webhook(url) => self.webhook.send(url, message).await,
            Destination::Amqp(target) => self.amqp.send(target, message).await,
            Destination::Nats(target) => self.nats.send(target, message).await,
        }
    }
}
