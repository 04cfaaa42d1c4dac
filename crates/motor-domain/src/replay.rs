//! Replay requests (`POST /v1/subscriptions/{id}/replays`): which events
//! already in the ledger to send again to one subscription, and why. This
//! module decides whether a request is acceptable (the limits of the
//! contract); the store turns an accepted one into new deliveries in the
//! replay's own lane.

use serde::Serialize;

use crate::{
    error::FieldError,
    ids::{EventId, InstanceId},
};

/// Most events one range may span (`hasta_seq - desde_seq + 1`).
pub const MAX_RANGE_EVENTS: i64 = 10_000;
/// Most `event_ids` in one request.
pub const MAX_EVENT_IDS: usize = 500;
/// Longest `motivo`, in characters.
pub const MAX_REASON_CHARS: usize = 300;
/// Longest `Idempotency-Key`, in characters.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 200;

/// Which events a replay sends again. Serialised into the replay's stored
/// `pedido` and into the hash an `Idempotency-Key` is checked against, so
/// the renames keep the stored spelling: a repeat after an upgrade must
/// still match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Selection {
    /// `from_seq..=to_seq` of one instance's ledger.
    Range {
        #[serde(rename = "instancia_id")]
        instance_id: InstanceId,
        #[serde(rename = "desde_seq")]
        from_seq: i64,
        #[serde(rename = "hasta_seq")]
        to_seq: i64,
    },
    /// These events, repeats dropped, in the order first given.
    Events(Vec<EventId>),
}

/// An accepted replay request. Serialised into the hash of
/// [`ReplayRequest::canonical`], stored with the replay: the rename keeps
/// that hash as it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayRequest {
    pub selection: Selection,
    /// 1–300 characters after trimming; kept for the audit.
    #[serde(rename = "motivo")]
    pub reason: String,
}

/// The request's fields as they arrived (absent = `None`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RawReplay<'a> {
    pub instance_id: Option<&'a str>,
    pub from_seq: Option<i64>,
    pub to_seq: Option<i64>,
    pub event_ids: Option<&'a [String]>,
    pub reason: &'a str,
}

impl ReplayRequest {
    /// Either a range (`instancia_id` + `desde_seq` + `hasta_seq`, at most
    /// [`MAX_RANGE_EVENTS`], `desde_seq <= hasta_seq`) or `event_ids` (1 to
    /// [`MAX_EVENT_IDS`]), never both; `motivo` 1–300 characters. Each
    /// failure names its field (`event_ids` when both forms are sent,
    /// [`WHOLE_INPUT`](crate::error::WHOLE_INPUT) when neither is).
    pub fn parse(raw: RawReplay<'_>) -> Result<Self, FieldError> {
        crate::operator::refuse_nul(raw.reason, "motivo")?;
        let reason = raw.reason.trim();
        let chars = reason.chars().count();
        if chars == 0 || chars > MAX_REASON_CHARS {
            return Err(FieldError::invalid(
                "motivo",
                format!("must be 1 to {MAX_REASON_CHARS} characters"),
            ));
        }
        let ranged = raw.instance_id.is_some() || raw.from_seq.is_some() || raw.to_seq.is_some();
        let selection =
            match (raw.event_ids, ranged) {
                (Some(_), true) => return Err(FieldError::invalid(
                    "event_ids",
                    "send either event_ids or instancia_id with desde_seq and hasta_seq, not both",
                )),
                (None, false) => {
                    return Err(FieldError::invalid(
                        crate::error::WHOLE_INPUT,
                        "send event_ids, or instancia_id with desde_seq and hasta_seq",
                    ))
                }
                (Some(ids), false) => Selection::Events(parse_event_ids(ids)?),
                (None, true) => parse_range(raw.instance_id, raw.from_seq, raw.to_seq)?,
            };
        Ok(Self {
            selection,
            reason: reason.to_owned(),
        })
    }

    /// A canonical text of the request for one subscription: equal for
    /// requests that mean the same replay (so an `Idempotency-Key` can tell
    /// a repeat from another request), whatever the JSON's key order.
    pub fn canonical(&self, subscription: impl std::fmt::Display) -> String {
        let body = serde_json::to_string(self).expect("a replay request serialises");
        format!("{subscription}\n{body}")
    }
}

fn parse_event_ids(raw: &[String]) -> Result<Vec<EventId>, FieldError> {
    if raw.is_empty() || raw.len() > MAX_EVENT_IDS {
        return Err(FieldError::invalid(
            "event_ids",
            format!(
                "must hold 1 to {MAX_EVENT_IDS} event ids, got {}",
                raw.len()
            ),
        ));
    }
    let mut out: Vec<EventId> = Vec::with_capacity(raw.len());
    for (i, s) in raw.iter().enumerate() {
        let id: EventId = s
            .trim()
            .parse()
            .map_err(|_| FieldError::invalid(format!("event_ids[{i}]"), "must be an event id"))?;
        if !out.contains(&id) {
            out.push(id);
        }
    }
    Ok(out)
}

fn parse_range(
    instance_id: Option<&str>,
    from_seq: Option<i64>,
    to_seq: Option<i64>,
) -> Result<Selection, FieldError> {
    let required = |field: &str| {
        FieldError::invalid(
            field,
            "is required with instancia_id, desde_seq and hasta_seq",
        )
    };
    let instance_id: InstanceId = instance_id
        .ok_or_else(|| required("instancia_id"))?
        .trim()
        .parse()
        .map_err(|_| FieldError::invalid("instancia_id", "must be an instance id"))?;
    let from_seq = from_seq.ok_or_else(|| required("desde_seq"))?;
    let to_seq = to_seq.ok_or_else(|| required("hasta_seq"))?;
    if from_seq < 1 {
        return Err(FieldError::invalid("desde_seq", "must be at least 1"));
    }
    if to_seq < from_seq {
        return Err(FieldError::invalid(
            "hasta_seq",
            "must not be lower than desde_seq",
        ));
    }
    // Both are >= 1, so the difference cannot overflow.
    if to_seq - from_seq >= MAX_RANGE_EVENTS {
        return Err(FieldError::invalid(
            "hasta_seq",
            format!("a range spans at most {MAX_RANGE_EVENTS} events"),
        ));
    }
    Ok(Selection::Range {
        instance_id,
        from_seq,
        to_seq,
    })
}

/// The `Idempotency-Key` header: required, 1–200 characters.
pub fn parse_idempotency_key(raw: Option<&str>) -> Result<String, FieldError> {
    let field = "Idempotency-Key";
    let key = raw.ok_or_else(|| FieldError::invalid(field, "is required"))?;
    let chars = key.chars().count();
    if chars == 0 || chars > MAX_IDEMPOTENCY_KEY_CHARS {
        return Err(FieldError::invalid(
            field,
            format!("must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} characters"),
        ));
    }
    Ok(key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const INSTANCE: &str = "8a1d2c3e-0000-4000-8000-0000000000a1";

    fn range(desde: i64, hasta: i64) -> Result<ReplayRequest, FieldError> {
        ReplayRequest::parse(RawReplay {
            instance_id: Some(INSTANCE),
            from_seq: Some(desde),
            to_seq: Some(hasta),
            reason: "caída",
            ..RawReplay::default()
        })
    }

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|_| EventId::new().to_string()).collect()
    }

    fn field(r: Result<ReplayRequest, FieldError>) -> String {
        r.unwrap_err().field
    }

    #[test]
    fn a_range_spans_at_most_ten_thousand_events() {
        assert!(range(1, 10_000).is_ok());
        assert!(range(5, 5).is_ok());
        assert!(range(i64::MAX - 9_999, i64::MAX).is_ok());
        assert_eq!(field(range(1, 10_001)), "hasta_seq");
        assert_eq!(field(range(1, i64::MAX)), "hasta_seq");
        assert_eq!(field(range(6, 5)), "hasta_seq");
        assert_eq!(field(range(0, 5)), "desde_seq");
        assert_eq!(field(range(i64::MIN, 5)), "desde_seq");
    }

    #[test]
    fn a_range_needs_all_three_fields() {
        let only_instance = RawReplay {
            instance_id: Some(INSTANCE),
            reason: "m",
            ..RawReplay::default()
        };
        assert_eq!(field(ReplayRequest::parse(only_instance)), "desde_seq");
        let no_instance = RawReplay {
            from_seq: Some(1),
            to_seq: Some(2),
            reason: "m",
            ..RawReplay::default()
        };
        assert_eq!(field(ReplayRequest::parse(no_instance)), "instancia_id");
        let bad = RawReplay {
            instance_id: Some("nope"),
            from_seq: Some(1),
            to_seq: Some(2),
            reason: "m",
            ..RawReplay::default()
        };
        assert_eq!(field(ReplayRequest::parse(bad)), "instancia_id");
    }

    #[test]
    fn event_ids_are_one_to_five_hundred() {
        let parse = |list: &[String]| {
            ReplayRequest::parse(RawReplay {
                event_ids: Some(list),
                reason: "m",
                ..RawReplay::default()
            })
        };
        assert!(parse(&ids(500)).is_ok());
        assert!(parse(&ids(1)).is_ok());
        assert_eq!(field(parse(&ids(501))), "event_ids");
        assert_eq!(field(parse(&[])), "event_ids");
        let mut bad = ids(3);
        bad[2] = "x".into();
        assert_eq!(field(parse(&bad)), "event_ids[2]");
        let one = ids(1);
        let twice = [one[0].clone(), one[0].clone()];
        let Selection::Events(got) = parse(&twice).unwrap().selection else {
            panic!("events")
        };
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn both_forms_or_neither_are_refused() {
        let list = ids(1);
        let both = RawReplay {
            instance_id: Some(INSTANCE),
            from_seq: Some(1),
            to_seq: Some(2),
            event_ids: Some(&list),
            reason: "m",
        };
        assert_eq!(field(ReplayRequest::parse(both)), "event_ids");
        let half = RawReplay {
            from_seq: Some(1),
            event_ids: Some(&list),
            reason: "m",
            ..RawReplay::default()
        };
        assert_eq!(field(ReplayRequest::parse(half)), "event_ids");
        let neither = RawReplay {
            reason: "m",
            ..RawReplay::default()
        };
        assert_eq!(
            field(ReplayRequest::parse(neither)),
            crate::error::WHOLE_INPUT
        );
    }

    #[test]
    fn reason_is_one_to_three_hundred_characters() {
        let with = |reason: &str| {
            ReplayRequest::parse(RawReplay {
                instance_id: Some(INSTANCE),
                from_seq: Some(1),
                to_seq: Some(1),
                reason,
                ..RawReplay::default()
            })
        };
        assert!(with("a").is_ok());
        assert!(with(&"ñ".repeat(300)).is_ok());
        assert_eq!(field(with(&"ñ".repeat(301))), "motivo");
        assert_eq!(field(with("")), "motivo");
        assert_eq!(field(with("   ")), "motivo");
        assert_eq!(with("  x  ").unwrap().reason, "x");
    }

    #[test]
    fn idempotency_keys_are_required_and_bounded() {
        assert_eq!(
            parse_idempotency_key(None).unwrap_err().field,
            "Idempotency-Key"
        );
        assert!(parse_idempotency_key(Some("")).is_err());
        assert!(parse_idempotency_key(Some("k")).is_ok());
        assert!(parse_idempotency_key(Some(&"k".repeat(200))).is_ok());
        assert!(parse_idempotency_key(Some(&"k".repeat(201))).is_err());
    }

    #[test]
    fn the_canonical_text_ignores_how_the_request_was_written() {
        let a = range(1, 9).unwrap();
        let b = ReplayRequest::parse(RawReplay {
            instance_id: Some(&format!(" {INSTANCE} ")),
            from_seq: Some(1),
            to_seq: Some(9),
            reason: "caída ",
            ..RawReplay::default()
        })
        .unwrap();
        assert_eq!(a.canonical("s1"), b.canonical("s1"));
        assert_ne!(a.canonical("s1"), a.canonical("s2"));
        assert_ne!(a.canonical("s1"), range(1, 10).unwrap().canonical("s1"));
    }
}
