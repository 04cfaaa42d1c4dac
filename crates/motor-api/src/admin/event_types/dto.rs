//! The wire shape of an app's event catalogue (request and answer alike).

use std::collections::BTreeMap;

use motor_app::event_types::Catalogue;
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
    /// The read scope an API key needs (in its `permisos_lectura`) to
    /// subscribe to each type, for the types that have one:
    /// `{"message.created": "conversations:read"}`. Each names a type of
    /// `tipos`; absent (or empty): no type needs one. Left out of answers
    /// when empty. Under `contrato: visito`, a `PUT` that asks a read scope
    /// the API key a subscription is bound to lacks, for a type it
    /// selects, suspends it (`clave_sin_permiso`) and cancels its pending
    /// deliveries.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub permisos_lectura: BTreeMap<String, String>,
}

impl From<Catalogue> for EventCatalogue {
    fn from(c: Catalogue) -> Self {
        Self {
            tipos: c.types,
            permisos_lectura: c.read_scopes,
        }
    }
}

/// `tipos` must be sent, `null` included (serde would read a missing
/// `Option` as `null`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Option::deserialize(d)
}
