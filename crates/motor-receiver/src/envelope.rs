//! The envelope Motor sends as the body of every webhook. Parse it only
//! after the signature verified, from the same raw bytes.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// One event, as Motor's contract names its fields. Unknown fields are
/// ignored, so a receiver keeps working when Motor adds one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub schema_version: u32,
    /// Deduplicate by this: a retry, a replay and a second subscription all
    /// carry the same `event_id`.
    pub event_id: Uuid,
    pub instance_id: Uuid,
    /// Gapless per instance: 1, 2, 3, …
    pub seq: i64,
    #[serde(rename = "type")]
    pub event_type: String,
    /// RFC 3339, UTC.
    pub occurred_at: String,
    /// RFC 3339, UTC.
    pub received_at: String,
    pub generation: i64,
    /// `live`, `history` or `operator`.
    pub origin: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_id: Option<String>,
    /// The event's content; `{"motivo": "retencion", "redactado": true}`
    /// once its retention passed.
    pub data: Value,
}

impl Envelope {
    /// Parses the raw body of a verified request.
    pub fn from_slice(body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(body)
    }
}
