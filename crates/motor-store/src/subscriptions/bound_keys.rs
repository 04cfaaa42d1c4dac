//! The API key a subscription is bound to (seed 001: "Modificar la
//! suscripción la vincula a la clave que llama") and what happens to the
//! subscription when that key lapses — revoked, expired or under-scoped —
//! under a contract that cancels on deactivation (Visito): it is
//! suspended, which cancels its pending deliveries ([`super::suspend`]).
//! Split from `subscriptions.rs` by action.

use std::{
    collections::{BTreeMap, HashMap},
    time::Duration,
};

use motor_domain::{
    contract::Contract,
    read_scope,
    subscription::{SubscriptionId, SuspensionReason},
    AppId,
};
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use super::suspend;
use crate::Result;

/// Binds a subscription to the API key that created or changed it (seed
/// 001: "Modificar la suscripción la vincula a la clave que llama"); the
/// operator's changes leave the binding as it is.
pub async fn bind_key(conn: &mut PgConnection, id: SubscriptionId, key_id: &str) -> Result<()> {
    sqlx::query!(
        "UPDATE subscriptions SET clave_api = $2 WHERE id = $1",
        id.as_uuid(),
        key_id,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Which lapsed API keys [`suspend_for_lapsed_keys`] looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lapsed<'a> {
    /// This key, if it is lapsed: its revocation.
    Key(&'a str),
    /// Every lapsed key, however long ago.
    Every,
    /// The keys revoked, or past their `vence_en`, within this long before
    /// now: a range of each of their indexes (migration 0033), so a pass
    /// costs what lapsed lately, not what is bound.
    Within(Duration),
}

/// Suspends, under a contract that cancels on deactivation, every
/// `activa` or `pausada` subscription bound to an API key that is revoked
/// (`clave_revocada`) or past its `vence_en` (`clave_vencida`), among the
/// keys `lapsed` names, which cancels their pending deliveries
/// ([`suspend`]). Revocation calls it for its key; the sweeper for the
/// keys that lapsed since its last pass over every key, and for every key
/// once a minute (`motor_engine::sweeper`), which is how an expiry takes
/// effect. How many it suspended.
///
/// The keys are read first, then their live subscriptions by their index
/// (migration 0033): joined in one statement, the planner counted on five
/// live subscriptions a lapsed key and read every bound subscription.
pub async fn suspend_for_lapsed_keys(conn: &mut PgConnection, lapsed: Lapsed<'_>) -> Result<usize> {
    let keys: HashMap<String, bool> = match lapsed {
        Lapsed::Key(key_id) => lapsed_keys(conn, Some(key_id)).await?,
        Lapsed::Every => lapsed_keys(conn, None).await?,
        Lapsed::Within(within) => lapsed_within(conn, within).await?,
    };
    if keys.is_empty() {
        return Ok(0);
    }
    let ids: Vec<&str> = keys.keys().map(String::as_str).collect();
    let cancelling = Contract::cancelling();
    let bound = sqlx::query!(
        r#"SELECT id, clave_api AS "key_id!" FROM subscriptions
           WHERE clave_api = ANY ($1) AND estado IN ('activa', 'pausada') AND contrato = ANY ($2)
           ORDER BY id"#,
        &ids as &[&str],
        &cancelling as &[&str],
    )
    .fetch_all(&mut *conn)
    .await?;
    if bound.is_empty() {
        return Ok(0);
    }
    // The suspensions in one transaction (a savepoint inside a caller's):
    // a pass that finds nothing opens none.
    let mut tx = conn.begin().await?;
    let mut suspended = 0;
    for row in bound {
        let (motivo, detalle) = if keys.get(&row.key_id) == Some(&true) {
            (SuspensionReason::KeyRevoked, "revoked")
        } else {
            (SuspensionReason::KeyExpired, "past its vence_en")
        };
        let detalle = format!("the API key {} it is bound to is {detalle}", row.key_id);
        if suspend(&mut tx, SubscriptionId::from_uuid(row.id), motivo, &detalle).await? {
            suspended += 1;
        }
    }
    tx.commit().await?;
    Ok(suspended)
}

/// The keys revoked, or past their `vence_en`, within `within` before now
/// (a range of each of their indexes, migration 0033); each with whether
/// it was revoked (else it expired).
async fn lapsed_within(conn: &mut PgConnection, within: Duration) -> Result<HashMap<String, bool>> {
    Ok(sqlx::query!(
        r#"SELECT key_id, revocado_en IS NOT NULL AS "revoked!" FROM api_keys
           WHERE revocado_en >= now() - $1 * interval '1 second'
              OR (vence_en >= now() - $1 * interval '1 second' AND vence_en <= now())"#,
        within.as_secs_f64(),
    )
    .fetch_all(conn)
    .await?
    .into_iter()
    .map(|k| (k.key_id, k.revoked))
    .collect())
}

/// The lapsed keys (revoked or past their `vence_en`): `key_id` only, when
/// given; each with whether it was revoked (else it expired).
async fn lapsed_keys(
    conn: &mut PgConnection,
    key_id: Option<&str>,
) -> Result<HashMap<String, bool>> {
    Ok(sqlx::query!(
        r#"SELECT key_id, revocado_en IS NOT NULL AS "revoked!" FROM api_keys
           WHERE ($1::text IS NULL OR key_id = $1)
             AND (revocado_en IS NOT NULL OR vence_en <= now())"#,
        key_id,
    )
    .fetch_all(conn)
    .await?
    .into_iter()
    .map(|k| (k.key_id, k.revoked))
    .collect())
}

/// Suspends (`clave_sin_permiso`), under a contract that cancels on
/// deactivation, every `activa` or `pausada` subscription of `app` whose
/// bound API key lacks the read scope `map` — the app's catalogue as just
/// set — asks for a type it selects (seed 001: "Una clave … sin permisos
/// … cancela entregas pendientes"), which cancels its pending deliveries
/// ([`suspend`]). The rule is the one a change of the subscription
/// meets (`read_scope::missing`: its `tipos`, empty = every mapped type).
/// The catalogue's `PUT` calls it in its own transaction, after writing
/// the catalogue. How many it suspended.
///
/// The subscriptions are locked (`FOR NO KEY UPDATE`, as a change locks
/// one), so a change committed meanwhile is read as it ended; a change or
/// creation reads the map under `FOR SHARE`
/// ([`crate::settings::read_scope_map_for_change`]), so it either waits
/// for this catalogue or is seen here.
pub async fn suspend_for_under_scoped_keys(
    conn: &mut PgConnection,
    app: AppId,
    map: &BTreeMap<String, String>,
) -> Result<usize> {
    if map.is_empty() {
        return Ok(0);
    }
    let cancelling = Contract::cancelling();
    let bound = sqlx::query!(
        r#"SELECT s.id, s.tipos, k.key_id, k.permisos_lectura
           FROM subscriptions s JOIN api_keys k ON k.key_id = s.clave_api
           WHERE s.app_id = $1 AND s.clave_api IS NOT NULL
             AND s.estado IN ('activa', 'pausada') AND s.contrato = ANY ($2)
           ORDER BY s.id
           FOR NO KEY UPDATE OF s"#,
        Uuid::from(app),
        &cancelling as &[&str],
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut suspended = 0;
    for row in bound {
        let Some((t, scope)) = read_scope::missing(&row.tipos, map, &row.permisos_lectura) else {
            continue;
        };
        let detalle = format!(
            "the API key {} it is bound to lacks the read scope {scope}, which the event type {t} now needs",
            row.key_id
        );
        let id = SubscriptionId::from_uuid(row.id);
        if suspend(conn, id, SuspensionReason::KeyUnderScoped, &detalle).await? {
            suspended += 1;
        }
    }
    Ok(suspended)
}
