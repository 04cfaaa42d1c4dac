//! The battery itself: which request each check sends, how it is rendered
//! and signed (always by `contract::render`, the function every delivery
//! goes through, then bent the way the check needs), and how the answer is
//! graded. The table of checks is in the module docs.

use std::time::Duration;

use bytes::Bytes;
use chrono::{TimeDelta, Utc};
use motor_domain::{
    contract::{self, render::Replay, Environment, RenderInput, ReplayIdentity},
    delivery::{DeliveryId, TransportFailure},
    envelope::{Envelope, SCHEMA_VERSION},
    event::cap::MAX_ENVELOPE_BYTES,
    secret::{SigningKeyId, SigningSecret},
    signature::SigningKey,
    time::Timestamp,
    EventId, InstanceId, Origin,
};
use serde_json::{json, Value};

use super::{
    client::Reply,
    report::{percentile_ms, CheckResult, Expected, Got, Report, Timings, Verdict},
    CheckClient, CheckOptions, EFFECT_PLACEHOLDER,
};

/// How far from now the stale and the future timestamps are, in windows:
/// twice the contract's receiver window (300 s in every seed), far beyond
/// any honest clock skew.
const CLOCK_OFFSET_WINDOWS: u32 = 2;

/// How much earlier the older event (`seq_menor`) happened.
const OLDER_BY_SECS: i64 = 60;

/// The amount the tampered body carries instead of the signed one (same
/// length, still valid JSON: only the signature can tell).
const SIGNED_AMOUNT: &str = "\"importe\":100";
const TAMPERED_AMOUNT: &str = "\"importe\":900";

/// How a check's request departs from a valid delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// Signed as Motor signs it, now.
    Valid,
    /// Signed with the attempt time moved by this many seconds.
    Clock(i64),
    /// Signed, then the body changed.
    TamperedBody,
    /// Signed only by a key the receiver does not hold.
    StrangerOnly,
    /// Signed by a stranger key (first, as the newest) and the receiver's.
    StrangerFirst,
    /// Valid, plus the signature header again with a stranger's value.
    RepeatedHeader,
}

/// One check to run.
pub(super) struct Plan {
    pub(super) name: &'static str,
    pub(super) expected: Expected,
    pub(super) event_id: EventId,
    /// The event as the ledger would hold it (Motor's envelope); [`build`]
    /// renders it under the contract.
    pub(super) envelope: Bytes,
    pub(super) delivery_id: DeliveryId,
    /// On a replay, the delivery it sends again.
    pub(super) replay_of: Option<DeliveryId>,
    pub(super) shape: Shape,
}

impl Plan {
    /// Effects of its event the receiver must show after this check.
    fn expected_effects(&self) -> u64 {
        u64::from(self.expected == Expected::Success)
    }

    /// The id the receiver deduplicates by, which the effect URL is asked
    /// about: the event id, but under a contract whose replay carries a new
    /// id (Asixto's `id` + `replay_of`) a replay's own id — the replay is a
    /// new delivery the receiver must apply once, not drop as a duplicate.
    pub(super) fn effect_key(&self, options: &CheckOptions) -> String {
        match (self.replay_of, options.profile.spec().replay) {
            (Some(_), ReplayIdentity::NewIdWithReplayOf) => self.delivery_id.to_string(),
            _ => self.event_id.to_string(),
        }
    }
}

/// Runs the battery against `options.url` and grades every answer.
/// Nothing here fails: an unreachable receiver is a report full of
/// failures, each naming the transport error.
pub async fn run(client: &CheckClient, options: &CheckOptions) -> Report {
    let started = Utc::now();
    let keys = receiver_keys(options, started);
    let stranger = SigningKey {
        key_id: SigningKeyId::generate(),
        secret: SigningSecret::generate(),
        // Newest of all, so it signs first.
        created_at: started + TimeDelta::days(1),
        expires_at: None,
    };
    let mut checks = Vec::new();
    let mut durations = Vec::new();
    for plan in plans(options) {
        let request = build(options, &plan, &keys, &stranger);
        let reply = match request {
            Ok((headers, body)) => {
                client
                    .post(&options.url, options.timeout, &headers, body)
                    .await
            }
            Err(reason) => {
                checks.push(unsigned(&plan, reason));
                continue;
            }
        };
        // Answer times are those of answers (a timeout counts as the whole
        // timeout); a refused connection says nothing about speed.
        if matches!(reply.result, Ok(_) | Err(TransportFailure::Timeout)) {
            durations.push(reply.duration);
        }
        let effects = match &options.effect_url {
            Some(template) => Some(
                count_effects(client, template, &plan.effect_key(options), options.timeout).await,
            ),
            None => None,
        };
        checks.push(grade(&plan, &reply, effects));
    }
    let timings = Timings {
        samples: durations.len(),
        p50_ms: percentile_ms(&durations, 50),
        p99_ms: percentile_ms(&durations, 99),
        timeout_ms: options.timeout.as_millis() as u64,
    };
    checks.push(grade_timings(&timings, options.timeout));
    Report {
        url: options.url.clone(),
        profile: options.profile.as_str(),
        passed: checks.iter().all(|c| c.verdict == Verdict::Pass),
        checks,
        timings,
    }
}

/// The receiver's secrets as signing keys, newest first in the given
/// order.
pub(super) fn receiver_keys(options: &CheckOptions, now: Timestamp) -> Vec<SigningKey> {
    (0i64..)
        .zip(&options.keys)
        .map(|(age, key)| SigningKey {
            key_id: key.key_id.clone(),
            secret: key.secret.clone(),
            created_at: now - TimeDelta::minutes(age),
            expires_at: None,
        })
        .collect()
}

pub(super) fn plans(options: &CheckOptions) -> Vec<Plan> {
    let profile = options.profile;
    let instance = InstanceId::new();
    let now = motor_domain::time::now_millis();
    let event = |name: &'static str, seq: i64| envelope(options, instance, seq, name, now);
    // Seeds 001 and 003 name no refusal code: only 2xx acknowledges.
    let refusal = |motor: Expected| {
        if profile.motor_codes() {
            motor
        } else {
            Expected::Rejected
        }
    };
    let window = i64::try_from(profile.spec().receiver_window.as_secs()).unwrap_or(300);
    let offset = window * i64::from(CLOCK_OFFSET_WINDOWS);
    let (a_id, a_body) = event("entrega_valida", 2);
    let d1 = DeliveryId::new();
    let plan = |name, expected, (event_id, envelope): (EventId, Bytes), shape| Plan {
        name,
        expected,
        event_id,
        envelope,
        delivery_id: DeliveryId::new(),
        replay_of: None,
        shape,
    };
    let mut plans = vec![
        Plan {
            delivery_id: d1,
            ..plan(
                "entrega_valida",
                Expected::Success,
                (a_id, a_body.clone()),
                Shape::Valid,
            )
        },
        Plan {
            delivery_id: d1,
            ..plan(
                "evento_repetido",
                Expected::Success,
                (a_id, a_body.clone()),
                Shape::Valid,
            )
        },
        Plan {
            replay_of: Some(d1),
            ..plan(
                "reproduccion",
                Expected::Success,
                (a_id, a_body),
                Shape::Valid,
            )
        },
        // An older event after a newer one: a lower seq (Motor's
        // envelope), an earlier occurredAt / created (Visito's, Asixto's).
        plan(
            "seq_menor",
            Expected::Success,
            envelope(
                options,
                instance,
                1,
                "seq_menor",
                now - TimeDelta::seconds(OLDER_BY_SECS),
            ),
            Shape::Valid,
        ),
        plan(
            "timestamp_vencido",
            refusal(Expected::Status(408)),
            event("timestamp_vencido", 3),
            Shape::Clock(-offset),
        ),
        plan(
            "timestamp_futuro",
            refusal(Expected::Status(408)),
            event("timestamp_futuro", 4),
            Shape::Clock(offset),
        ),
        plan(
            "cuerpo_alterado",
            refusal(Expected::Status(401)),
            event("cuerpo_alterado", 5),
            Shape::TamperedBody,
        ),
        plan(
            "firma_incorrecta",
            refusal(Expected::Status(401)),
            event("firma_incorrecta", 6),
            Shape::StrangerOnly,
        ),
    ];
    if profile.signs_with_every_live_key() {
        plans.push(plan(
            "segunda_firma_valida",
            Expected::Success,
            event("segunda_firma_valida", 7),
            Shape::StrangerFirst,
        ));
    }
    if profile.refuses_repeated_header() {
        plans.push(plan(
            "cabecera_repetida",
            refusal(Expected::Refused),
            event("cabecera_repetida", 8),
            Shape::RepeatedHeader,
        ));
    }
    plans.push(plan(
        "cuerpo_grande",
        Expected::Success,
        large_envelope(options, instance, 9, now),
        Shape::Valid,
    ));
    plans
}

/// `data` of every event: what a re-serialising receiver cannot give back
/// byte for byte (non-ASCII text, a u64 past 2^53), and the amount the
/// tampered check changes.
fn data(check: &str) -> Value {
    json!({
        "comprobacion": check,
        "importe": 100,
        "texto": "¡hola! ñ \"citas\"",
        "grande": 12_345_678_901_234_567_890u64,
    })
}

fn envelope_of(
    options: &CheckOptions,
    instance: InstanceId,
    seq: i64,
    data: Value,
    now: Timestamp,
) -> (EventId, Envelope) {
    let event_id = EventId::new();
    let envelope = Envelope {
        schema_version: SCHEMA_VERSION,
        event_id,
        instance_id: instance,
        seq,
        event_type: options.event_type.clone(),
        occurred_at: now,
        received_at: now,
        generation: 1,
        origin: Origin::Operator,
        command_id: None,
        data,
    };
    (event_id, envelope)
}

fn envelope(
    options: &CheckOptions,
    instance: InstanceId,
    seq: i64,
    check: &str,
    now: Timestamp,
) -> (EventId, Bytes) {
    let (id, envelope) = envelope_of(options, instance, seq, data(check), now);
    (id, Bytes::from(envelope.to_json()))
}

/// An envelope of exactly [`MAX_ENVELOPE_BYTES`], the most Motor accepts:
/// under Motor's contract the body sent, under Visito's and Asixto's the
/// largest body they are ever rendered from (theirs is a little smaller).
fn large_envelope(
    options: &CheckOptions,
    instance: InstanceId,
    seq: i64,
    now: Timestamp,
) -> (EventId, Bytes) {
    let mut data = data("cuerpo_grande");
    data["relleno"] = json!("");
    let (id, mut envelope) = envelope_of(options, instance, seq, data, now);
    let room = MAX_ENVELOPE_BYTES.saturating_sub(envelope.to_json().len());
    envelope.data["relleno"] = json!("x".repeat(room));
    (id, Bytes::from(envelope.to_json()))
}

pub(super) type Headers = Vec<(&'static str, String)>;

/// The headers and body of one check, rendered and signed under the
/// profile's contract at the time it is sent.
pub(super) fn build(
    options: &CheckOptions,
    plan: &Plan,
    keys: &[SigningKey],
    stranger: &SigningKey,
) -> Result<(Headers, Bytes), String> {
    let now = Utc::now();
    let spec = options.profile.spec();
    let original = plan.replay_of.map(|d| d.to_string());
    let render = |keys: &[SigningKey], at: Timestamp| {
        contract::render(
            spec,
            &RenderInput {
                envelope: &plan.envelope,
                event_id: plan.event_id,
                app_id: options.app_id,
                environment: Environment::Live,
                delivery_id: plan.delivery_id,
                replay: plan.replay_of.map(|_| Replay {
                    original_delivery: original.as_deref(),
                }),
                keys,
                profile: options.profile.signing(),
                now: at,
            },
        )
        // Owned: a Motor-shaped body borrows the input, which this
        // closure makes and cannot return.
        .map(|r| (r.headers, Bytes::from(r.body.into_owned())))
        .map_err(|e| e.to_string())
    };
    let with_stranger: Vec<SigningKey> = std::iter::once(stranger.clone())
        .chain(keys.iter().cloned())
        .collect();
    let (mut headers, mut body) = match plan.shape {
        Shape::Clock(secs) => render(keys, now + TimeDelta::seconds(secs))?,
        Shape::StrangerOnly => render(std::slice::from_ref(stranger), now)?,
        Shape::StrangerFirst => render(&with_stranger, now)?,
        Shape::Valid | Shape::TamperedBody | Shape::RepeatedHeader => render(keys, now)?,
    };
    match plan.shape {
        Shape::TamperedBody => {
            let text = String::from_utf8_lossy(&body).replacen(SIGNED_AMOUNT, TAMPERED_AMOUNT, 1);
            body = Bytes::from(text);
        }
        Shape::RepeatedHeader => {
            let name = options.profile.signature_header();
            let (foreign, _) = render(std::slice::from_ref(stranger), now)?;
            let value = foreign
                .into_iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v)
                .ok_or_else(|| format!("the profile signs without {name}"))?;
            headers.push((name, value));
        }
        _ => {}
    }
    Ok((headers, body))
}

/// Asks the effect endpoint how many times the event was applied.
async fn count_effects(
    client: &CheckClient,
    template: &str,
    key: &str,
    timeout: Duration,
) -> Result<u64, String> {
    let url = template.replace(EFFECT_PLACEHOLDER, key);
    let (status, body) = client
        .get(&url, timeout)
        .await
        .map_err(|e| format!("effect url: {}", e.error_code()))?;
    if !(200..300).contains(&status) {
        return Err(format!("effect url answered {status}"));
    }
    serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("efectos").and_then(Value::as_u64))
        .ok_or_else(|| "effect url: the answer is not {\"efectos\": N}".to_owned())
}

fn grade(plan: &Plan, reply: &Reply, effects: Option<Result<u64, String>>) -> CheckResult {
    let mut got = Got::default();
    let mut reasons = Vec::new();
    match reply.result {
        Ok(status) => {
            got.status = Some(status);
            if !plan.expected.accepts(status) {
                reasons.push(status_reason(plan.expected, status));
            }
        }
        Err(failure) => {
            let code = failure.error_code().to_string();
            reasons.push(format!("no answer: {code}"));
            got.error = Some(code);
        }
    }
    let expected_effects = effects.as_ref().map(|_| plan.expected_effects());
    match effects {
        Some(Ok(n)) => {
            got.effects = Some(n);
            if n != plan.expected_effects() {
                reasons.push(format!(
                    "applied {n} time{}, expected {}",
                    if n == 1 { "" } else { "s" },
                    plan.expected_effects()
                ));
            }
        }
        Some(Err(reason)) => reasons.push(reason),
        None => {}
    }
    CheckResult {
        name: plan.name,
        expected: plan.expected,
        expected_effects,
        got,
        verdict: if reasons.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
        duration_ms: Some(reply.duration.as_millis() as u64),
    }
}

/// Why an answer's status is wrong, in the contract's terms.
fn status_reason(expected: Expected, status: u16) -> String {
    let what = match (expected, status) {
        (Expected::Status(408), 401) => "401 suspends the subscription; a stale clock is 408",
        (Expected::Status(408), 200..=299) => "accepted a timestamp outside the 300 s window",
        (Expected::Status(401), 200..=299) => "accepted a request it cannot have verified",
        (Expected::Refused, 200..=299) => "accepted a repeated signature header",
        (Expected::Refused, 408 | 429) => "a repeated header is not a reason to retry",
        (Expected::Rejected, 200..=299) => "accepted a request the contract says to refuse",
        (Expected::Success, 401 | 403) => {
            "refused a request Motor signs (suspends the subscription)"
        }
        (Expected::Success, 300..=399) => "redirects are never followed",
        _ => "",
    };
    if what.is_empty() {
        format!("answered {status}")
    } else {
        format!("answered {status}: {what}")
    }
}

/// A check whose request could not be signed (a secret standard-webhooks
/// cannot use): it fails without sending.
fn unsigned(plan: &Plan, reason: String) -> CheckResult {
    CheckResult {
        name: plan.name,
        expected: plan.expected,
        expected_effects: None,
        got: Got::default(),
        verdict: Verdict::Fail,
        reason: Some(format!("not sent: {reason}")),
        duration_ms: None,
    }
}

/// Answers must leave headroom under Motor's timeout: p99 under half of
/// it, so a receiver that is fine when idle does not time out under load.
fn grade_timings(timings: &Timings, timeout: Duration) -> CheckResult {
    let bound = timeout / 2;
    let ok = timings.samples > 0 && u128::from(timings.p99_ms) < bound.as_millis();
    let reason = if timings.samples == 0 {
        "no request was answered".to_owned()
    } else {
        format!(
            "p50 {} ms, p99 {} ms against a {} ms timeout",
            timings.p50_ms, timings.p99_ms, timings.timeout_ms
        )
    };
    CheckResult {
        name: "tiempos",
        expected: Expected::AnswersUnder(bound),
        expected_effects: None,
        got: Got::default(),
        verdict: if ok { Verdict::Pass } else { Verdict::Fail },
        reason: (!ok).then_some(reason),
        duration_ms: Some(timings.p99_ms),
    }
}
