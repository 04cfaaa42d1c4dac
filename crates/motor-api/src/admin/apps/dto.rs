//! The wire shapes of this resource: request bodies, answers and the
//! OpenAPI schemas of the domain types it answers with.

use motor_domain::{operator::App, time};
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
    /// The contract its subscriptions take when they name none: `motor`
    /// (default), `visito`, `asixto` or `standard-webhooks`.
    #[serde(default)]
    #[schema(value_type = Option<crate::subscriptions::ContractOut>)]
    pub contrato: Option<String>,
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
    /// The default for subscriptions created after the change; existing
    /// subscriptions keep their own.
    #[schema(value_type = Option<crate::subscriptions::ContractOut>)]
    pub contrato: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AppList {
    pub apps: Vec<AppOut>,
}

impl From<CreateApp> for motor_app::apps::NewApp {
    fn from(b: CreateApp) -> Self {
        Self {
            name: b.nombre,
            allowed_destinations: b.destinos_permitidos,
            destination_policy: b.politica_destinos,
            contract: b.contrato,
        }
    }
}

impl From<UpdateApp> for motor_app::apps::AppChange {
    fn from(b: UpdateApp) -> Self {
        Self {
            name: b.nombre,
            allowed_destinations: b.destinos_permitidos,
            destination_policy: b.politica_destinos,
            contract: b.contrato,
        }
    }
}

// ---- The domain's app on the wire -----------------------------------------
//
// Built from the domain type (which knows no JSON); the OpenAPI test
// compares each with what the API really answers.

/// An app (tenant).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = App)]
pub struct AppOut {
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
    /// The contract its new subscriptions take; absent = `motor` (the
    /// default, left out so `motor` answers read as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contrato: Option<crate::subscriptions::ContractOut>,
    #[schema(format = DateTime)]
    pub creada_en: String,
}

impl From<App> for AppOut {
    fn from(a: App) -> Self {
        Self {
            id: a.id.to_string(),
            nombre: a.name,
            destinos_permitidos: a.allowed_destinations,
            politica_destinos: a.destination_policy.as_str().to_owned(),
            contrato: crate::subscriptions::ContractOut::unless_motor(a.contract),
            creada_en: time::format(&a.created_at),
        }
    }
}
