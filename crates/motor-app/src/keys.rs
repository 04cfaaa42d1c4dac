//! An app's API keys; the token exists only in the answer to its
//! creation, the store keeps its hash.

use motor_domain::{
    operator::{parse_name, parse_scopes, ApiKeyInfo, CreatedKey},
    read_scope,
    time::{self, Timestamp},
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
    /// `vence_en`: an RFC 3339 time in the future after which the key
    /// stops working (401, like a revoked key); `None` = never.
    pub expires_at: Option<String>,
    /// `permisos_lectura`: the app's read scopes the key holds
    /// (`conversations:read`), checked against the catalogue's when it
    /// creates or changes a subscription.
    pub read_scopes: Vec<String>,
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
    let expires_at = input.expires_at.as_deref().map(parse_expiry).transpose()?;
    let read_scopes = read_scope::parse_list(&input.read_scopes)?;
    store::get_app(pool, app).await?;
    match store::create_key(
        pool,
        app,
        &name,
        &scopes,
        &instances,
        expires_at,
        &read_scopes,
    )
    .await
    {
        Err(StoreError::NotFound(_)) => {
            Err(FieldError::invalid("instancias", "every instance must belong to this app").into())
        }
        other => Ok(other?),
    }
}

/// A key's `vence_en`: RFC 3339, in the future.
fn parse_expiry(raw: &str) -> Result<Timestamp, FieldError> {
    let at = time::parse(raw).ok_or_else(|| {
        FieldError::invalid(
            "vence_en",
            "must be an RFC 3339 time, e.g. 2030-01-31T00:00:00Z",
        )
    })?;
    if at <= chrono::Utc::now() {
        return Err(FieldError::invalid("vence_en", "must be in the future"));
    }
    // Postgres keeps microseconds: the creation's answer shows what a
    // listing will.
    Ok(chrono::SubsecRound::trunc_subsecs(at, 6))
}

/// The app's keys (never their tokens); 404 for an unknown app.
pub async fn list(pool: &Pool, app: AppId) -> Result<Vec<ApiKeyInfo>> {
    store::get_app(pool, app).await?;
    Ok(store::list_keys(pool, app).await?)
}

pub async fn revoke(pool: &Pool, app: AppId, key_id: &str) -> Result<()> {
    Ok(store::revoke_key(pool, app, key_id).await?)
}

/// The live (not revoked, not expired) key whose token hashes to `token_hash`: who a
/// request with that bearer token acts as, and until when.
pub async fn authenticate(pool: &Pool, token_hash: &[u8]) -> Result<Option<store::FoundKey>> {
    Ok(store::authenticate(pool, token_hash).await?)
}

/// Whether the app's key `key_id` is live (not revoked, not expired): a
/// stream token it issued opens a stream only while it is.
pub async fn is_live(pool: &Pool, app: AppId, key_id: &str) -> Result<bool> {
    Ok(store::key_is_live(pool, app, key_id).await?)
}
