//! The wire shapes of this resource: request bodies, answers and the
//! OpenAPI schemas of the domain types it answers with.

use motor_domain::operator::Instance;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInstance {
    #[schema(max_length = 120, pattern = "\\S")]
    pub nombre: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InstanceList {
    pub instances: Vec<InstanceSchema>,
}

/// An instance: one ledger with its own gapless `seq`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Instance)]
pub struct InstanceSchema {
    #[schema(format = Uuid)]
    pub id: String,
    #[schema(format = Uuid)]
    pub app_id: String,
    pub nombre: String,
    pub generation: i64,
}

impl From<Instance> for InstanceSchema {
    fn from(i: Instance) -> Self {
        Self {
            id: i.id.to_string(),
            app_id: i.app_id.to_string(),
            nombre: i.name,
            generation: i.generation,
        }
    }
}
