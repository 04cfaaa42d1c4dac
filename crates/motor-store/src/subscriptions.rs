//! Subscriptions and their sealed signing keys. Changes go through
//! [`lock`] then [`save`] in one transaction, so `version` is checked and
//! bumped under the row lock. Secrets arrive and leave sealed: this module
//! never sees a secret in clear.

use motor_domain::{
    contract::{Contract, Environment, Ordering},
    secret::SigningKeyId,
    subscription::{
        NewSubscription, Subscription, SubscriptionId, SubscriptionKey, SubscriptionState,
        SuspensionReason,
    },
    time::Timestamp,
    AppId, InstanceId,
};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::{alerts, deliveries, Result, StoreError};

/// A `subscriptions` row as [`get`] and [`list`] select it (secrets
/// left out: only whether it has broker credentials).
struct SubscriptionRow {
    id: Uuid,
    app_id: Uuid,
    name: String,
    url: String,
    instances: Vec<Uuid>,
    types: Vec<String>,
    ordered: bool,
    by_key: bool,
    signing_profile: String,
    contract: String,
    environment: String,
    state: String,
    reason: Option<String>,
    suspended_at: Option<Timestamp>,
    version: i64,
    created_at: Timestamp,
    updated_at: Timestamp,
    has_credentials: bool,
    max_per_second: Option<i32>,
}

pub use motor_domain::keyring::SealedKey;

mod bound_keys;
mod keys;
pub use bound_keys::{bind_key, suspend_for_lapsed_keys, suspend_for_under_scoped_keys, Lapsed};
pub use keys::{forget_keys, live_keys, rotate, signing, Signing};
use keys::{insert_key, signing_profile};

/// Inserts a subscription, its first key and its sealed broker
/// credentials, if any. A subscription that names no contract takes its
/// app's, read in the same statement.
pub async fn insert(
    conn: &mut PgConnection,
    id: SubscriptionId,
    app: AppId,
    new: &NewSubscription,
    key_id: &SigningKeyId,
    sealed: &[u8],
    sealed_credentials: Option<&[u8]>,
) -> Result<Subscription> {
    let instancias: Vec<Uuid> = new.instances.iter().map(|i| Uuid::from(*i)).collect();
    let tipos: Vec<&str> = new.event_types.iter().map(|t| t.as_str()).collect();
    sqlx::query!(
        "INSERT INTO subscriptions (id, app_id, nombre, url, instancias, tipos, ordenado, firma,
                                    credenciales, max_por_segundo, contrato, entorno,
                                    orden_por_clave)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, COALESCE($11, a.contrato), $12, $13
         FROM apps a WHERE a.id = $2",
        id.as_uuid(),
        Uuid::from(app),
        &new.name,
        new.url.as_str(),
        &instancias,
        &tipos as &[&str],
        new.ordering.is_ordered(),
        new.signature.as_str(),
        sealed_credentials,
        new.max_per_second.map(|n| n as i32),
        new.contract.map(Contract::as_str),
        new.environment.as_str(),
        new.ordering == Ordering::Key,
    )
    .execute(&mut *conn)
    .await?;
    insert_key(&mut *conn, id, key_id, sealed).await?;
    get(&mut *conn, app, id).await
}

/// The contract an app's new subscriptions take when they name none.
pub async fn app_contract(db: impl PgExecutor<'_>, app: AppId) -> Result<Contract> {
    let contrato = sqlx::query_scalar!("SELECT contrato FROM apps WHERE id = $1", Uuid::from(app))
        .fetch_optional(db)
        .await?
        .ok_or(StoreError::NotFound("app"))?;
    // The table's CHECK admits only the four names.
    Ok(Contract::parse(&contrato).unwrap_or_default())
}

/// One subscription of the app (any state, `eliminada` included).
pub async fn get(conn: &mut PgConnection, app: AppId, id: SubscriptionId) -> Result<Subscription> {
    // The same columns as `list`.
    let row = sqlx::query_as!(
        SubscriptionRow,
        r#"SELECT id, app_id, nombre AS name, url, instancias AS instances, tipos AS types,
                ordenado AS ordered, orden_por_clave AS by_key, firma AS signing_profile,
                contrato AS contract, entorno AS environment, estado AS state,
                motivo AS reason, suspendido_en AS suspended_at, version,
                creado_en AS created_at, actualizado_en AS updated_at,
                credenciales IS NOT NULL AS "has_credentials!",
                max_por_segundo AS max_per_second
           FROM subscriptions WHERE id = $1 AND app_id = $2"#,
        id.as_uuid(),
        Uuid::from(app),
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(StoreError::NotFound("subscription"))?;
    let mut sub = subscription(row);
    sub.keys = keys_of(&mut *conn, &[id]).await?.remove(0);
    (sub.pending, sub.failed) = deliveries::read::counts(&mut *conn, &[id]).await?[0];
    Ok(sub)
}

/// Locks a subscription of the app for a change in this transaction.
pub async fn lock(conn: &mut PgConnection, app: AppId, id: SubscriptionId) -> Result<Subscription> {
    sqlx::query!(
        "SELECT 1 AS locked FROM subscriptions WHERE id = $1 AND app_id = $2 FOR NO KEY UPDATE",
        id.as_uuid(),
        Uuid::from(app),
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(StoreError::NotFound("subscription"))?;
    get(conn, app, id).await
}

/// The app's subscriptions in the given states, oldest first.
pub async fn list(
    conn: &mut PgConnection,
    app: AppId,
    estados: &[SubscriptionState],
) -> Result<Vec<Subscription>> {
    let estados: Vec<&str> = estados.iter().map(|e| e.as_str()).collect();
    // The same columns as `get`.
    let rows = sqlx::query_as!(
        SubscriptionRow,
        r#"SELECT id, app_id, nombre AS name, url, instancias AS instances, tipos AS types,
                ordenado AS ordered, orden_por_clave AS by_key, firma AS signing_profile,
                contrato AS contract, entorno AS environment, estado AS state,
                motivo AS reason, suspendido_en AS suspended_at, version,
                creado_en AS created_at, actualizado_en AS updated_at,
                credenciales IS NOT NULL AS "has_credentials!",
                max_por_segundo AS max_per_second
           FROM subscriptions WHERE app_id = $1 AND estado = ANY($2)
           ORDER BY creado_en, id"#,
        Uuid::from(app),
        &estados as &[&str],
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut subs: Vec<Subscription> = rows.into_iter().map(subscription).collect();
    let ids: Vec<SubscriptionId> = subs.iter().map(|s| s.id).collect();
    let counts = deliveries::read::counts(&mut *conn, &ids).await?;
    for ((sub, keys), counts) in subs
        .iter_mut()
        .zip(keys_of(&mut *conn, &ids).await?)
        .zip(counts)
    {
        sub.keys = keys;
        (sub.pending, sub.failed) = counts;
    }
    Ok(subs)
}

/// Writes the changeable fields of a locked subscription, bumps its
/// `version` and returns it as stored.
pub async fn save(conn: &mut PgConnection, sub: &Subscription) -> Result<Subscription> {
    let instancias: Vec<Uuid> = sub.instances.iter().map(|i| Uuid::from(*i)).collect();
    let found = sqlx::query!(
        "UPDATE subscriptions
         SET nombre = $3, url = $4, instancias = $5, tipos = $6, ordenado = $7, estado = $8,
             motivo = $9, suspendido_en = $10, firma = $11, max_por_segundo = $12,
             contrato = $13, orden_por_clave = $14, version = version + 1,
             actualizado_en = now()
         WHERE id = $1 AND version = $2",
        sub.id.as_uuid(),
        sub.version,
        &sub.name,
        &sub.url,
        &instancias,
        &sub.event_types,
        sub.ordering.is_ordered(),
        sub.state.as_str(),
        sub.reason.map(SuspensionReason::as_str),
        sub.suspended_at,
        sub.signature.as_str(),
        sub.max_per_second.map(|n| n as i32),
        sub.contract.as_str(),
        sub.ordering == Ordering::Key,
    )
    .execute(&mut *conn)
    .await?;
    if found.rows_affected() == 0 {
        return Err(StoreError::Conflict(
            "the subscription changed meanwhile".into(),
        ));
    }
    get(conn, sub.app_id, sub.id).await
}

/// Replaces (or, with `None`, removes) the sealed broker credentials of a
/// locked subscription, before its [`save`] (which bumps `version`, so the
/// delivery engine reads them again).
pub async fn set_credentials(
    conn: &mut PgConnection,
    id: SubscriptionId,
    sealed: Option<&[u8]>,
) -> Result<()> {
    sqlx::query!(
        "UPDATE subscriptions SET credenciales = $2 WHERE id = $1",
        id.as_uuid(),
        sealed,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The sealed broker credentials of a subscription, if it has any: what
/// the delivery engine opens to connect.
pub async fn sealed_credentials(
    db: impl PgExecutor<'_>,
    id: SubscriptionId,
) -> Result<Option<Vec<u8>>> {
    Ok(sqlx::query_scalar!(
        "SELECT credenciales FROM subscriptions WHERE id = $1",
        id.as_uuid()
    )
    .fetch_optional(db)
    .await?
    .flatten())
}

/// Whether a subscription delivers in lane order; `None` if there is no
/// such subscription. The delivery engine bounds unordered ones' attempts.
pub async fn is_ordered(db: impl PgExecutor<'_>, id: SubscriptionId) -> Result<Option<bool>> {
    Ok(sqlx::query_scalar!(
        "SELECT ordenado FROM subscriptions WHERE id = $1",
        id.as_uuid()
    )
    .fetch_optional(db)
    .await?)
}

/// Suspends a subscription (sustained failures' call; an attempt's is
/// [`suspend_at_version`]) and opens an alert, in the caller's
/// transaction. A subscription already suspended or eliminated is left as
/// it is; returns whether it changed. Under a contract that cancels on
/// deactivation its `pendiente` deliveries end `cancelada` in the same
/// transaction.
pub async fn suspend(
    conn: &mut PgConnection,
    id: SubscriptionId,
    motivo: SuspensionReason,
    detalle: &str,
) -> Result<bool> {
    suspend_if(conn, id, None, motivo, detalle).await
}

/// [`suspend`], for what an attempt found: only while the subscription is
/// still at `version`, the one the attempt was claimed (and signed, and
/// logged in) under. A refusal of credentials a `PATCH` has replaced since
/// (its reactivation with them bumped the version) must not suspend the
/// subscription again: it then waits for nothing (seen: an attempt of one
/// lane refused before the fix and recorded after it, every delivery left
/// `pendiente` behind the second suspension). The delivery is due, and
/// the sweeper hands it to an attempt under the new version.
pub async fn suspend_at_version(
    conn: &mut PgConnection,
    id: SubscriptionId,
    version: i64,
    motivo: SuspensionReason,
    detalle: &str,
) -> Result<bool> {
    suspend_if(conn, id, Some(version), motivo, detalle).await
}

async fn suspend_if(
    conn: &mut PgConnection,
    id: SubscriptionId,
    version: Option<i64>,
    motivo: SuspensionReason,
    detalle: &str,
) -> Result<bool> {
    let row = sqlx::query!(
        "UPDATE subscriptions
         SET estado = 'suspendida', motivo = $2, suspendido_en = now(),
             version = version + 1, actualizado_en = now()
         WHERE id = $1 AND estado IN ('activa', 'pausada')
           AND ($3::bigint IS NULL OR version = $3)
         RETURNING app_id, contrato",
        id.as_uuid(),
        motivo.as_str(),
        version,
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(false);
    };
    let app = AppId::from_uuid(row.app_id);
    // Only known values are ever written.
    let contract = Contract::parse(&row.contrato).unwrap_or_default();
    // From `activa` or `pausada`: the rule is the same for both.
    let cancel = contract.spec().deactivation.on_state_change(
        SubscriptionState::Active,
        SubscriptionState::Suspended,
        Some(motivo),
    );
    if let Some(reason) = cancel {
        deliveries::cancel_pending(conn, id, reason, false).await?;
    }
    alerts::open(conn, app, Some(id), motivo.as_str(), detalle).await?;
    Ok(true)
}

/// Of `ids`, those that are instances of `app`.
pub async fn owned_instances(
    db: impl PgExecutor<'_>,
    app: AppId,
    ids: &[InstanceId],
) -> Result<Vec<InstanceId>> {
    let ids: Vec<Uuid> = ids.iter().map(|i| Uuid::from(*i)).collect();
    let rows: Vec<Uuid> = sqlx::query_scalar!(
        "SELECT id FROM instances WHERE app_id = $1 AND id = ANY($2)",
        Uuid::from(app),
        &ids,
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(InstanceId::from_uuid).collect())
}

/// The live keys (without secrets) of each subscription, in `ids` order.
async fn keys_of(
    conn: &mut PgConnection,
    ids: &[SubscriptionId],
) -> Result<Vec<Vec<SubscriptionKey>>> {
    let uuids: Vec<Uuid> = ids.iter().map(|i| *i.as_uuid()).collect();
    let rows = sqlx::query!(
        "SELECT subscription_id, key_id, creado_en, vence_en FROM subscription_keys
         WHERE subscription_id = ANY($1) AND (vence_en IS NULL OR vence_en > now())
         ORDER BY creado_en DESC, key_id DESC",
        &uuids,
    )
    .fetch_all(conn)
    .await?;
    let mut out: Vec<Vec<SubscriptionKey>> = vec![Vec::new(); ids.len()];
    for row in rows {
        let Some(key_id) = SigningKeyId::parse(&row.key_id) else {
            continue;
        };
        if let Some(i) = uuids.iter().position(|u| *u == row.subscription_id) {
            out[i].push(SubscriptionKey {
                key_id,
                created_at: row.creado_en,
                expires_at: row.vence_en,
            });
        }
    }
    Ok(out)
}

fn subscription(row: SubscriptionRow) -> Subscription {
    Subscription {
        id: SubscriptionId::from_uuid(row.id),
        app_id: AppId::from_uuid(row.app_id),
        name: row.name,
        url: row.url,
        has_credentials: row.has_credentials,
        instances: row
            .instances
            .into_iter()
            .map(InstanceId::from_uuid)
            .collect(),
        event_types: row.types,
        ordering: match (row.ordered, row.by_key) {
            (false, _) => Ordering::Unordered,
            (true, false) => Ordering::Instance,
            (true, true) => Ordering::Key,
        },
        signature: signing_profile(&row.signing_profile),
        contract: Contract::parse(&row.contract).unwrap_or_default(),
        // The table's CHECK admits only `live` and `test`.
        environment: Environment::parse(&row.environment).unwrap_or_default(),
        max_per_second: row.max_per_second.map(i64::from),
        // The table's CHECK constraints admit only known values.
        state: SubscriptionState::parse(&row.state).unwrap_or(SubscriptionState::Suspended),
        reason: row.reason.as_deref().and_then(SuspensionReason::parse),
        suspended_at: row.suspended_at,
        version: row.version,
        keys: Vec::new(),
        // Counted from the deliveries by `get` and `list`.
        pending: 0,
        failed: 0,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}
