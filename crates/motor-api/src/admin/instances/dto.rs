//! The wire shapes of this resource: request bodies, answers and the
//! OpenAPI schemas of the domain types it answers with.

use motor_domain::operator::Instance;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInstance {
    #[schema(
        max_length = 120,
        pattern = "^[^\\u0000]*[^\\u0000\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000]*$"
    )]
    pub nombre: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InstanceList {
    pub instances: Vec<InstanceOut>,
}

/// An instance: one ledger with its own gapless `seq`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Instance)]
pub struct InstanceOut {
    #[schema(format = Uuid)]
    pub id: String,
    #[schema(format = Uuid)]
    pub app_id: String,
    pub nombre: String,
    pub generation: i64,
}

impl From<Instance> for InstanceOut {
    fn from(i: Instance) -> Self {
        Self {
            id: i.id.to_string(),
            app_id: i.app_id.to_string(),
            nombre: i.name,
            generation: i.generation,
        }
    }
}
