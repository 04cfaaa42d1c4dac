//! Events as producers send them, parsed into values that cannot be wrong.
//!
//! Input arrives as JSON: one event object or an array of up to
//! [`MAX_BATCH`]. Every rule names the field it concerns (`[3].type` in a
//! batch, `type` for a lone event; the API shows them as `body[3].type`),
//! so a producer knows exactly what to fix; nothing is written unless the
//! whole request is valid.

pub mod cap;

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

pub use crate::envelope::Origin;
use crate::{
    contract::{render::ENVIRONMENT_FIELD, Environment},
    delivery::OrderKey,
    error::{field_path, FieldError, WHOLE_INPUT},
    time,
    time::Timestamp,
};

/// Largest batch accepted in one request.
pub const MAX_BATCH: usize = 500;
/// Largest `type`, in characters.
pub const MAX_TYPE_CHARS: usize = 200;
/// Largest `data`, in bytes of compact JSON, before the body cap
/// ([`cap`]): the envelope around it must also fit in 256 KiB, so the
/// real bound is a few hundred bytes lower.
pub const MAX_DATA_BYTES: usize = cap::MAX_ENVELOPE_BYTES;
/// Largest `source_id` and `command_id`, in characters.
pub const MAX_ID_CHARS: usize = 200;

/// An event type such as `message.sent`: 1–200 characters, no control
/// characters, no surrounding white space.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct EventType(String);

impl EventType {
    pub fn parse(s: &str) -> Result<Self, String> {
        let chars = s.chars().count();
        if chars == 0 {
            return Err("must not be empty".into());
        }
        if chars > MAX_TYPE_CHARS {
            return Err(format!("must be at most {MAX_TYPE_CHARS} characters"));
        }
        if s.trim() != s || s.chars().any(char::is_control) {
            return Err("must not have surrounding white space or control characters".into());
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A validated event, not yet in the ledger (no seq, no event id).
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub event_type: EventType,
    pub data: Value,
    pub occurred_at: Option<Timestamp>,
    pub origin: Origin,
    pub command_id: Option<String>,
    pub source_id: Option<String>,
    /// `entorno`: `live` (the default) or `test`. Kept in the ledger beside
    /// the envelope (whose bytes do not carry it); the event reaches only
    /// subscriptions of the same environment.
    pub environment: Environment,
    /// `orden_clave`: the key a `clave`-ordered subscription's lanes are
    /// split by (kept in the ledger, not in the envelope).
    pub order_key: Option<OrderKey>,
}

/// The field an event names its ordering key in.
pub const ORDER_KEY_FIELD: &str = "orden_clave";

/// A producer request: one event or a batch. The shape of the answer follows
/// the shape of the request.
#[derive(Debug, Clone, PartialEq)]
pub enum EventBatch {
    One(NewEvent),
    Many(Vec<NewEvent>),
}

impl EventBatch {
    /// Parses a request body already read as JSON.
    pub fn parse(body: &Value) -> Result<Self, FieldError> {
        match body {
            Value::Array(items) => {
                if items.is_empty() {
                    return Err(FieldError::invalid(
                        WHOLE_INPUT,
                        "a batch needs at least one event",
                    ));
                }
                if items.len() > MAX_BATCH {
                    return Err(FieldError::too_large(
                        WHOLE_INPUT,
                        format!(
                            "a batch holds at most {MAX_BATCH} events, got {}",
                            items.len()
                        ),
                    ));
                }
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| NewEvent::parse(item, &format!("[{i}]")))
                    .collect::<Result<Vec<_>, _>>()
                    .map(EventBatch::Many)
            }
            other => NewEvent::parse(other, WHOLE_INPUT).map(EventBatch::One),
        }
    }

    pub fn events(&self) -> &[NewEvent] {
        match self {
            EventBatch::One(event) => std::slice::from_ref(event),
            EventBatch::Many(events) => events,
        }
    }

    /// The events, owned.
    pub fn into_events(self) -> Vec<NewEvent> {
        match self {
            EventBatch::One(event) => vec![event],
            EventBatch::Many(events) => events,
        }
    }

    pub fn is_batch(&self) -> bool {
        matches!(self, EventBatch::Many(_))
    }
}

const FIELDS: [&str; 8] = [
    "type",
    "data",
    "occurred_at",
    "origin",
    "command_id",
    "source_id",
    ENVIRONMENT_FIELD,
    ORDER_KEY_FIELD,
];

impl NewEvent {
    /// Parses one event object; `path` is where it sits in the input (`[3]`
    /// in a batch, [`WHOLE_INPUT`] alone), the parent of the fields its
    /// errors name.
    pub fn parse(value: &Value, path: &str) -> Result<Self, FieldError> {
        let Value::Object(obj) = value else {
            return Err(FieldError::invalid(path, "must be an event object"));
        };
        if let Some(unknown) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(FieldError::invalid(
                field_path(path, unknown),
                "unknown field; an event has type, data, occurred_at, origin, command_id, source_id, \
                 entorno, orden_clave",
            ));
        }
        let field = |name: &str| field_path(path, name);

        let event_type = match obj.get("type") {
            None | Some(Value::Null) => {
                return Err(FieldError::invalid(field("type"), "is required"))
            }
            Some(Value::String(s)) => {
                EventType::parse(s).map_err(|m| FieldError::invalid(field("type"), m))?
            }
            Some(_) => return Err(FieldError::invalid(field("type"), "must be a string")),
        };

        let data = match obj.get("data") {
            None | Some(Value::Null) => {
                return Err(FieldError::invalid(field("data"), "is required"))
            }
            Some(data) => data.clone(),
        };
        let occurred_at = optional_str(obj, "occurred_at", path)?
            .map(|s| {
                time::parse(s).ok_or_else(|| {
                    FieldError::invalid(field("occurred_at"), "must be an RFC 3339 timestamp")
                })
            })
            .transpose()?;

        let origin = optional_str(obj, "origin", path)?
            .map(|s| {
                Origin::parse(s).ok_or_else(|| {
                    FieldError::invalid(field("origin"), "must be live, history or operator")
                })
            })
            .transpose()?
            .unwrap_or_default();

        let command_id = optional_id(obj, "command_id", path)?;
        let source_id = optional_id(obj, "source_id", path)?;
        let environment = optional_str(obj, ENVIRONMENT_FIELD, path)?
            .map(|s| Environment::parse_field(s, &field(ENVIRONMENT_FIELD)))
            .transpose()?
            .unwrap_or_default();
        let order_key = optional_str(obj, ORDER_KEY_FIELD, path)?
            .map(|s| OrderKey::parse(s, &field(ORDER_KEY_FIELD)))
            .transpose()?;

        let overhead = cap::envelope_overhead(event_type.as_str(), origin, command_id.as_deref());
        let data = match cap::cap(data, overhead) {
            cap::Capped::Fits(data) | cap::Capped::MetadataOmitted(data) => data,
            cap::Capped::TooLarge { size, room } => {
                return Err(FieldError::too_large(
                    field("data"),
                    format!(
                        "the envelope must fit in {} bytes: data can be at most {room} bytes \
                         of JSON here (without its metadata), got {size}",
                        cap::MAX_ENVELOPE_BYTES
                    ),
                ))
            }
        };

        Ok(NewEvent {
            event_type,
            data,
            occurred_at,
            origin,
            command_id,
            source_id,
            environment,
            order_key,
        })
    }
}

fn optional_str<'a>(
    obj: &'a Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<Option<&'a str>, FieldError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(FieldError::invalid(
            field_path(path, name),
            "must be a string",
        )),
    }
}

fn optional_id(
    obj: &Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<Option<String>, FieldError> {
    let Some(s) = optional_str(obj, name, path)? else {
        return Ok(None);
    };
    crate::operator::refuse_nul(s, &field_path(path, name))?;
    let chars = s.chars().count();
    if chars == 0 || chars > MAX_ID_CHARS {
        return Err(FieldError::invalid(
            field_path(path, name),
            format!("must be 1 to {MAX_ID_CHARS} characters"),
        ));
    }
    Ok(Some(s.to_owned()))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::error::FieldErrorKind;

    fn err(body: Value) -> FieldError {
        EventBatch::parse(&body).unwrap_err()
    }

    #[test]
    fn one_event_with_defaults() {
        let batch = EventBatch::parse(&json!({"type": "message.sent", "data": {"a": 1}})).unwrap();
        let EventBatch::One(event) = batch else {
            panic!("expected one event")
        };
        assert_eq!(event.event_type.as_str(), "message.sent");
        assert_eq!(event.origin, Origin::Live);
        assert_eq!(event.data, json!({"a": 1}));
        assert!(event.occurred_at.is_none() && event.source_id.is_none());
    }

    #[test]
    fn every_field_parses() {
        let event = NewEvent::parse(
            &json!({"type": "t", "data": [], "occurred_at": "2026-10-24T15:10:01Z",
                    "origin": "history", "command_id": "c-1", "source_id": "wamid.1"}),
            WHOLE_INPUT,
        )
        .unwrap();
        assert_eq!(event.origin, Origin::History);
        assert_eq!(event.command_id.as_deref(), Some("c-1"));
        assert_eq!(event.source_id.as_deref(), Some("wamid.1"));
        assert_eq!(
            time::format(&event.occurred_at.unwrap()),
            "2026-10-24T15:10:01Z"
        );
    }

    #[test]
    fn type_boundaries() {
        let ok = "t".repeat(MAX_TYPE_CHARS);
        assert!(EventBatch::parse(&json!({"type": ok, "data": 1})).is_ok());
        let long = "t".repeat(MAX_TYPE_CHARS + 1);
        assert_eq!(err(json!({"type": long, "data": 1})).field, "type");
        assert_eq!(err(json!({"type": "", "data": 1})).field, "type");
        assert_eq!(err(json!({"type": 5, "data": 1})).field, "type");
        assert_eq!(err(json!({"data": 1})).field, "type");
    }

    #[test]
    fn data_is_required_and_bounded() {
        assert_eq!(err(json!({"type": "t"})).field, "data");
        assert_eq!(err(json!({"type": "t", "data": null})).field, "data");
        // A JSON string's compact form is its length plus two quotes; the
        // envelope around it must fit in 256 KiB too.
        let room = MAX_DATA_BYTES - cap::envelope_overhead("t", Origin::Live, None);
        let fits = "x".repeat(room - 2);
        assert!(EventBatch::parse(&json!({"type": "t", "data": fits})).is_ok());
        let over = "x".repeat(room - 1);
        let e = err(json!({"type": "t", "data": over}));
        assert_eq!(
            (e.field.as_str(), e.kind),
            ("data", FieldErrorKind::TooLarge)
        );
    }

    #[test]
    fn batch_errors_name_the_element() {
        let e = err(json!([{"type": "a", "data": 1}, {"type": "b", "data": 1, "origin": "x"}]));
        assert_eq!(e.field, "[1].origin");
        let e = err(json!([{"type": "a", "data": 1}, 7]));
        assert_eq!(e.field, "[1]");
        let e = err(json!([{"type": "a", "data": 1, "extra": true}]));
        assert_eq!(e.field, "[0].extra");
        assert_eq!(err(json!([])).field, WHOLE_INPUT);
        assert_eq!(
            err(json!({"type": "a", "data": 1, "occurred_at": "ayer"})).field,
            "occurred_at"
        );
        assert_eq!(
            err(json!({"type": "a", "data": 1, "source_id": ""})).field,
            "source_id"
        );
    }

    #[test]
    fn batch_size_boundary() {
        let item = json!({"type": "t", "data": 1});
        let full = Value::Array(vec![item.clone(); MAX_BATCH]);
        assert_eq!(EventBatch::parse(&full).unwrap().events().len(), MAX_BATCH);
        let over = Value::Array(vec![item; MAX_BATCH + 1]);
        let e = err(over);
        assert_eq!(
            (e.field.as_str(), e.kind),
            (WHOLE_INPUT, FieldErrorKind::TooLarge)
        );
    }

    #[test]
    fn an_order_key_is_optional_and_checked_by_name() {
        let event = NewEvent::parse(
            &json!({"type": "t", "data": 1, "orden_clave": "conv-1"}),
            WHOLE_INPUT,
        )
        .unwrap();
        assert_eq!(event.order_key.unwrap().as_str(), "conv-1");
        let event =
            NewEvent::parse(&json!({"type": "t", "data": 1, "orden_clave": null}), "").unwrap();
        assert_eq!(event.order_key, None);
        let long = "k".repeat(crate::delivery::MAX_ORDER_KEY_CHARS + 1);
        for bad in [json!(""), json!(long), json!(7), json!("a\0b")] {
            let e = err(json!([{"type": "t", "data": 1},
                               {"type": "t", "data": 1, "orden_clave": bad}]));
            assert_eq!(e.field, "[1].orden_clave");
        }
    }

    proptest! {
        #[test]
        fn type_parse_accepts_exactly_the_rule(s in "\\PC{0,210}") {
            let n = s.chars().count();
            let expected = (1..=MAX_TYPE_CHARS).contains(&n) && s.trim() == s;
            prop_assert_eq!(EventType::parse(&s).is_ok(), expected);
        }
    }
}
