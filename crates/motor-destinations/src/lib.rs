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
//! `webhook`, `amqp` (RabbitMQ, Cargo feature `amqp`) and `nats` (NATS
//! JetStream, feature `nats`; both on by default), each with the
//! same inner shape (config, client, outcome, tests); `guard` is the
//! connect-time address check the broker kinds share, `links` the broker
//! connections they share (one per destination and login), `resolve` the
//! name resolution every kind is given (the system's, or a test's),
//! `check` the receiver conformance battery (`motor check-receiver`).
//!
//! Neighbours: `motor-domain` (destinations, outcomes, signatures); used by
//! `motor-engine` (the dispatcher) and `motor-api` (the test probe).

#[cfg(feature = "amqp")]
pub mod amqp;
mod attempt;
pub mod check;
#[cfg(any(feature = "amqp", feature = "nats"))]
mod guard;
#[cfg(any(feature = "amqp", feature = "nats"))]
mod links;
#[cfg(feature = "nats")]
pub mod nats;
pub mod resolve;
mod roots;
pub mod webhook;

use std::{future::Future, sync::Arc, time::Duration};

use bytes::Bytes;
use motor_domain::{
    credentials::BrokerCredentials, delivery::TransportFailure, destination::Destination,
    InstanceId,
};

pub use attempt::{attempt, Attempt, AttemptReport};
pub use roots::{BadRoots, ExtraRoots};

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
#[derive(Clone)]
pub struct Destinations {
    /// The resolver every kind was given, for the conformance battery's
    /// guarded client.
    resolver: Arc<dyn resolve::Resolver>,
    /// The extra roots every webhook client trusts.
    roots: ExtraRoots,
    webhook: webhook::Webhook,
    #[cfg(feature = "amqp")]
    amqp: amqp::Amqp,
    #[cfg(feature = "nats")]
    nats: nats::Nats,
}

impl Default for Destinations {
    fn default() -> Self {
        Self::new()
    }
}

impl Destinations {
    /// Senders that resolve names with the system's resolver.
    pub fn new() -> Self {
        Self::with_resolver(Arc::new(resolve::SystemResolver))
    }

    /// Senders that ask `resolver` for every host name (each kind's guard
    /// still judges the answer).
    pub fn with_resolver(resolver: Arc<dyn resolve::Resolver>) -> Self {
        Self::trusting(resolver, ExtraRoots::default())
    }

    /// [`Self::with_resolver`], webhooks also trusting `roots`
    /// (`MOTOR_WEBHOOK_EXTRA_ROOTS`).
    pub fn trusting(resolver: Arc<dyn resolve::Resolver>, roots: ExtraRoots) -> Self {
        Self {
            resolver: resolver.clone(),
            webhook: webhook::Webhook::trusting(resolver.clone(), &roots),
            roots,
            #[cfg(feature = "amqp")]
            amqp: amqp::Amqp::new(resolver.clone()),
            #[cfg(feature = "nats")]
            nats: nats::Nats::new(resolver),
        }
    }

    /// A conformance-battery client that connects only where these
    /// senders would (the same resolver, the same guard).
    pub fn check_client(&self, public_ipv4_only: bool) -> check::CheckClient {
        check::CheckClient::guarded(self.resolver.clone(), public_ipv4_only, &self.roots)
    }

    /// Closes the broker connections gracefully (RabbitMQ; NATS clients
    /// close when dropped). Call it after the last send, before the
    /// runtime stops.
    pub async fn close(&self) {
        #[cfg(feature = "amqp")]
        self.amqp.close().await;
    }

    /// Sends `message` to `destination` with the sender of its kind. A
    /// kind this build left out (the `amqp` and `nats` features) cannot
    /// use the URL: [`TransportFailure::BadUrl`], a permanent failure.
    pub async fn send(
        &self,
        destination: &Destination,
        message: &Message,
    ) -> Result<Answer, TransportFailure> {
        match destination {
            Destination::Webhook(url) => self.webhook.send(url, message).await,
            #[cfg(feature = "amqp")]
            Destination::Amqp(target) => self.amqp.send(target, message).await,
            #[cfg(feature = "nats")]
            Destination::Nats(target) => self.nats.send(target, message).await,
            #[cfg(not(feature = "amqp"))]
            Destination::Amqp(_) => Err(left_out("amqp")),
            #[cfg(not(feature = "nats"))]
            Destination::Nats(_) => Err(left_out("nats")),
        }
    }
}

/// The failure of a destination whose kind this build left out.
#[cfg(not(all(feature = "amqp", feature = "nats")))]
fn left_out(feature: &'static str) -> TransportFailure {
    tracing::warn!(
        feature,
        "this build of Motor has no sender for this destination kind; build it with the Cargo feature"
    );
    TransportFailure::BadUrl
}
