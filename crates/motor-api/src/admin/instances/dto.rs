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
    #[schema(value_type = Vec<InstanceSchema>)]
    pub instances: Vec<Instance>,
}

/// An instance: one ledger with its own gapless `seq`.
#[derive(Serialize, ToSchema)]
#[schema(as = Instance)]
pub struct InstanceSchema {
    #[schema(format = Uuid)]
    pub id: String,
    #[schema(format = Uuid)]
    pub app_id: String,
    pub nombre: String,
    pub generation: i64,
}
