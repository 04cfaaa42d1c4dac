//! What one attempt adds to the metrics: its outcome class and duration,
//! and — when it ended the delivery — the terminal state, its
//! `ultimo_error`, and the commit → delivered latency; a retry counts in
//! its tier.

use motor_domain::delivery::{Decision, ErrorCode};
use motor_metrics::Metrics;
use motor_store::deliveries::{Attempt, Claimed};

/// Taken before the attempt is recorded (the recorder keeps the attempt),
/// counted after.
pub(super) struct Observation {
    span: tracing::Span,
    clase: &'static str,
    seconds: f64,
    decision: Decision,
    /// Seconds from the delivery's commit to now.
    since_commit: f64,
    /// The instance and event type, for a delivery this attempt ended.
    source: Option<(String, String)>,
}

/// The `type` of a stored envelope (`?` when it has none): its keys are
/// read up to `type` and the reading stops there, so the `data` the ledger
/// writes after it is not scanned (64 KiB a delivery in the shapes bench's
/// large bodies, for a metric's label).
fn event_type(envelope: &str) -> String {
    let mut found = None;
    // The visitor ends the reading with an error of its own once it has
    // the type; any other error leaves `found` empty.
    let _ = serde::Deserializer::deserialize_map(
        &mut serde_json::Deserializer::from_str(envelope),
        TypeFirst(&mut found),
    );
    found.unwrap_or_else(|| "?".to_owned())
}

struct TypeFirst<'a>(&'a mut Option<String>);

impl<'de> serde::de::Visitor<'de> for TypeFirst<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an envelope")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(IsType(is_type)) = map.next_key()? {
            if is_type {
                *self.0 = Some(map.next_value()?);
                return Err(serde::de::Error::custom("the type is read"));
            }
            map.next_value::<serde::de::IgnoredAny>()?;
        }
        Ok(())
    }
}

/// Whether a key is `type`, read without copying it.
struct IsType(bool);

impl<'de> serde::Deserialize<'de> for IsType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Key;
        impl serde::de::Visitor<'_> for Key {
            type Value = IsType;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E>(self, key: &str) -> Result<IsType, E> {
                Ok(IsType(key == "type"))
            }
        }
        d.deserialize_str(Key)
    }
}

impl Observation {
    /// `span` is the attempt's own (see [`span`]), made once per attempt.
    pub(super) fn of(
        span: tracing::Span,
        claimed: &Claimed,
        attempt: &Attempt,
        decision: &Decision,
    ) -> Self {
        let since_commit = (chrono::Utc::now() - claimed.created_at)
            .to_std()
            .map_or(0.0, |d| d.as_secs_f64());
        let ended = matches!(decision, Decision::Delivered | Decision::Fail { .. });
        Self {
            span,
            clase: class(attempt),
            seconds: attempt.duration.as_secs_f64(),
            decision: *decision,
            since_commit,
            source: ended.then(|| {
                (
                    claimed.instance_id.to_string(),
                    event_type(&claimed.envelope),
                )
            }),
        }
    }

    pub(super) fn count(self, metrics: &Metrics) {
        let estado = self.decision.state();
        let error = self.decision.last_error().map(|e| e.to_string());
        self.span.in_scope(|| {
            tracing::debug!(
                clase = self.clase,
                duracion_ms = (self.seconds * 1000.0) as u64,
                %estado,
                error = error.as_deref(),
                "attempt recorded"
            );
        });
        let p = &metrics.pipeline;
        p.attempt(self.clase, self.seconds);
        let b = &metrics.breakdown;
        let (instance, event_type) = self.source.unwrap_or_default();
        match self.decision {
            Decision::Delivered => {
                p.delivered(self.since_commit);
                b.delivered(&instance, &event_type, self.since_commit);
            }
            Decision::Fail { error } => {
                p.failed(error.to_string());
                b.failed(&instance, &event_type);
            }
            Decision::Retry { tier, .. } => {
                let suffix = tier.suffix();
                p.retry(suffix.strip_prefix("retry.").unwrap_or(suffix).to_owned());
            }
            Decision::Suspend { .. } => {}
        }
    }
}

/// The target of every attempt's span: `RUST_LOG=…,motor_engine=debug`
/// (or this target at debug) turns the spans on, and the `motor` binary
/// turns them on itself when it exports traces over OTLP.
pub const ATTEMPT_SPAN_TARGET: &str = "motor_engine::attempt";

/// The span of one attempt: the ids that tie it to its event, delivery,
/// subscription and instance (and so to the ingest that created it).
///
/// At debug level: at `info` nothing is logged inside an attempt, and a
/// span formatted at every attempt for no line was about 5 % of Motor's
/// CPU a delivery in the fan-out (docs/BENCHMARKS.md, Shapes, 2026-12-07
/// 05:13). A span turned off costs a cached check.
pub(super) fn span(claimed: &Claimed) -> tracing::Span {
    tracing::debug_span!(
        target: ATTEMPT_SPAN_TARGET,
        "attempt",
        event_id = %claimed.event_id,
        delivery_id = %claimed.delivery_id,
        subscription_id = %claimed.subscription_id,
        instance_id = %claimed.instance_id,
        seq = claimed.seq,
        attempt = claimed.attempt,
    )
}

/// The outcome class of an attempt: the status family when an answer came,
/// else what stopped it.
pub(super) fn class(attempt: &Attempt) -> &'static str {
    if let Some(status) = attempt.status {
        return family(status);
    }
    match attempt.error {
        None => "2xx",
        Some(ErrorCode::Http(status)) => family(status),
        Some(ErrorCode::Timeout) => "timeout",
        Some(
            ErrorCode::ConnectionRefused
            | ErrorCode::ConnectionReset
            | ErrorCode::Dns
            | ErrorCode::Tls
            | ErrorCode::Network,
        ) => "red",
        Some(ErrorCode::Redirect) => "3xx",
        Some(
            ErrorCode::DestinationNotAllowed
            | ErrorCode::DestinationBlocked
            | ErrorCode::NoSecret
            | ErrorCode::Url,
        ) => "destino",
        Some(
            ErrorCode::BrokerRejected
            | ErrorCode::BrokerUnroutable
            | ErrorCode::NoStream
            | ErrorCode::CredentialsRejected,
        ) => "broker",
    }
}

/// An HTTP status's family (`1xx` … `5xx`).
fn family(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

#[cfg(test)]
mod tests {
    use super::event_type;

    #[test]
    fn the_type_is_read_where_the_ledger_writes_it() {
        let envelope = r#"{"schema_version":1,"event_id":"e","seq":7,"type":"message.received","data":{"type":"nested"}}"#;
        assert_eq!(event_type(envelope), "message.received");
    }

    #[test]
    fn the_reading_stops_at_the_type() {
        // What follows the type is never read: not even broken JSON there
        // loses it.
        assert_eq!(event_type(r#"{"type":"a.b","data":{"#), "a.b");
    }

    #[test]
    fn a_type_after_the_data_is_the_top_level_one() {
        let envelope = r#"{"data":{"type":"nested","list":[1,{"type":"x"}]},"type":"outer"}"#;
        assert_eq!(event_type(envelope), "outer");
    }

    #[test]
    fn an_escaped_type_is_unescaped() {
        assert_eq!(event_type(r#"{"type":"a\"b\u00e9"}"#), "a\"bé");
    }

    #[test]
    fn no_type_is_a_question_mark() {
        assert_eq!(event_type(r#"{"data":{"type":"nested"}}"#), "?");
        assert_eq!(event_type(r#"{"type":7}"#), "?");
        assert_eq!(event_type("not json"), "?");
        assert_eq!(event_type(r#"["type","x"]"#), "?");
    }
}
