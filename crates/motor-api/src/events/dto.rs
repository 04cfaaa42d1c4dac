//! The wire shapes of the events resource: what a producer sends and what
//! the ledger answers. The handlers pass the stored envelope bytes through
//! unchanged, so these structs document the shapes (the snapshot and drift
//! tests compare them with real answers) rather than serialise them.

use serde::Serialize;
use serde_json::Value;
use utoipa::{
    openapi::{schema::SchemaType, ArrayBuilder, ObjectBuilder, Ref, RefOr, Type},
    ToSchema,
};

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = Origin)]
pub enum OriginOut {
    Live,
    History,
    Operator,
}

/// The envelope: the same bytes for webhooks, brokers, streams, Kafka and
/// the ledger API. An event whose content passed retention keeps its place
/// and seq with `data` = `{"motivo": "retencion", "redactado": true}`.
#[derive(Serialize, ToSchema)]
#[schema(as = Envelope)]
pub struct EnvelopeOut {
    /// Always 1.
    #[schema(minimum = 1, maximum = 1)]
    pub schema_version: u32,
    #[schema(format = Uuid)]
    pub event_id: String,
    #[schema(format = Uuid)]
    pub instance_id: String,
    /// 1, 2, 3, … per instance, gapless; 0 only in a `webhook.test`,
    /// which is not in the ledger.
    #[schema(minimum = 0)]
    pub seq: i64,
    #[serde(rename = "type")]
    pub event_type: String,
    #[schema(format = DateTime)]
    pub occurred_at: String,
    #[schema(format = DateTime)]
    pub received_at: String,
    pub generation: i64,
    pub origin: OriginOut,
    /// Present only when the event has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_id: Option<String>,
    /// Any JSON value.
    pub data: Value,
}

/// One event as a producer sends it (no other field: an unknown one is a
/// 422).
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NewEvent)]
pub struct EventInput {
    /// 1–200 characters, no control characters, no surrounding white space.
    #[serde(rename = "type")]
    #[schema(
        pattern = "^[^\\s\\x00-\\x1f\\x7f-\\x9f](?:[^\\x00-\\x1f\\x7f-\\x9f]{0,198}[^\\s\\x00-\\x1f\\x7f-\\x9f])?$"
    )]
    pub event_type: String,
    /// Any JSON value (not null). The envelope around it must fit in
    /// 256 KiB (the body cap): when it would not and `data` is an object
    /// with a `metadata` key, that key is dropped and
    /// `"metadata_omitted": true` added; if it still would not, 413 naming
    /// `data`.
    #[schema(value_type = NotNull)]
    pub data: Value,
    /// RFC 3339 (the pattern is a safe subset: days up to 28).
    #[schema(
        format = DateTime,
        pattern = "^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
    )]
    pub occurred_at: Option<String>,
    /// Default `live`.
    pub origin: Option<OriginOut>,
    /// 1–200 characters, no NUL.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]*$")]
    pub command_id: Option<String>,
    /// The provider's id of the event: a repeat per instance is not stored
    /// again. 1–200 characters, no NUL.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]*$")]
    pub source_id: Option<String>,
    /// `live` (the default) or `test`: the event reaches only the
    /// subscriptions of that environment. Kept in the ledger; the envelope
    /// does not carry it (an Asixto delivery does, as `environment`).
    pub entorno: Option<crate::subscriptions::EnvironmentOut>,
    /// The ordering key (a conversation, an order…): a subscription with
    /// `orden: clave` sends this instance's events one at a time per key,
    /// keys in parallel; an event without one goes in the instance's lane.
    /// Kept in the ledger (not in the envelope). 1–200 characters, no NUL.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]*$")]
    pub orden_clave: Option<String>,
}

/// One event, or an array of 1–500.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum EventsInput {
    One(EventInput),
    Many(EventBatch),
}

/// A batch: 1–500 events, stored in one transaction (an empty array is a
/// 422, a longer one a 413).
#[derive(Serialize)]
pub struct EventBatch(Vec<EventInput>);

impl utoipa::PartialSchema for EventBatch {
    fn schema() -> RefOr<utoipa::openapi::Schema> {
        ArrayBuilder::new()
            .items(Ref::from_schema_name("NewEvent"))
            .min_items(Some(1))
            .max_items(Some(motor_domain::event::MAX_BATCH))
            .into()
    }
}

impl ToSchema for EventBatch {}

/// The stored envelope, or an array of them in request order.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum EventsOutput {
    One(Box<EnvelopeOut>),
    Many(Vec<EnvelopeOut>),
}

/// A page of the ledger.
#[derive(Serialize, ToSchema)]
pub struct LedgerPage {
    pub events: Vec<EnvelopeOut>,
    pub next_after_seq: i64,
    pub has_more: bool,
}

/// Any JSON value but `null`.
pub struct NotNull;

impl utoipa::PartialSchema for NotNull {
    fn schema() -> RefOr<utoipa::openapi::Schema> {
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([
                Type::Object,
                Type::Array,
                Type::String,
                Type::Number,
                Type::Boolean,
            ]))
            .into()
    }
}

impl ToSchema for NotNull {}
