//! The global settings (allowed destinations, timeouts, retention, ...).
//! Per-app allowed destinations live on the app itself.

use motor_domain::settings::{parse_patch, Settings};
use motor_store::{settings as store, Pool};
use serde_json::Value;

use crate::Result;

/// The settings in force, defaults included.
pub async fn get(pool: &Pool) -> Result<Settings> {
    Ok(store::load(pool).await?)
}

/// Checks every key of `patch` (a JSON object of dotted keys) first, then
/// stores them all in one transaction.
pub async fn update(pool: &Pool, patch: &Value) -> Result<Settings> {
    let changes = parse_patch(patch)?;
    let mut tx = pool.begin().await?;
    store::save(&mut tx, &changes).await?;
    let settings = store::load(&mut *tx).await?;
    tx.commit().await?;
    Ok(settings)
}
