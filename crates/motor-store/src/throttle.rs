//! Adaptive throttling, per subscription: when a receiver answers 429 or
//! 503 with `Retry-After`, every lane of that subscription (every
//! instance, every replay) holds off until the time it asked for, instead
//! of each lane finding out alone. The hold is a row here, read by every
//! claim in every process (one probe of the key, on a table that is
//! almost always empty); a delivery whose claim finds its subscription
//! held is deferred — `proximo_intento` moved to the end of the hold and a
//! job written for then — so the sweeper does not wake it early either.
//! Other subscriptions are unaffected.

use motor_domain::{
    delivery::{DeliveryId, DeliveryJob},
    subscription::SubscriptionId,
    time::Timestamp,
};
use sqlx::{PgConnection, PgExecutor};

use crate::{Pool, Result};

/// Holds `subscription` until `until` (a later hold already in place
/// stays), and marks attempt `numero` of `delivery` — the one whose answer
/// asked for it — `throttled` in its history.
pub async fn hold(
    pool: &Pool,
    subscription: SubscriptionId,
    delivery: DeliveryId,
    numero: u32,
    until: Timestamp,
) -> Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "INSERT INTO subscription_throttle (subscription_id, hasta) VALUES ($1, $2)
         ON CONFLICT (subscription_id) DO UPDATE
             SET hasta = greatest(subscription_throttle.hasta, EXCLUDED.hasta)",
    )
    .bind(subscription.as_uuid())
    .bind(until)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "UPDATE delivery_attempts SET throttled = true WHERE delivery_id = $1 AND numero = $2",
    )
    .bind(delivery.as_uuid())
    .bind(i32::try_from(numero).unwrap_or(i32::MAX))
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// When `subscription` is held, until when.
pub async fn held_until(
    db: impl PgExecutor<'_>,
    subscription: SubscriptionId,
) -> Result<Option<Timestamp>> {
    Ok(sqlx::query_scalar(
        "SELECT hasta FROM subscription_throttle WHERE subscription_id = $1 AND hasta > now()",
    )
    .bind(subscription.as_uuid())
    .fetch_optional(db)
    .await?)
}

/// Defers attempt `attempt` of `delivery` to `until` (never earlier than it
/// was due) and writes its job for then. Nothing when the delivery moved
/// on meanwhile.
pub(crate) async fn defer(
    conn: &mut PgConnection,
    delivery: DeliveryId,
    attempt: u32,
    until: Timestamp,
) -> Result<Option<DeliveryJob>> {
    let row = sqlx::query(
        "UPDATE deliveries SET proximo_intento = greatest(proximo_intento, $3),
                               parked_at = NULL, actualizada_en = now()
         WHERE id = $1 AND estado = 'pendiente' AND intentos = $2 - 1
           AND (lease_until IS NULL OR lease_until <= now())
         RETURNING id, subscription_id, instance_id, lane, seq, intentos, proximo_intento",
    )
    .bind(delivery.as_uuid())
    .bind(i64::from(attempt))
    .bind(until)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let job = crate::deliveries::next_job_of(&row);
    crate::deliveries::enqueue_jobs(conn, std::slice::from_ref(&job)).await?;
    Ok(Some(job))
}
