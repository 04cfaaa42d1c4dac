//! Operator settings, apps' closed catalogues of event types, and the
//! master-key canary checked at start-up.

use motor_domain::{
    seal::SealingKey,
    settings::{Change, Settings},
    AppId,
};
use serde_json::Value;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::Result;

/// The settings in force (defaults for keys never set).
pub async fn load(db: impl PgExecutor<'_>) -> Result<Settings> {
    let rows = sqlx::query!("SELECT key, value FROM settings")
        .fetch_all(db)
        .await?;
    let pairs: Vec<(String, Value)> = rows.into_iter().map(|r| (r.key, r.value)).collect();
    Ok(Settings::from_rows(
        pairs.iter().map(|(k, v)| (k.as_str(), v)),
    ))
}

/// Stores validated changes; the caller commits them together.
pub async fn save(conn: &mut PgConnection, changes: &[Change]) -> Result<()> {
    for change in changes {
        sqlx::query!(
            "INSERT INTO settings (key, value) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, actualizado_en = now()",
            change.key(),
            change.value(),
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The app's closed catalogue of event types; `None` = any type.
pub async fn event_catalogue(db: impl PgExecutor<'_>, app: AppId) -> Result<Option<Vec<String>>> {
    Ok(sqlx::query_scalar!(
        "SELECT tipos FROM app_event_types WHERE app_id = $1",
        Uuid::from(app)
    )
    .fetch_optional(db)
    .await?)
}

/// The read scope the app's catalogue maps each type to (`permisos_lectura`,
/// `crate::read_scope`); empty when none or no catalogue.
pub async fn read_scope_map(
    db: impl PgExecutor<'_>,
    app: AppId,
) -> Result<std::collections::BTreeMap<String, String>> {
    let map: Option<serde_json::Value> = sqlx::query_scalar!(
        "SELECT permisos_lectura FROM app_event_types WHERE app_id = $1",
        Uuid::from(app)
    )
    .fetch_optional(db)
    .await?
    .flatten();
    // Only `set_event_catalogue` writes it, from such a map.
    Ok(map
        .and_then(|m| serde_json::from_value(m).ok())
        .unwrap_or_default())
}

/// [`read_scope_map`] for a subscription's creation or change, in its
/// transaction: the catalogue's row is held `FOR SHARE` until it ends, so a
/// catalogue `PUT` (which re-checks the subscriptions bound to keys,
/// `subscriptions::suspend_for_under_scoped_keys`) waits for it and then
/// sees it, or this reads the new map.
pub async fn read_scope_map_for_change(
    conn: &mut PgConnection,
    app: AppId,
) -> Result<std::collections::BTreeMap<String, String>> {
    let map: Option<serde_json::Value> = sqlx::query_scalar!(
        "SELECT permisos_lectura FROM app_event_types WHERE app_id = $1 FOR SHARE",
        Uuid::from(app)
    )
    .fetch_optional(conn)
    .await?
    .flatten();
    Ok(map
        .and_then(|m| serde_json::from_value(m).ok())
        .unwrap_or_default())
}

/// Sets (or, with `None`, removes) the app's catalogue, with the read
/// scope of each type (empty: none).
pub async fn set_event_catalogue(
    db: impl PgExecutor<'_>,
    app: AppId,
    tipos: Option<&[String]>,
    read_scopes: &std::collections::BTreeMap<String, String>,
) -> Result<()> {
    match tipos {
        Some(tipos) => {
            let map = (!read_scopes.is_empty()).then_some(sqlx::types::Json(read_scopes));
            sqlx::query!(
                "INSERT INTO app_event_types (app_id, tipos, permisos_lectura) VALUES ($1, $2, $3)
                 ON CONFLICT (app_id) DO UPDATE
                 SET tipos = EXCLUDED.tipos, permisos_lectura = EXCLUDED.permisos_lectura,
                     actualizado_en = now()",
                Uuid::from(app),
                tipos,
                map as _,
            )
            .execute(db)
            .await?;
        }
        None => {
            sqlx::query!(
                "DELETE FROM app_event_types WHERE app_id = $1",
                Uuid::from(app)
            )
            .execute(db)
            .await?;
        }
    }
    Ok(())
}

/// What start-up learnt about the master key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MasterKeyCheck {
    /// The canary opened: this is the key that sealed the secrets.
    Matches,
    /// A fresh database: the canary was sealed with this key just now.
    Initialised,
    /// The canary does not open: another key sealed this database.
    Mismatch,
}

/// Opens the canary with `key`, sealing one first when there is none (the
/// first process to start wins; the others check against its canary).
pub async fn check_master_key(
    db: impl PgExecutor<'_> + Copy,
    key: &SealingKey,
) -> Result<MasterKeyCheck> {
    let inserted = sqlx::query!(
        "INSERT INTO master_key_canary (id, sealed) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
        key.seal_canary(),
    )
    .execute(db)
    .await?;
    if inserted.rows_affected() == 1 {
        return Ok(MasterKeyCheck::Initialised);
    }
    let sealed: Vec<u8> = sqlx::query_scalar!("SELECT sealed FROM master_key_canary WHERE id = 1")
        .fetch_one(db)
        .await?;
    Ok(if key.opens_canary(&sealed) {
        MasterKeyCheck::Matches
    } else {
        MasterKeyCheck::Mismatch
    })
}
