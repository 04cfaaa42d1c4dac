//! Apps, instances and API keys: what `motor admin` and the operator API
//! manage, and the key lookup behind every authenticated request.

use motor_domain::{
    apikey::IssuedKey,
    contract::Contract,
    destination::DestinationPolicy,
    operator::{ApiKeyInfo, App, CreatedKey, Instance},
    principal::Principal,
    time::Timestamp,
    AppId, InstanceId, Scope,
};
use sqlx::PgExecutor;
use uuid::Uuid;

use crate::{Result, StoreError};

pub async fn create_app(
    db: impl PgExecutor<'_>,
    nombre: &str,
    destinos: &[String],
    politica: DestinationPolicy,
    contrato: Contract,
) -> Result<App> {
    // The app and its system instance (the ledger of the events Motor
    // publishes to the app's subscriptions), in one statement.
    let row = sqlx::query_as!(
        AppRow,
        r#"WITH app AS (
               INSERT INTO apps (id, nombre, destinos_permitidos, politica_destinos, contrato)
               VALUES ($1, $2, $3, $4, $6)
               RETURNING id, nombre, destinos_permitidos, politica_destinos, contrato, creado_en
           ), system AS (
               INSERT INTO instances (id, app_id, nombre, sistema)
               SELECT $5, id, 'sistema', true FROM app
           )
           SELECT id AS "id!", nombre AS "name!", destinos_permitidos AS "allowed_destinations!",
                  politica_destinos AS "destination_policy!", contrato AS "contract!",
                  creado_en AS "created_at!"
           FROM app"#,
        Uuid::from(AppId::new()),
        nombre,
        destinos,
        politica.as_str(),
        Uuid::from(InstanceId::new()),
        contrato.as_str(),
    )
    .fetch_one(db)
    .await?;
    Ok(app(row))
}

pub async fn list_apps(db: impl PgExecutor<'_>) -> Result<Vec<App>> {
    let rows = sqlx::query_as!(
        AppRow,
        "SELECT id, nombre AS name, destinos_permitidos AS allowed_destinations,
                politica_destinos AS destination_policy, contrato AS contract,
                creado_en AS created_at
         FROM apps ORDER BY creado_en, id"
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(app).collect())
}

pub async fn get_app(db: impl PgExecutor<'_>, id: AppId) -> Result<App> {
    sqlx::query_as!(
        AppRow,
        "SELECT id, nombre AS name, destinos_permitidos AS allowed_destinations,
                politica_destinos AS destination_policy, contrato AS contract,
                creado_en AS created_at
         FROM apps WHERE id = $1",
        Uuid::from(id),
    )
    .fetch_optional(db)
    .await?
    .map(app)
    .ok_or(StoreError::NotFound("app"))
}

/// Changes the given fields; `None` leaves a field as it is.
pub async fn update_app(
    db: impl PgExecutor<'_>,
    id: AppId,
    nombre: Option<&str>,
    destinos: Option<&[String]>,
    politica: Option<DestinationPolicy>,
    contrato: Option<Contract>,
) -> Result<App> {
    sqlx::query_as!(
        AppRow,
        "UPDATE apps SET nombre = COALESCE($2, nombre),
                         destinos_permitidos = COALESCE($3, destinos_permitidos),
                         politica_destinos = COALESCE($4, politica_destinos),
                         contrato = COALESCE($5, contrato)
         WHERE id = $1
         RETURNING id, nombre AS name, destinos_permitidos AS allowed_destinations,
                   politica_destinos AS destination_policy, contrato AS contract,
                   creado_en AS created_at",
        Uuid::from(id),
        nombre,
        destinos,
        politica.map(DestinationPolicy::as_str),
        contrato.map(Contract::as_str),
    )
    .fetch_optional(db)
    .await?
    .map(app)
    .ok_or(StoreError::NotFound("app"))
}

/// An `apps` row.
struct AppRow {
    id: Uuid,
    name: String,
    allowed_destinations: Vec<String>,
    destination_policy: String,
    contract: String,
    created_at: Timestamp,
}

fn app(row: AppRow) -> App {
    App {
        id: AppId::from_uuid(row.id),
        name: row.name,
        allowed_destinations: row.allowed_destinations,
        // The column's CHECK admits only the policies' own text.
        destination_policy: DestinationPolicy::parse(&row.destination_policy).unwrap_or_default(),
        // Likewise the contracts' wire names.
        contract: Contract::parse(&row.contract).unwrap_or_default(),
        created_at: row.created_at,
    }
}

pub async fn create_instance(
    db: impl PgExecutor<'_>,
    app: AppId,
    nombre: &str,
) -> Result<Instance> {
    let id = InstanceId::new();
    let generation = sqlx::query_scalar!(
        "INSERT INTO instances (id, app_id, nombre)
         SELECT $1, id, $3 FROM apps WHERE id = $2
         RETURNING generation",
        Uuid::from(id),
        Uuid::from(app),
        nombre,
    )
    .fetch_optional(db)
    .await?
    .ok_or(StoreError::NotFound("app"))?;
    Ok(Instance {
        id,
        app_id: app,
        name: nombre.to_owned(),
        generation,
    })
}

pub async fn list_instances(db: impl PgExecutor<'_>, app: AppId) -> Result<Vec<Instance>> {
    let rows = sqlx::query!(
        "SELECT id, app_id, nombre, generation FROM instances WHERE app_id = $1 AND NOT sistema
         ORDER BY creado_en, id",
        Uuid::from(app),
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| Instance {
            id: InstanceId::from_uuid(row.id),
            app_id: AppId::from_uuid(row.app_id),
            name: row.nombre,
            generation: row.generation,
        })
        .collect())
}

/// The app an instance belongs to and whether it is the app's system
/// instance (written by Motor only), if the instance exists.
pub async fn instance_owner(
    db: impl PgExecutor<'_>,
    instance: InstanceId,
) -> Result<Option<(AppId, bool)>> {
    let row = sqlx::query!(
        "SELECT app_id, sistema FROM instances WHERE id = $1",
        Uuid::from(instance)
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| (AppId::from_uuid(r.app_id), r.sistema)))
}

/// The app's system instance: the ledger of the events Motor publishes to
/// the app's subscriptions.
pub async fn system_instance(db: impl PgExecutor<'_>, app: AppId) -> Result<InstanceId> {
    let id: Uuid = sqlx::query_scalar!(
        "SELECT id FROM instances WHERE app_id = $1 AND sistema",
        Uuid::from(app)
    )
    .fetch_optional(db)
    .await?
    .ok_or(StoreError::NotFound("system instance"))?;
    Ok(InstanceId::from_uuid(id))
}

/// The app an instance belongs to, if the instance exists.
pub async fn instance_app(db: impl PgExecutor<'_>, instance: InstanceId) -> Result<Option<AppId>> {
    let app: Option<Uuid> = sqlx::query_scalar!(
        "SELECT app_id FROM instances WHERE id = $1",
        Uuid::from(instance)
    )
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
    expires_at: Option<Timestamp>,
    read_scopes: &[String],
) -> Result<CreatedKey> {
    let issued = IssuedKey::generate();
    let scope_names: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
    let instance_ids: Vec<Uuid> = instancias.iter().map(|i| Uuid::from(*i)).collect();
    let row = sqlx::query_scalar!(
        "WITH app AS (SELECT id FROM apps WHERE id = $2),
              owned AS (SELECT count(*) AS n FROM instances WHERE app_id = $2 AND id = ANY($6))
         INSERT INTO api_keys (key_id, app_id, nombre, token_hash, scopes, instancias, vence_en,
                               permisos_lectura)
         SELECT $1, app.id, $3, $4, $5, $6, $7, $8 FROM app, owned
         WHERE owned.n = cardinality($6::uuid[])
         RETURNING key_id",
        &issued.key_id,
        Uuid::from(app),
        nombre,
        issued.token_hash(),
        &scope_names as &[&str],
        &instance_ids,
        expires_at,
        read_scopes,
    )
    .fetch_optional(db)
    .await?;
    if row.is_none() {
        return Err(StoreError::NotFound("app or instance"));
    }
    Ok(CreatedKey {
        key_id: issued.key_id,
        token: issued.token,
        scopes: scopes.to_vec(),
        instances: instancias.to_vec(),
        expires_at,
        read_scopes: read_scopes.to_vec(),
    })
}

pub async fn list_keys(db: impl PgExecutor<'_>, app: AppId) -> Result<Vec<ApiKeyInfo>> {
    let rows = sqlx::query!(
        "SELECT key_id, nombre, scopes, instancias, creado_en, revocado_en, vence_en,
                permisos_lectura
         FROM api_keys WHERE app_id = $1 ORDER BY creado_en, key_id",
        Uuid::from(app),
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| ApiKeyInfo {
            key_id: row.key_id,
            name: row.nombre,
            scopes: parse_scopes(row.scopes),
            instances: instances_of(row.instancias),
            created_at: row.creado_en,
            revoked_at: row.revocado_en,
            expires_at: row.vence_en,
            read_scopes: row.permisos_lectura,
        })
        .collect())
}

/// Revokes a key of the app; revoking twice is not an error. Under a
/// contract that cancels on deactivation, the subscriptions bound to it
/// are suspended (`clave_revocada`) and their pending deliveries
/// cancelled, in the same transaction
/// ([`crate::subscriptions::suspend_for_lapsed_keys`]).
pub async fn revoke_key(pool: &crate::Pool, app: AppId, key_id: &str) -> Result<()> {
    let mut tx = pool.begin().await?;
    let found = sqlx::query!(
        "UPDATE api_keys SET revocado_en = COALESCE(revocado_en, now())
         WHERE app_id = $1 AND key_id = $2",
        Uuid::from(app),
        key_id,
    )
    .execute(&mut *tx)
    .await?;
    if found.rows_affected() == 0 {
        return Err(StoreError::NotFound("key"));
    }
    crate::subscriptions::suspend_for_lapsed_keys(
        &mut tx,
        crate::subscriptions::Lapsed::Key(key_id),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A live key found by its token: who it acts as, and until when it
/// works (`vence_en`; `None`: until revoked).
#[derive(Debug, Clone)]
pub struct FoundKey {
    pub principal: Principal,
    pub expires_at: Option<Timestamp>,
}

/// The live (not revoked, not past its `vence_en`) key whose token hashes
/// to `token_hash`.
pub async fn authenticate(db: impl PgExecutor<'_>, token_hash: &[u8]) -> Result<Option<FoundKey>> {
    let row = sqlx::query!(
        "SELECT key_id, app_id, scopes, instancias, permisos_lectura, vence_en FROM api_keys
         WHERE token_hash = $1 AND revocado_en IS NULL
           AND (vence_en IS NULL OR vence_en > now())",
        token_hash,
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|row| FoundKey {
        principal: Principal {
            key_id: row.key_id,
            app_id: AppId::from_uuid(row.app_id),
            scopes: parse_scopes(row.scopes),
            instances: instances_of(row.instancias),
            read_scopes: row.permisos_lectura,
        },
        expires_at: row.vence_en,
    }))
}

/// Whether the app's key `key_id` is live (not revoked, not past its
/// `vence_en`): a stream token issued by it opens a stream only while it
/// is. One probe of the primary key.
pub async fn key_is_live(db: impl PgExecutor<'_>, app: AppId, key_id: &str) -> Result<bool> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (
               SELECT 1 FROM api_keys
               WHERE key_id = $1 AND app_id = $2 AND revocado_en IS NULL
                 AND (vence_en IS NULL OR vence_en > now())) AS "live!""#,
        key_id,
        Uuid::from(app),
    )
    .fetch_one(db)
    .await?)
}

fn parse_scopes(raw: Vec<String>) -> Vec<Scope> {
    // Only known scopes are ever written; an unknown one grants nothing.
    raw.iter().filter_map(|s| s.parse().ok()).collect()
}

fn instances_of(raw: Vec<Uuid>) -> Vec<InstanceId> {
    raw.into_iter().map(InstanceId::from_uuid).collect()
}
