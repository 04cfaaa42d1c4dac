//! An app's API keys; the token exists only in the answer to its
//! creation, the store keeps its hash.

use motor_domain::{
    operator::{parse_name, parse_scopes, ApiKeyInfo, CreatedKey},
    principal::Principal,
    AppId, FieldError, InstanceId,
};
use motor_store::{operator as store, Pool, StoreError};

use crate::Result;

/// Most instances one key may be restricted to.
pub const MAX_KEY_INSTANCES: usize = 200;

/// A new key as a caller sends it.
#[derive(Debug, Clone, Default)]
pub struct NewKey {
    pub name: String,
    /// `events:write`, `events:read`, `subscriptions:manage`,
    /// `deliveries:replay`, `commands:write`, `commands:read`,
    /// `commands:execute`.
    pub scopes: Vec<String>,
    /// Instance ids the key is restricted to; empty = every instance.
    pub instances: Vec<String>,
}

pub async fn create(pool: &Pool, app: AppId, input: NewKey) -> Result<CreatedKey> {
    let name = parse_name(&input.name, "nombre")?;
    let scopes = parse_scopes(&input.scopes, "scopes")?;
    if input.instances.len() > MAX_KEY_INSTANCES {
        return Err(FieldError::invalid(
            "instancias",
            format!("at most {MAX_KEY_INSTANCES} instances"),
        )
        .into());
    }
    let mut instances: Vec<InstanceId> = Vec::with_capacity(input.instances.len());
    for (i, raw) in input.instances.iter().enumerate() {
        let id = raw.parse().map_err(|_| {
            FieldError::invalid(format!("instancias[{i}]"), "must be an instance id")
        })?;
        if !instances.contains(&id) {
            instances.push(id);
        }
    }
    store::get_app(pool, app).await?;
    match store::create_key(pool, app, &name, &scopes, &instances).await {
        Err(StoreError::NotFound(_)) => {
            Err(FieldError::invalid("instancias", "every instance must belong to this app").into())
        }
        other => Ok(other?),
    }
}

/// The app's keys (never their tokens); 404 for an unknown app.
pub async fn list(pool: &Pool, app: AppId) -> Result<Vec<ApiKeyInfo>> {
    store::get_app(pool, app).await?;
    Ok(store::list_keys(pool, app).await?)
}

pub async fn revoke(pool: &Pool, app: AppId, key_id: &str) -> Result<()> {
    Ok(store::revoke_key(pool, app, key_id).await?)
}

/// The live (not revoked) key whose token hashes to `token_hash`: who a
/// request with that bearer token acts as.
pub async fn authenticate(pool: &Pool, token_hash: &[u8]) -> Result<Option<Principal>> {
    Ok(store::authenticate(pool, token_hash).await?)
}
