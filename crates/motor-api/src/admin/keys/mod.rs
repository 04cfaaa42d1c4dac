//! `/v1/admin/apps/{id}/keys`: an app's API keys; the token is shown once,
//! at creation, and only its hash is stored.

mod dto;
mod handlers;

use motor_domain::{
    operator::{parse_name, parse_scopes, CreatedKey},
    AppId, FieldError, InstanceId,
};
use motor_store::{operator as store, Pool, StoreError};
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{error::ApiError, AppState};

/// Most instances one key may be restricted to.
pub const MAX_KEY_INSTANCES: usize = 200;

pub async fn create_key(pool: &Pool, app: AppId, input: CreateKey) -> Result<CreatedKey, ApiError> {
    let nombre = parse_name(&input.nombre, "body.nombre")?;
    let scopes = parse_scopes(&input.scopes, "body.scopes")?;
    if input.instancias.len() > MAX_KEY_INSTANCES {
        return Err(FieldError::invalid(
            "body.instancias",
            format!("at most {MAX_KEY_INSTANCES} instances"),
        )
        .into());
    }
    let mut instancias: Vec<InstanceId> = Vec::with_capacity(input.instancias.len());
    for (i, raw) in input.instancias.iter().enumerate() {
        let id = raw.parse().map_err(|_| {
            FieldError::invalid(format!("body.instancias[{i}]"), "must be an instance id")
        })?;
        if !instancias.contains(&id) {
            instancias.push(id);
        }
    }
    store::get_app(pool, app).await?;
    match store::create_key(pool, app, &nombre, &scopes, &instancias).await {
        Err(StoreError::NotFound(_)) => Err(FieldError::invalid(
            "body.instancias",
            "every instance must belong to this app",
        )
        .into()),
        other => Ok(other?),
    }
}

pub async fn list_keys(pool: &Pool, app: AppId) -> Result<KeyList, ApiError> {
    store::get_app(pool, app).await?;
    Ok(KeyList {
        keys: store::list_keys(pool, app)
            .await?
            .into_iter()
            .map(Into::into)
            .collect(),
    })
}

pub async fn revoke_key(pool: &Pool, app: AppId, key_id: &str) -> Result<(), ApiError> {
    Ok(store::revoke_key(pool, app, key_id).await?)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_keys, handlers::create_key))
        .routes(routes!(handlers::revoke_key))
}
