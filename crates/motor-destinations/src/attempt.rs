//! One attempt, the same for every caller: the dispatcher's deliveries and
//! the `/test` probe. Check the destination against the allowed lists,
//! sign with the live keys, send within the timeout, and report what
//! happened and how long it took. What the outcome means for the delivery
//! (retry, suspend, fail) is the caller's: [`AttemptReport::outcome`] is the
//! domain's classification of it.

use std::time::{Duration, Instant};

use bytes::Bytes;
use motor_domain::{
    credentials::BrokerCredentials,
    delivery::{AttemptResult, Outcome, TransportFailure},
    destination::{Destination, DestinationPolicy},
    signature::{sign_profile, SigningKey, SigningProfile},
    time::Timestamp,
    EventId, InstanceId,
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
    /// headers the message carries, whatever the destination's kind.
    pub profile: SigningProfile,
    pub event_id: EventId,
    /// `X-MW-Delivery-Id`: the delivery's id, or a fresh one for a probe.
    pub delivery_id: &'a str,
    /// `X-MW-Replay-Of`: the delivery a replay or a manual retry sends
    /// again; `None` for a live delivery or a probe (no header).
    pub replay_of: Option<&'a str>,
    /// The envelope's bytes, exactly as the ledger holds them.
    pub envelope: Bytes,
    /// The operator setting `webhooks.timeout_segundos` (clamped to 1–60).
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

    /// The duration in whole milliseconds, as attempts record it.
    pub fn duration_ms(&self) -> u32 {
        self.duration.as_millis().min(u32::MAX as u128) as u32
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
    // No live key, or (standard-webhooks) a stored secret that is not
    // base64: nothing a receiver could verify, so `sin_secreto`.
    let signed = sign_profile(
        attempt.profile,
        attempt.keys,
        chrono::Utc::now(),
        attempt.delivery_id,
        &attempt.envelope,
    )
    .map_err(|_| TransportFailure::NoSecret)?;
    key_ids.extend(signed.key_id_list().into_iter().map(str::to_owned));
    let mut headers = vec![
        ("X-MW-Event-Id", attempt.event_id.to_string()),
        ("X-MW-Delivery-Id", attempt.delivery_id.to_owned()),
    ];
    if let Some(original) = attempt.replay_of {
        headers.push(("X-MW-Replay-Of", original.to_owned()));
    }
    headers.extend(signed.pairs().map(|(k, v)| (k, v.to_owned())));
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
    let message = Message {
        body: attempt.envelope.clone(),
        headers,
        delivery_id: attempt.delivery_id.to_owned(),
        event_type: routing.event_type,
        instance_id: routing.instance_id,
        credentials: attempt.credentials.cloned(),
        nats_without_jetstream: attempt.nats_without_jetstream,
        public_ipv4_only: attempt.policy.public_ipv4_only(),
        timeout: Duration::from_secs(
            attempt
                .timeout_seconds
                .clamp(*TIMEOUT_SECONDS.start(), *TIMEOUT_SECONDS.end()) as u64,
        ),
    };
    destinations.send(destination, &message).await
}
