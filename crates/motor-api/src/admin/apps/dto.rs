//! The wire shapes of this resource: request bodies, answers and the
//! OpenAPI schemas of the domain types it answers with.

use motor_domain::operator::App;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateApp {
    #[schema(
        max_length = 120,
        pattern = "^[^\\u0000]*[^\\u0000\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000]*$"
    )]
    pub nombre: String,
    #[serde(default)]
    #[schema(value_type = Vec<crate::openapi::DestinationEntry>)]
    pub destinos_permitidos: Vec<String>,
    /// `estandar` (default) or `publica_https`: HTTPS on port 443 to
    /// public IPv4 addresses only, checked at create and at connect.
    #[serde(default)]
    #[schema(pattern = "^(estandar|publica_https)$")]
    pub politica_destinos: Option<String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateApp {
    #[schema(
        max_length = 120,
        pattern = "^[^\\u0000]*[^\\u0000\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000]*$"
    )]
    pub nombre: Option<String>,
    #[schema(value_type = Option<Vec<crate::openapi::DestinationEntry>>)]
    pub destinos_permitidos: Option<Vec<String>>,
    /// `estandar` or `publica_https`. Existing subscriptions are held to
    /// it at their next connection (suspended with `destino_bloqueado`
    /// when their destination no longer passes).
    #[schema(pattern = "^(estandar|publica_https)$")]
    pub politica_destinos: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AppList {
    #[schema(value_type = Vec<AppSchema>)]
    pub apps: Vec<App>,
}

// ---- Schemas of types the domain crate shows -----------------------------
//
// These mirror domain types that carry no OpenAPI derive. The OpenAPI test
// compares each with what the API really answers, so they cannot drift.

/// An app (tenant).
#[derive(Serialize, ToSchema)]
#[schema(as = App)]
pub struct AppSchema {
    #[schema(format = Uuid)]
    pub id: String,
    pub nombre: String,
    /// Hosts (any port) or host:port this app may deliver to, on top of
    /// the global list.
    pub destinos_permitidos: Vec<String>,
    /// `estandar` or `publica_https` (HTTPS on port 443 to public IPv4
    /// addresses only).
    #[schema(example = "estandar")]
    pub politica_destinos: String,
    #[schema(format = DateTime)]
    pub creada_en: String,
}
