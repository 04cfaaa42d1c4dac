//! The envelope: the one JSON document that describes an event everywhere —
//! webhook body, broker message, Kafka record and ledger API. It is
//! serialised once, when the event enters the ledger, and those bytes are
//! what every consumer gets.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    ids::{EventId, InstanceId},
    time::{serde_ts, Timestamp},
};

pub const SCHEMA_VERSION: u32 = 1;

/// Where a fact comes from. An envelope field; the producer sets it on
/// [`crate::event::NewEvent`], which re-exports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    #[default]
    Live,
    History,
    Operator,
}

impl Origin {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "live" => Some(Origin::Live),
            "history" => Some(Origin::History),
            "operator" => Some(Origin::Operator),
            _ => None,
        }
    }
}

/// Field order here is the order on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub schema_version: u32,
    pub event_id: EventId,
    pub instance_id: InstanceId,
    pub seq: i64,
    #[serde(rename = "type")]
    pub event_type: String,
    #[serde(with = "serde_ts")]
    pub occurred_at: Timestamp,
    #[serde(with = "serde_ts")]
    pub received_at: Timestamp,
    pub generation: i64,
    pub origin: Origin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_id: Option<String>,
    pub data: Value,
}

impl Envelope {
    /// The canonical bytes: compact JSON, fields in contract order.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an envelope always serialises")
    }

    /// The envelope once its content passed `retencion.dias_contenido`:
    /// every field as it was, `data` = [`redacted_data`].
    pub fn redacted(mut self) -> Self {
        self.data = redacted_data();
        self
    }
}

/// What `data` reads once an event's content passed retention.
pub fn redacted_data() -> Value {
    serde_json::json!({"motivo": "retencion", "redactado": true})
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::time;

    #[test]
    fn matches_the_contract_example() {
        let envelope = Envelope {
            schema_version: SCHEMA_VERSION,
            event_id: "e1f0c2d4-0000-4000-8000-000000001201".parse().unwrap(),
            instance_id: "8a1d2c3e-0000-4000-8000-0000000000a1".parse().unwrap(),
            seq: 1201,
            event_type: "message.sent".into(),
            occurred_at: time::parse("2026-10-24T15:10:01Z").unwrap(),
            received_at: time::parse("2026-10-24T15:10:01Z").unwrap(),
            generation: 1,
            origin: Origin::Operator,
            command_id: Some("5c2e7a10-0000-4000-8000-0000000000c1".into()),
            data: json!({"z": 1, "a": 2}),
        };
        assert_eq!(
            envelope.to_json(),
            r#"{"schema_version":1,"event_id":"e1f0c2d4-0000-4000-8000-000000001201","instance_id":"8a1d2c3e-0000-4000-8000-0000000000a1","seq":1201,"type":"message.sent","occurred_at":"2026-10-24T15:10:01Z","received_at":"2026-10-24T15:10:01Z","generation":1,"origin":"operator","command_id":"5c2e7a10-0000-4000-8000-0000000000c1","data":{"z":1,"a":2}}"#
        );
        let back: Envelope = serde_json::from_str(&envelope.to_json()).unwrap();
        assert_eq!(back, envelope);
    }

    #[test]
    fn redaction_keeps_every_field_but_data() {
        let stored = r#"{"schema_version":1,"event_id":"e1f0c2d4-0000-4000-8000-000000001201","instance_id":"8a1d2c3e-0000-4000-8000-0000000000a1","seq":1201,"type":"message.sent","occurred_at":"2026-10-24T15:10:01.123Z","received_at":"2026-10-24T15:10:01.456789Z","generation":1,"origin":"live","data":{"texto":"hola"}}"#;
        let envelope: Envelope = serde_json::from_str(stored).unwrap();
        assert_eq!(
            envelope.redacted().to_json(),
            stored.replace(
                r#"{"texto":"hola"}"#,
                r#"{"motivo":"retencion","redactado":true}"#
            )
        );
    }

    #[test]
    fn command_id_is_omitted_when_absent() {
        let envelope = Envelope {
            schema_version: SCHEMA_VERSION,
            event_id: EventId::new(),
            instance_id: InstanceId::new(),
            seq: 1,
            event_type: "t".into(),
            occurred_at: time::now_millis(),
            received_at: time::now_millis(),
            generation: 1,
            origin: Origin::Live,
            command_id: None,
            data: json!(null),
        };
        assert!(!envelope.to_json().contains("command_id"));
    }
}
