//! The wire shapes of this resource: request bodies, answers and the
//! OpenAPI schemas of the domain types it answers with.

use motor_domain::{
    operator::{ApiKeyInfo, CreatedKey},
    time, Scope,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKey {
    #[schema(
        max_length = 120,
        pattern = "^[^\\u0000]*[^\\u0000\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000]*$"
    )]
    pub nombre: String,
    #[schema(min_items = 1, value_type = Vec<ScopeOut>)]
    pub scopes: Vec<String>,
    /// Instances of the app the key is restricted to (none: all of
    /// them); each must be the app's (422 otherwise).
    #[serde(default)]
    #[schema(value_type = Vec<uuid::Uuid>, max_items = 200)]
    pub instancias: Vec<String>,
    /// When the key stops working (RFC 3339, in the future; absent:
    /// never). Past it the key is refused with 401 like a revoked one, and
    /// the subscriptions bound to it under a contract that cancels on
    /// deactivation (`visito`) are suspended (`clave_vencida`) with their
    /// pending deliveries `cancelada`.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub vence_en: Option<String>,
    /// The app's own read scopes the key holds (`conversations:read`,
    /// 1-100 of a-z 0-9 _ . - in parts joined by `:`): a subscription it
    /// creates or changes needs the read scope the app's catalogue maps
    /// to each type it selects (403 naming the type).
    #[serde(default)]
    #[schema(max_items = 100)]
    pub permisos_lectura: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyList {
    pub keys: Vec<ApiKeyInfoOut>,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Scope)]
pub enum ScopeOut {
    #[serde(rename = "events:write")]
    EventsWrite,
    #[serde(rename = "events:read")]
    EventsRead,
    #[serde(rename = "subscriptions:manage")]
    SubscriptionsManage,
    #[serde(rename = "deliveries:replay")]
    DeliveriesReplay,
    #[serde(rename = "commands:write")]
    CommandsWrite,
    #[serde(rename = "commands:read")]
    CommandsRead,
    #[serde(rename = "commands:execute")]
    CommandsExecute,
}

/// An API key as listed: never its token.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ApiKeyInfo)]
pub struct ApiKeyInfoOut {
    pub key_id: String,
    pub nombre: String,
    pub scopes: Vec<ScopeOut>,
    /// Empty: every instance of the app.
    #[schema(format = Uuid)]
    pub instancias: Vec<String>,
    #[schema(format = DateTime)]
    pub creada_en: String,
    #[schema(format = DateTime)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revocada_en: Option<String>,
    /// When it stops working; absent: never.
    #[schema(format = DateTime)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vence_en: Option<String>,
    /// The app's read scopes it holds; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub permisos_lectura: Vec<String>,
}

/// A new API key: the only time its token is shown.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = CreatedKey)]
pub struct CreatedKeyOut {
    pub key_id: String,
    pub token: String,
    pub scopes: Vec<ScopeOut>,
    #[schema(format = Uuid)]
    pub instancias: Vec<String>,
    /// When it stops working; absent: never.
    #[schema(format = DateTime)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vence_en: Option<String>,
    /// The app's read scopes it holds; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub permisos_lectura: Vec<String>,
}

impl From<Scope> for ScopeOut {
    fn from(s: Scope) -> Self {
        match s {
            Scope::EventsWrite => Self::EventsWrite,
            Scope::EventsRead => Self::EventsRead,
            Scope::SubscriptionsManage => Self::SubscriptionsManage,
            Scope::DeliveriesReplay => Self::DeliveriesReplay,
            Scope::CommandsWrite => Self::CommandsWrite,
            Scope::CommandsRead => Self::CommandsRead,
            Scope::CommandsExecute => Self::CommandsExecute,
        }
    }
}

impl From<ApiKeyInfo> for ApiKeyInfoOut {
    fn from(k: ApiKeyInfo) -> Self {
        Self {
            key_id: k.key_id,
            nombre: k.name,
            scopes: k.scopes.into_iter().map(Into::into).collect(),
            instancias: k.instances.iter().map(ToString::to_string).collect(),
            creada_en: time::format(&k.created_at),
            revocada_en: k.revoked_at.as_ref().map(time::format),
            vence_en: k.expires_at.as_ref().map(time::format),
            permisos_lectura: k.read_scopes,
        }
    }
}

impl From<CreatedKey> for CreatedKeyOut {
    fn from(k: CreatedKey) -> Self {
        Self {
            key_id: k.key_id,
            token: k.token,
            scopes: k.scopes.into_iter().map(Into::into).collect(),
            instancias: k.instances.iter().map(ToString::to_string).collect(),
            vence_en: k.expires_at.as_ref().map(time::format),
            permisos_lectura: k.read_scopes,
        }
    }
}
