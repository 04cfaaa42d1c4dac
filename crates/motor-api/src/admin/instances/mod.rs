//! `/v1/admin/apps/{id}/instances`: an app's instances, each one ledger
//! with its own gapless `seq`.

mod dto;
mod handlers;

use motor_app::instances;
use motor_domain::{operator::Instance, AppId};
use motor_store::Pool;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{error::ApiError, AppState};

pub async fn create_instance(
    pool: &Pool,
    app: AppId,
    input: CreateInstance,
) -> Result<Instance, ApiError> {
    instances::create(pool, app, &input.nombre)
        .await
        .map_err(ApiError::in_body)
}

pub async fn list_instances(pool: &Pool, app: AppId) -> Result<InstanceList, ApiError> {
    Ok(InstanceList {
        instances: instances::list(pool, app)
            .await?
            .into_iter()
            .map(Into::into)
            .collect(),
    })
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(handlers::list_instances, handlers::create_instance))
}
