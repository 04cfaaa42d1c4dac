//! A subscription's signing keys, sealed: added, rotated, forgotten, and
//! read with the subscription's contract for the delivery engine (split
//! from `subscriptions.rs` by action; the same table and the same rules).

use chrono::Duration;
use motor_domain::{
    contract::{Contract, Environment},
    secret::SigningKeyId,
    signature::SigningProfile,
    subscription::{Subscription, SubscriptionId},
};
use sqlx::{postgres::types::PgInterval, PgConnection, PgExecutor};

use super::{save, SealedKey};
use crate::Result;

pub(super) async fn insert_key(
    conn: &mut PgConnection,
    id: SubscriptionId,
    key_id: &SigningKeyId,
    sealed: &[u8],
) -> Result<()> {
    sqlx::query!(
        "INSERT INTO subscription_keys (key_id, subscription_id, sealed) VALUES ($1, $2, $3)",
        key_id.as_str(),
        id.as_uuid(),
        sealed,
    )
    .execute(conn)
    .await?;
    Ok(())
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
    sqlx::query!(
        "DELETE FROM subscription_keys
         WHERE subscription_id = $1 AND vence_en IS NOT NULL AND vence_en <= now()",
        id.as_uuid(),
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "UPDATE subscription_keys SET vence_en = CASE WHEN vence_en IS NULL THEN now() + $2 ELSE now() END
         WHERE subscription_id = $1",
        id.as_uuid(),
        PgInterval::try_from(window).map_err(sqlx::Error::Encode)?,
    )
    .execute(&mut *conn)
    .await?;
    insert_key(&mut *conn, id, new_key, sealed).await?;
    save(conn, sub).await
}

/// Deletes every key of a subscription (it was deleted: nothing will be
/// signed for it again, so its sealed secrets need not be kept).
pub async fn forget_keys(conn: &mut PgConnection, id: SubscriptionId) -> Result<u64> {
    Ok(sqlx::query!(
        "DELETE FROM subscription_keys WHERE subscription_id = $1",
        id.as_uuid()
    )
    .execute(conn)
    .await?
    .rows_affected())
}

/// Live keys of a subscription, sealed, newest first: what the delivery
/// engine opens to sign.
pub async fn live_keys(db: impl PgExecutor<'_>, id: SubscriptionId) -> Result<Vec<SealedKey>> {
    let rows = sqlx::query!(
        "SELECT key_id, sealed, creado_en, vence_en FROM subscription_keys
         WHERE subscription_id = $1 AND (vence_en IS NULL OR vence_en > now())
         ORDER BY creado_en DESC, key_id DESC",
        id.as_uuid(),
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| SealedKey {
            key_id: r.key_id,
            sealed: r.sealed,
            created_at: r.creado_en,
            expires_at: r.vence_en,
        })
        .collect())
}

/// What the delivery engine signs a subscription's attempts with: its
/// signing profile and its live keys, sealed, newest first.
#[derive(Debug, Clone)]
pub struct Signing {
    pub profile: SigningProfile,
    /// The subscription's contract: the shape of every attempt.
    pub contract: Contract,
    /// The subscription's environment (fixed at creation), which every
    /// event it receives shares: Asixto's `environment`.
    pub environment: Environment,
    pub keys: Vec<SealedKey>,
}

/// A subscription's [`Signing`], read in one statement; `None` if there is
/// no such subscription.
pub async fn signing(db: impl PgExecutor<'_>, id: SubscriptionId) -> Result<Option<Signing>> {
    // A subscription without live keys is one row of NULL key columns.
    let rows = sqlx::query!(
        r#"SELECT s.firma, s.contrato, s.entorno, k.key_id AS "key_id?", k.sealed AS "sealed?",
                  k.creado_en AS "creado_en?", k.vence_en
           FROM subscriptions s
           LEFT JOIN subscription_keys k
                  ON k.subscription_id = s.id AND (k.vence_en IS NULL OR k.vence_en > now())
           WHERE s.id = $1
           ORDER BY k.creado_en DESC, k.key_id DESC"#,
        id.as_uuid(),
    )
    .fetch_all(db)
    .await?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    Ok(Some(Signing {
        profile: signing_profile(&first.firma),
        contract: Contract::parse(&first.contrato).unwrap_or_default(),
        environment: Environment::parse(&first.entorno).unwrap_or_default(),
        keys: rows
            .into_iter()
            .filter_map(|r| {
                Some(SealedKey {
                    key_id: r.key_id?,
                    sealed: r.sealed?,
                    created_at: r.creado_en?,
                    expires_at: r.vence_en,
                })
            })
            .collect(),
    }))
}

/// The table's CHECK admits only the three spellings.
pub(super) fn signing_profile(firma: &str) -> SigningProfile {
    SigningProfile::parse(firma).unwrap_or_default()
}
