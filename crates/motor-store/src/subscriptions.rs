//! Subscriptions and their sealed signing keys. Changes go through
//! [`lock`] then [`save`] in one transaction, so `version` is checked and
//! bumped under the row lock. Secrets arrive and leave sealed: this module
//! never sees a secret in clear.

use chrono::Duration;
use motor_domain::{
    secret::SigningKeyId,
    signature::SigningProfile,
    subscription::{
        NewSubscription, Subscription, SubscriptionId, SubscriptionKey, SubscriptionState,
        SuspensionReason,
    },
    AppId, InstanceId,
};
use sqlx::{postgres::PgRow, PgConnection, PgExecutor, Row};
use uuid::Uuid;

use crate::{alerts, deliveries, Result, StoreError};

const COLUMNS: &str = "id, app_id, nombre, url, instancias, tipos, ordenado, firma, estado,
                       motivo, suspendida_en, version, creada_en, actualizada_en,
                       credenciales IS NOT NULL AS con_credenciales, max_por_segundo";

pub use motor_domain::keyring::SealedKey;

/// Inserts a subscription, its first key and its sealed broker
/// credentials, if any.
pub async fn insert(
    conn: &mut PgConnection,
    id: SubscriptionId,
    app: AppId,
    new: &NewSubscription,
    key_id: &SigningKeyId,
    sealed: &[u8],
    sealed_credentials: Option<&[u8]>,
) -> Result<Subscription> {
    let instancias: Vec<Uuid> = new.instancias.iter().map(|i| Uuid::from(*i)).collect();
    let tipos: Vec<&str> = new.tipos.iter().map(|t| t.as_str()).collect();
    sqlx::query(
        "INSERT INTO subscriptions (id, app_id, nombre, url, instancias, tipos, ordenado, firma,
                                    credenciales, max_por_segundo)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(id.as_uuid())
    .bind(Uuid::from(app))
    .bind(&new.nombre)
    .bind(new.url.as_str())
    .bind(&instancias)
    .bind(&tipos)
    .bind(new.ordenado)
    .bind(new.firma.as_str())
    .bind(sealed_credentials)
    .bind(new.max_por_segundo.map(|n| n as i32))
    .execute(&mut *conn)
    .await?;
    insert_key(&mut *conn, id, key_id, sealed).await?;
    get(&mut *conn, app, id).await
}

async fn insert_key(
    conn: &mut PgConnection,
    id: SubscriptionId,
    key_id: &SigningKeyId,
    sealed: &[u8],
) -> Result<()> {
    sqlx::query(
        "INSERT INTO subscription_keys (key_id, subscription_id, sealed) VALUES ($1, $2, $3)",
    )
    .bind(key_id.as_str())
    .bind(id.as_uuid())
    .bind(sealed)
    .execute(conn)
    .await?;
    Ok(())
}

/// One subscription of the app (any state, `eliminada` included).
pub async fn get(conn: &mut PgConnection, app: AppId, id: SubscriptionId) -> Result<Subscription> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM subscriptions WHERE id = $1 AND app_id = $2"
    ))
    .bind(id.as_uuid())
    .bind(Uuid::from(app))
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(StoreError::NotFound("subscription"))?;
    let mut sub = from_row(&row);
    sub.claves = claves(&mut *conn, &[id]).await?.remove(0);
    (sub.pendientes, sub.fallidas) = deliveries::read::counts(&mut *conn, &[id]).await?[0];
    Ok(sub)
}

/// Locks a subscription of the app for a change in this transaction.
pub async fn lock(conn: &mut PgConnection, app: AppId, id: SubscriptionId) -> Result<Subscription> {
    sqlx::query("SELECT 1 FROM subscriptions WHERE id = $1 AND app_id = $2 FOR NO KEY UPDATE")
        .bind(id.as_uuid())
        .bind(Uuid::from(app))
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
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM subscriptions WHERE app_id = $1 AND estado = ANY($2)
         ORDER BY creada_en, id"
    ))
    .bind(Uuid::from(app))
    .bind(&estados)
    .fetch_all(&mut *conn)
    .await?;
    let mut subs: Vec<Subscription> = rows.iter().map(from_row).collect();
    let ids: Vec<SubscriptionId> = subs.iter().map(|s| s.id).collect();
    let counts = deliveries::read::counts(&mut *conn, &ids).await?;
    for ((sub, claves), counts) in subs
        .iter_mut()
        .zip(claves(&mut *conn, &ids).await?)
        .zip(counts)
    {
        sub.claves = claves;
        (sub.pendientes, sub.fallidas) = counts;
    }
    Ok(subs)
}

/// Writes the changeable fields of a locked subscription, bumps its
/// `version` and returns it as stored.
pub async fn save(conn: &mut PgConnection, sub: &Subscription) -> Result<Subscription> {
    let instancias: Vec<Uuid> = sub.instancias.iter().map(|i| Uuid::from(*i)).collect();
    let found = sqlx::query(
        "UPDATE subscriptions
         SET nombre = $3, url = $4, instancias = $5, tipos = $6, ordenado = $7, estado = $8,
             motivo = $9, suspendida_en = $10, firma = $11, max_por_segundo = $12,
             version = version + 1, actualizada_en = now()
         WHERE id = $1 AND version = $2",
    )
    .bind(sub.id.as_uuid())
    .bind(sub.version)
    .bind(&sub.nombre)
    .bind(&sub.url)
    .bind(&instancias)
    .bind(&sub.tipos)
    .bind(sub.ordenado)
    .bind(sub.estado.as_str())
    .bind(sub.motivo.map(SuspensionReason::as_str))
    .bind(sub.suspendida_en)
    .bind(sub.firma.as_str())
    .bind(sub.max_por_segundo.map(|n| n as i32))
    .execute(&mut *conn)
    .await?;
    if found.rows_affected() == 0 {
        return Err(StoreError::Conflict(
            "the subscription changed meanwhile".into(),
        ));
    }
    get(conn, sub.cliente_id, sub.id).await
}

/// Replaces (or, with `None`, removes) the sealed broker credentials of a
/// locked subscription, before its [`save`] (which bumps `version`, so the
/// delivery engine reads them again).
pub async fn set_credentials(
    conn: &mut PgConnection,
    id: SubscriptionId,
    sealed: Option<&[u8]>,
) -> Result<()> {
    sqlx::query("UPDATE subscriptions SET credenciales = $2 WHERE id = $1")
        .bind(id.as_uuid())
        .bind(sealed)
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
    Ok(
        sqlx::query_scalar("SELECT credenciales FROM subscriptions WHERE id = $1")
            .bind(id.as_uuid())
            .fetch_optional(db)
            .await?
            .flatten(),
    )
}

/// Rotates the signing key of a locked subscription: the current key
/// retires at `now + window`, a key already retiring expires at once (so at
/// most two keys sign), expired keys are deleted, and `new_key` becomes
/// current. Bumps `version`.
pub async fn rotate(
    conn: &mut PgConnection,
    sub: &Subscription,
    new_key: &SigningKeyId,
    sealed: &[u8],
    window: Duration,
) -> Result<Subscription> {
    let id = sub.id;
    sqlx::query(
        "DELETE FROM subscription_keys
         WHERE subscription_id = $1 AND vence_en IS NOT NULL AND vence_en <= now()",
    )
    .bind(id.as_uuid())
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE subscription_keys SET vence_en = CASE WHEN vence_en IS NULL THEN now() + $2 ELSE now() END
         WHERE subscription_id = $1",
    )
    .bind(id.as_uuid())
    .bind(window)
    .execute(&mut *conn)
    .await?;
    insert_key(&mut *conn, id, new_key, sealed).await?;
    save(conn, sub).await
}

/// Deletes every key of a subscription (it was deleted: nothing will be
/// signed for it again, so its sealed secrets need not be kept).
pub async fn forget_keys(conn: &mut PgConnection, id: SubscriptionId) -> Result<u64> {
    Ok(
        sqlx::query("DELETE FROM subscription_keys WHERE subscription_id = $1")
            .bind(id.as_uuid())
            .execute(conn)
            .await?
            .rows_affected(),
    )
}

/// Live keys of a subscription, sealed, newest first: what the delivery
/// engine opens to sign.
pub async fn live_keys(db: impl PgExecutor<'_>, id: SubscriptionId) -> Result<Vec<SealedKey>> {
    let rows = sqlx::query(
        "SELECT key_id, sealed, creado_en, vence_en FROM subscription_keys
         WHERE subscription_id = $1 AND (vence_en IS NULL OR vence_en > now())
         ORDER BY creado_en DESC, key_id DESC",
    )
    .bind(id.as_uuid())
    .fetch_all(db)
    .await?;
    Ok(rows
        .iter()
        .map(|r| SealedKey {
            key_id: r.get("key_id"),
            sealed: r.get("sealed"),
            creado_en: r.get("creado_en"),
            vence_en: r.get("vence_en"),
        })
        .collect())
}

/// What the delivery engine signs a subscription's attempts with: its
/// signing profile and its live keys, sealed, newest first.
#[derive(Debug, Clone)]
pub struct Signing {
    pub firma: SigningProfile,
    pub keys: Vec<SealedKey>,
}

/// A subscription's [`Signing`], read in one statement; `None` if there is
/// no such subscription.
pub async fn signing(db: impl PgExecutor<'_>, id: SubscriptionId) -> Result<Option<Signing>> {
    let rows = sqlx::query(
        "SELECT s.firma, k.key_id, k.sealed, k.creado_en, k.vence_en
         FROM subscriptions s
         LEFT JOIN subscription_keys k
                ON k.subscription_id = s.id AND (k.vence_en IS NULL OR k.vence_en > now())
         WHERE s.id = $1
         ORDER BY k.creado_en DESC, k.key_id DESC",
    )
    .bind(id.as_uuid())
    .fetch_all(db)
    .await?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    Ok(Some(Signing {
        firma: firma(first),
        keys: rows
            .iter()
            .filter_map(|r| {
                Some(SealedKey {
                    key_id: r.get::<Option<String>, _>("key_id")?,
                    sealed: r.get("sealed"),
                    creado_en: r.get("creado_en"),
                    vence_en: r.get("vence_en"),
                })
            })
            .collect(),
    }))
}

/// The table's CHECK admits only the three spellings.
fn firma(row: &PgRow) -> SigningProfile {
    SigningProfile::parse(row.get("firma")).unwrap_or_default()
}

/// Whether a subscription delivers in lane order; `None` if there is no
/// such subscription. The delivery engine bounds unordered ones' attempts.
pub async fn is_ordered(db: impl PgExecutor<'_>, id: SubscriptionId) -> Result<Option<bool>> {
    Ok(
        sqlx::query_scalar("SELECT ordenado FROM subscriptions WHERE id = $1")
            .bind(id.as_uuid())
            .fetch_optional(db)
            .await?,
    )
}

/// Suspends a subscription (the delivery engine's call) and opens an
/// alert, in the caller's transaction. A subscription already suspended or
/// eliminated is left as it is; returns whether it changed.
pub async fn suspend(
    conn: &mut PgConnection,
    id: SubscriptionId,
    motivo: SuspensionReason,
    detalle: &str,
) -> Result<bool> {
    let row = sqlx::query(
        "UPDATE subscriptions
         SET estado = 'suspendida', motivo = $2, suspendida_en = now(),
             version = version + 1, actualizada_en = now()
         WHERE id = $1 AND estado IN ('activa', 'pausada')
         RETURNING app_id",
    )
    .bind(id.as_uuid())
    .bind(motivo.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(false);
    };
    let app = AppId::from_uuid(row.get("app_id"));
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
    let rows: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM instances WHERE app_id = $1 AND id = ANY($2)")
            .bind(Uuid::from(app))
            .bind(&ids)
            .fetch_all(db)
            .await?;
    Ok(rows.into_iter().map(InstanceId::from_uuid).collect())
}

/// The live keys (without secrets) of each subscription, in `ids` order.
async fn claves(
    conn: &mut PgConnection,
    ids: &[SubscriptionId],
) -> Result<Vec<Vec<SubscriptionKey>>> {
    let uuids: Vec<Uuid> = ids.iter().map(|i| *i.as_uuid()).collect();
    let rows = sqlx::query(
        "SELECT subscription_id, key_id, creado_en, vence_en FROM subscription_keys
         WHERE subscription_id = ANY($1) AND (vence_en IS NULL OR vence_en > now())
         ORDER BY creado_en DESC, key_id DESC",
    )
    .bind(&uuids)
    .fetch_all(conn)
    .await?;
    let mut out: Vec<Vec<SubscriptionKey>> = vec![Vec::new(); ids.len()];
    for row in rows {
        let sub: Uuid = row.get("subscription_id");
        let key_id: String = row.get("key_id");
        let Some(key_id) = SigningKeyId::parse(&key_id) else {
            continue;
        };
        if let Some(i) = uuids.iter().position(|u| *u == sub) {
            out[i].push(SubscriptionKey {
                key_id,
                creado_en: row.get("creado_en"),
                vence_en: row.get("vence_en"),
            });
        }
    }
    Ok(out)
}

fn from_row(row: &PgRow) -> Subscription {
    let estado: String = row.get("estado");
    let motivo: Option<String> = row.get("motivo");
    let instancias: Vec<Uuid> = row.get("instancias");
    Subscription {
        id: SubscriptionId::from_uuid(row.get("id")),
        cliente_id: AppId::from_uuid(row.get("app_id")),
        nombre: row.get("nombre"),
        url: row.get("url"),
        credenciales: row.get("con_credenciales"),
        instancias: instancias.into_iter().map(InstanceId::from_uuid).collect(),
        tipos: row.get("tipos"),
        ordenado: row.get("ordenado"),
        firma: firma(row),
        max_por_segundo: row.get::<Option<i32>, _>("max_por_segundo").map(i64::from),
        // The table's CHECK constraints admit only known values.
        estado: SubscriptionState::parse(&estado).unwrap_or(SubscriptionState::Suspended),
        motivo: motivo.as_deref().and_then(SuspensionReason::parse),
        suspendida_en: row.get("suspendida_en"),
        version: row.get("version"),
        claves: Vec::new(),
        // Counted from the deliveries by `get` and `list`.
        pendientes: 0,
        fallidas: 0,
        creada_en: row.get("creada_en"),
        actualizada_en: row.get("actualizada_en"),
    }
}
