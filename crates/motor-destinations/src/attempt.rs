//! One attempt, the same for every caller: the dispatcher's deliveries and
//! the `/test` probe. Check the destination against the allowed lists,
//! render the request under the subscription's contract (body, headers,
//! signature with the live keys: `motor_domain::contract::render`), send
//! within the contract's timeout, and report what happened and how long it
//! took. What the outcome means for the delivery
//! (retry, suspend, fail) is the caller's: [`AttemptReport::outcome`] is the
//! domain's classification of it.

use std::{
    borrow::Cow,
    time::{Duration, Instant},
};

use bytes::Bytes;
use motor_domain::{
    contract::{render, render::Replay, Contract, Environment, RenderError, RenderInput},
    credentials::BrokerCredentials,
    delivery::{AttemptResult, DeliveryId, Outcome, TransportFailure},
    destination::{Destination, DestinationPolicy},
    signature::{SigningKey, SigningProfile},
    time::Timestamp,
    AppId, EventId, InstanceId,
};
use serde::Deserialize;

use crate::{Answer, Destinations, Message};

/// The contract's bounds on `webhooks.timeout_segundos`.
const TIMEOUT_SECONDS: std::ops::RangeInclusive<i64> = 1..=60;

/// What one attempt needs.
#[derive(Debug, Clone)]
pub struct Attempt<'a> {
    /// The subscription's destination; `None` when its stored URL no longer
    /// parses (the attempt fails with `url`).
    pub destination: Option<&'a Destination>,
    /// The allowed-destination lists (global, the app's) the destination
    /// must pass.
    pub allowed: &'a [&'a [String]],
    /// The app's `politica_destinos`: under `publica_https` the
    /// destination must be an https webhook on 443 and every address
    /// connected to public IPv4 (`destino_bloqueado` otherwise).
    pub policy: DestinationPolicy,
    /// The subscription's keys, opened; those live at the attempt's
    /// instant sign it.
    pub keys: &'a [SigningKey],
    /// The subscription's signing profile (`firma`): which signature
    /// headers the message carries, whatever the destination's kind, where
    /// the contract lets the subscription choose.
    pub profile: SigningProfile,
    /// The subscription's contract (`contrato`): the body's shape, the
    /// header names, the signature, the timeout.
    pub contract: Contract,
    /// The event's app: Visito's `tenantId`.
    pub app_id: AppId,
    /// Asixto's `environment`.
    pub environment: Environment,
    /// `X-MW-Delivery-Id`: the delivery's id, or a fresh one for a probe.
    pub delivery_id: DeliveryId,
    /// Whether the delivery is a replay or a manual retry (its lane is a
    /// replay's): Asixto's new `id` and `replay_of`.
    pub replay: bool,
    /// `X-MW-Replay-Of`: the delivery a replay or a manual retry sends
    /// again; `None` for a live delivery or a probe (no header).
    pub replay_of: Option<&'a str>,
    /// The envelope's bytes, exactly as the ledger holds them.
    pub envelope: Bytes,
    /// Its `event_id` (the ledger's row has it beside the envelope).
    pub event_id: EventId,
    /// The operator setting `webhooks.timeout_segundos` (clamped to 1–60),
    /// for contracts that leave the timeout to the operator.
    pub timeout_seconds: i64,
    /// The subscription's broker login, opened (brokers only).
    pub credentials: Option<&'a BrokerCredentials>,
    /// The operator setting `brokers.nats_sin_jetstream`.
    pub nats_without_jetstream: bool,
}

/// What a broker's routing key or subject reads from the envelope.
#[derive(Deserialize)]
struct Routing {
    #[serde(rename = "type")]
    event_type: String,
    instance_id: InstanceId,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptReport {
    /// When the attempt began.
    pub started_at: Timestamp,
    pub duration: Duration,
    /// The destination's answer, or why there was none.
    pub result: Result<Answer, TransportFailure>,
    /// The key ids that signed it, newest first (empty when it was not
    /// signed).
    pub key_ids: Vec<String>,
}

impl AttemptReport {
    /// The answer's status, when there was one.
    pub fn status(&self) -> Option<u16> {
        self.result.as_ref().ok().map(|a| a.status)
    }

    /// The domain's reading of the result at `now` (2xx delivered, 401/403
    /// suspend, 408/429/5xx/transport retry, the rest fail).
    pub fn outcome(&self, now: Timestamp) -> Outcome {
        match &self.result {
            Ok(answer) => Outcome::classify(
                AttemptResult::Http {
                    status: answer.status,
                    retry_after: answer.retry_after.as_deref(),
                },
                now,
            ),
            Err(failure) => Outcome::classify(AttemptResult::Transport(*failure), now),
        }
    }
}

/// Makes one attempt.
pub async fn attempt(destinations: &Destinations, attempt: Attempt<'_>) -> AttemptReport {
    let started_at = chrono::Utc::now();
    let started = Instant::now();
    let mut key_ids = Vec::new();
    let result = send(destinations, &attempt, &mut key_ids).await;
    AttemptReport {
        started_at,
        duration: started.elapsed(),
        result,
        key_ids,
    }
}

async fn send(
    destinations: &Destinations,
    attempt: &Attempt<'_>,
    key_ids: &mut Vec<String>,
) -> Result<Answer, TransportFailure> {
    let destination = attempt.destination.ok_or(TransportFailure::BadUrl)?;
    if !destination.is_allowed_by(attempt.allowed.iter().flat_map(|list| list.iter())) {
        return Err(TransportFailure::DestinationNotAllowed);
    }
    if attempt.policy.check(destination, "url").is_err() {
        return Err(TransportFailure::DestinationBlocked);
    }
    let spec = attempt.contract.spec();
    let replay = (attempt.replay || attempt.replay_of.is_some()).then_some(Replay {
        original_delivery: attempt.replay_of,
    });
    let rendered = render(
        spec,
        &RenderInput {
            envelope: &attempt.envelope,
            event_id: attempt.event_id,
            app_id: attempt.app_id,
            environment: attempt.environment,
            delivery_id: attempt.delivery_id,
            replay,
            keys: attempt.keys,
            profile: attempt.profile,
            now: chrono::Utc::now(),
        },
    )
    .map_err(|e| match e {
        // No live key, or (standard-webhooks) a stored secret that is not
        // base64: nothing a receiver could verify, so `sin_secreto`.
        RenderError::Sign(_) => TransportFailure::NoSecret,
        // Never for an envelope Motor stored: nothing could be sent.
        RenderError::Envelope(_) => TransportFailure::BadUrl,
    })?;
    key_ids.extend(rendered.key_ids);
    // Only brokers route by the envelope's fields; a webhook never reads
    // its body.
    let routing = if destination.is_broker() {
        serde_json::from_slice::<Routing>(&attempt.envelope)
            .map_err(|_| TransportFailure::BadUrl)?
    } else {
        Routing {
            event_type: String::new(),
            instance_id: InstanceId::from_uuid(Default::default()),
        }
    };
    // The contract's own timeout, or the operator's setting.
    let timeout = spec.attempt_timeout.unwrap_or_else(|| {
        Duration::from_secs(
            attempt
                .timeout_seconds
                .clamp(*TIMEOUT_SECONDS.start(), *TIMEOUT_SECONDS.end()) as u64,
        )
    });
    let body = match rendered.body {
        // Motor's shape: the envelope itself, shared rather than copied
        // (a body borrowed from the input can only be its envelope).
        Cow::Borrowed(_) => attempt.envelope.clone(),
        Cow::Owned(body) => Bytes::from(body),
    };
    let message = Message {
        body,
        headers: rendered.headers,
        delivery_id: attempt.delivery_id.to_string(),
        event_type: routing.event_type,
        instance_id: routing.instance_id,
        credentials: attempt.credentials.cloned(),
        nats_without_jetstream: attempt.nats_without_jetstream,
        public_ipv4_only: attempt.policy.public_ipv4_only(),
        timeout,
    };
    destinations.send(destination, &message).await
}
