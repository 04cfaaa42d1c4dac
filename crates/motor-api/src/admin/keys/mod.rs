//! `/v1/admin/apps/{id}/keys`: an app's API keys; the token is shown once,
//! at creation, and only its hash is stored.

mod dto;
mod handlers;

use motor_app::keys;
use motor_domain::{operator::CreatedKey, AppId};
use motor_store::Pool;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{error::ApiError, AppState};

pub use motor_app::keys::MAX_KEY_INSTANCES;

pub async fn create_key(pool: &Pool, app: AppId, input: CreateKey) -> Result<CreatedKey, ApiError> {
    let input = keys::NewKey {
        name: input.nombre,
        scopes: input.scopes,
        instances: input.instancias,
        expires_at: input.vence_en,
        read_scopes: input.permisos_lectura,
    };
    keys::create(pool, app, input)
        .await
        .map_err(ApiError::in_body)
}

pub async fn list_keys(pool: &Pool, app: AppId) -> Result<KeyList, ApiError> {
    Ok(KeyList {
        keys: keys::list(pool, app)
            .await?
            .into_iter()
            .map(Into::into)
            .collect(),
    })
}

pub async fn revoke_key(pool: &Pool, app: AppId, key_id: &str) -> Result<(), ApiError> {
    Ok(keys::revoke(pool, app, key_id).await?)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_keys, handlers::create_key))
        .routes(routes!(handlers::revoke_key))
}
