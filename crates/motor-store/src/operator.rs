//! Apps, instances and API keys: what `motor admin` and the operator API
//! manage, and the key lookup behind every authenticated request.

use motor_domain::{
    apikey::IssuedKey,
    destination::DestinationPolicy,
    operator::{ApiKeyInfo, App, CreatedKey, Instance},
    principal::Principal,
    time::Timestamp,
    AppId, InstanceId, Scope,
};
use sqlx::{PgExecutor, Row};
use uuid::Uuid;

use crate::{Result, StoreError};

pub async fn create_app(
    db: impl PgExecutor<'_>,
    nombre: &str,
    destinos: &[String],
    politica: DestinationPolicy,
) -> Result<App> {
    // The app and its system instance (the ledger of the events Motor
    // publishes to the app's subscriptions), in one statement.
    let row = sqlx::query(&format!(
        "WITH app AS (
             INSERT INTO apps (id, nombre, destinos_permitidos, politica_destinos)
             VALUES ($1, $2, $3, $4)
             RETURNING {APP_COLUMNS}
         ), system AS (
             INSERT INTO instances (id, app_id, nombre, sistema)
             SELECT $5, id, 'sistema', true FROM app
         )
         SELECT * FROM app"
    ))
    .bind(Uuid::from(AppId::new()))
    .bind(nombre)
    .bind(destinos)
    .bind(politica.as_str())
    .bind(Uuid::from(InstanceId::new()))
    .fetch_one(db)
    .await?;
    Ok(app_from_row(&row))
}

pub async fn list_apps(db: impl PgExecutor<'_>) -> Result<Vec<App>> {
    let rows = sqlx::query(&format!(
        "SELECT {APP_COLUMNS} FROM apps ORDER BY creado_en, id"
    ))
    .fetch_all(db)
    .await?;
    Ok(rows.iter().map(app_from_row).collect())
}

pub async fn get_app(db: impl PgExecutor<'_>, id: AppId) -> Result<App> {
    sqlx::query(&format!("SELECT {APP_COLUMNS} FROM apps WHERE id = $1"))
        .bind(Uuid::from(id))
        .fetch_optional(db)
        .await?
        .map(|row| app_from_row(&row))
        .ok_or(StoreError::NotFound("app"))
}

/// Changes the given fields; `None` leaves a field as it is.
pub async fn update_app(
    db: impl PgExecutor<'_>,
    id: AppId,
    nombre: Option<&str>,
    destinos: Option<&[String]>,
    politica: Option<DestinationPolicy>,
) -> Result<App> {
    sqlx::query(&format!(
        "UPDATE apps SET nombre = COALESCE($2, nombre),
                         destinos_permitidos = COALESCE($3, destinos_permitidos),
                         politica_destinos = COALESCE($4, politica_destinos)
         WHERE id = $1
         RETURNING {APP_COLUMNS}"
    ))
    .bind(Uuid::from(id))
    .bind(nombre)
    .bind(destinos)
    .bind(politica.map(DestinationPolicy::as_str))
    .fetch_optional(db)
    .await?
    .map(|row| app_from_row(&row))
    .ok_or(StoreError::NotFound("app"))
}

const APP_COLUMNS: &str = "id, nombre, destinos_permitidos, politica_destinos, creado_en";

fn app_from_row(row: &sqlx::postgres::PgRow) -> App {
    App {
        id: AppId::from_uuid(row.get("id")),
        nombre: row.get("nombre"),
        destinos_permitidos: row.get("destinos_permitidos"),
        // The column's CHECK admits only the policies' own text.
        politica_destinos: DestinationPolicy::parse(row.get("politica_destinos"))
            .unwrap_or_default(),
        creada_en: row.get("creado_en"),
    }
}

pub async fn create_instance(
    db: impl PgExecutor<'_>,
    app: AppId,
    nombre: &str,
) -> Result<Instance> {
    let id = InstanceId::new();
    let inserted = sqlx::query(
        "INSERT INTO instances (id, app_id, nombre)
         SELECT $1, id, $3 FROM apps WHERE id = $2
         RETURNING generation",
    )
    .bind(Uuid::from(id))
    .bind(Uuid::from(app))
    .bind(nombre)
    .fetch_optional(db)
    .await?
    .ok_or(StoreError::NotFound("app"))?;
    Ok(Instance {
        id,
        app_id: app,
        nombre: nombre.to_owned(),
        generation: inserted.get("generation"),
    })
}

pub async fn list_instances(db: impl PgExecutor<'_>, app: AppId) -> Result<Vec<Instance>> {
    let rows = sqlx::query(
        "SELECT id, app_id, nombre, generation FROM instances WHERE app_id = $1 AND NOT sistema
         ORDER BY creado_en, id",
    )
    .bind(Uuid::from(app))
    .fetch_all(db)
    .await?;
    Ok(rows
        .iter()
        .map(|row| Instance {
            id: InstanceId::from_uuid(row.get("id")),
            app_id: AppId::from_uuid(row.get("app_id")),
            nombre: row.get("nombre"),
            generation: row.get("generation"),
        })
        .collect())
}

/// The app an instance belongs to and whether it is the app's system
/// instance (written by Motor only), if the instance exists.
pub async fn instance_owner(
    db: impl PgExecutor<'_>,
    instance: InstanceId,
) -> Result<Option<(AppId, bool)>> {
    let row = sqlx::query("SELECT app_id, sistema FROM instances WHERE id = $1")
        .bind(Uuid::from(instance))
        .fetch_optional(db)
        .await?;
    Ok(row.map(|r| (AppId::from_uuid(r.get("app_id")), r.get("sistema"))))
}

/// The app's system instance: the ledger of the events Motor publishes to
/// the app's subscriptions.
pub async fn system_instance(db: impl PgExecutor<'_>, app: AppId) -> Result<InstanceId> {
    let id: Uuid = sqlx::query_scalar("SELECT id FROM instances WHERE app_id = $1 AND sistema")
        .bind(Uuid::from(app))
        .fetch_optional(db)
        .await?
        .ok_or(StoreError::NotFound("system instance"))?;
    Ok(InstanceId::from_uuid(id))
}

/// The app an instance belongs to, if the instance exists.
pub async fn instance_app(db: impl PgExecutor<'_>, instance: InstanceId) -> Result<Option<AppId>> {
    let app: Option<Uuid> = sqlx::query_scalar("SELECT app_id FROM instances WHERE id = $1")
        .bind(Uuid::from(instance))
        .fetch_optional(db)
        .await?;
    Ok(app.map(AppId::from_uuid))
}

/// Issues a key. Instances named must belong to the app (checked in the
/// same statement), otherwise `NotFound("instance")`.
pub async fn create_key(
    db: impl PgExecutor<'_>,
    app: AppId,
    nombre: &str,
    scopes: &[Scope],
    instancias: &[InstanceId],
) -> Result<CreatedKey> {
    let issued = IssuedKey::generate();
    let scope_names: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
    let instance_ids: Vec<Uuid> = instancias.iter().map(|i| Uuid::from(*i)).collect();
    let row = sqlx::query(
        "WITH app AS (SELECT id FROM apps WHERE id = $2),
              owned AS (SELECT count(*) AS n FROM instances WHERE app_id = $2 AND id = ANY($6))
         INSERT INTO api_keys (key_id, app_id, nombre, token_hash, scopes, instancias)
         SELECT $1, app.id, $3, $4, $5, $6 FROM app, owned
         WHERE owned.n = cardinality($6::uuid[])
         RETURNING key_id",
    )
    .bind(&issued.key_id)
    .bind(Uuid::from(app))
    .bind(nombre)
    .bind(issued.token_hash())
    .bind(&scope_names)
    .bind(&instance_ids)
    .fetch_optional(db)
    .await?;
    if row.is_none() {
        return Err(StoreError::NotFound("app or instance"));
    }
    Ok(CreatedKey {
        key_id: issued.key_id,
        token: issued.token,
        scopes: scopes.to_vec(),
        instancias: instancias.to_vec(),
    })
}

pub async fn list_keys(db: impl PgExecutor<'_>, app: AppId) -> Result<Vec<ApiKeyInfo>> {
    let rows = sqlx::query(
        "SELECT key_id, nombre, scopes, instancias, creado_en, revocado_en
         FROM api_keys WHERE app_id = $1 ORDER BY creado_en, key_id",
    )
    .bind(Uuid::from(app))
    .fetch_all(db)
    .await?;
    Ok(rows
        .iter()
        .map(|row| ApiKeyInfo {
            key_id: row.get("key_id"),
            nombre: row.get("nombre"),
            scopes: parse_scopes(row.get("scopes")),
            instancias: instances_of(row.get("instancias")),
            creada_en: row.get("creado_en"),
            revocada_en: row.get::<Option<Timestamp>, _>("revocado_en"),
        })
        .collect())
}

/// Revokes a key of the app; revoking twice is not an error.
pub async fn revoke_key(db: impl PgExecutor<'_>, app: AppId, key_id: &str) -> Result<()> {
    let found = sqlx::query(
        "UPDATE api_keys SET revocado_en = COALESCE(revocado_en, now())
         WHERE app_id = $1 AND key_id = $2",
    )
    .bind(Uuid::from(app))
    .bind(key_id)
    .execute(db)
    .await?;
    if found.rows_affected() == 0 {
        return Err(StoreError::NotFound("key"));
    }
    Ok(())
}

/// The live (not revoked) key whose token hashes to `token_hash`.
pub async fn authenticate(db: impl PgExecutor<'_>, token_hash: &[u8]) -> Result<Option<Principal>> {
    let row = sqlx::query(
        "SELECT key_id, app_id, scopes, instancias FROM api_keys
         WHERE token_hash = $1 AND revocado_en IS NULL",
    )
    .bind(token_hash)
    .fetch_optional(db)
    .await?;
    Ok(row.map(|row| Principal {
        key_id: row.get("key_id"),
        app_id: AppId::from_uuid(row.get("app_id")),
        scopes: parse_scopes(row.get("scopes")),
        instancias: instances_of(row.get("instancias")),
    }))
}

fn parse_scopes(raw: Vec<String>) -> Vec<Scope> {
    // Only known scopes are ever written; an unknown one grants nothing.
    raw.iter().filter_map(|s| s.parse().ok()).collect()
}

fn instances_of(raw: Vec<Uuid>) -> Vec<InstanceId> {
    raw.into_iter().map(InstanceId::from_uuid).collect()
}
