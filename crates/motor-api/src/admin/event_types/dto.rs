//! The wire shape of an app's event catalogue (request and answer alike).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// An app's catalogue of event types: `null` = any type is accepted.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EventCatalogue {
    /// Required: `null` opens the catalogue, a list closes it.
    #[serde(deserialize_with = "present")]
    #[schema(required = true, value_type = Option<Vec<crate::openapi::EventTypeName>>)]
    pub tipos: Option<Vec<String>>,
}

/// `tipos` must be sent, `null` included (serde would read a missing
/// `Option` as `null`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Option::deserialize(d)
}
