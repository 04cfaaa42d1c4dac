//! Adaptive throttling, per subscription: when a receiver answers 429 or
//! 503 with `Retry-After`, every lane of that subscription (every
//! instance, every replay) holds off until the time it asked for, instead
//! of each lane finding out alone. The hold is a row here, read by every
//! claim in every process (one probe of the key, on a table that is
//! almost always empty); a delivery whose claim finds its subscription
//! held is deferred — `proximo_intento` moved to the end of the hold and a
//! job written for then — so the sweeper does not wake it early either.
//! Other subscriptions are unaffected.
//!
//! `max_por_segundo` is a token bucket per subscription, in Postgres
//! (`subscription_rate`): an attempt takes a token first, or gives its
//! claim back to be tried when one will be there.

use motor_domain::{
    delivery::{DeliveryId, DeliveryJob},
    subscription::SubscriptionId,
    time::Timestamp,
};
use sqlx::{PgConnection, PgExecutor};

use crate::{deliveries::JobRow, interval, Pool, Result};

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
    sqlx::query!(
        "INSERT INTO subscription_throttle (subscription_id, hasta) VALUES ($1, $2)
         ON CONFLICT (subscription_id) DO UPDATE
             SET hasta = greatest(subscription_throttle.hasta, EXCLUDED.hasta)",
        subscription.as_uuid(),
        until,
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!(
        "UPDATE delivery_attempts SET throttled = true WHERE delivery_id = $1 AND numero = $2",
        delivery.as_uuid(),
        i32::try_from(numero).unwrap_or(i32::MAX),
    )
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
    Ok(sqlx::query_scalar!(
        "SELECT hasta FROM subscription_throttle WHERE subscription_id = $1 AND hasta > now()",
        subscription.as_uuid(),
    )
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
    let row = sqlx::query_as!(
        JobRow,
        "UPDATE deliveries SET proximo_intento = greatest(proximo_intento, $3),
                               aparcado_en = NULL, actualizado_en = now()
         WHERE id = $1 AND estado = 'pendiente' AND intentos = $2::bigint - 1
           AND (reservado_hasta IS NULL OR reservado_hasta <= now())
         RETURNING id, subscription_id, instance_id, lane, seq, intentos AS attempts_made,
                   proximo_intento AS due",
        delivery.as_uuid(),
        i64::from(attempt),
        until,
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let job = row.next_job();
    crate::deliveries::enqueue_jobs(conn, std::slice::from_ref(&job)).await?;
    Ok(Some(job))
}

/// Takes one token of `subscription`'s bucket (`rate` a second, holding at
/// most `rate`): `None` when it had one, or how long until it has one. One
/// statement on the subscription's row, so every process draws from the
/// same bucket.
pub async fn take_token(
    pool: &Pool,
    subscription: SubscriptionId,
    rate: i64,
) -> Result<Option<std::time::Duration>> {
    let rate = rate.max(1) as f64;
    let taken: Option<f64> = sqlx::query_scalar!(
        "INSERT INTO subscription_rate AS r (subscription_id, tokens, actualizado_en)
         VALUES ($1, $2::float8 - 1, now())
         ON CONFLICT (subscription_id) DO UPDATE
             SET tokens = least($2::float8, r.tokens + extract(epoch FROM now() - r.actualizado_en) * $2::float8) - 1,
                 actualizado_en = now()
             WHERE least($2::float8, r.tokens + extract(epoch FROM now() - r.actualizado_en) * $2::float8) >= 1
         RETURNING tokens",
        subscription.as_uuid(),
        rate,
    )
    .fetch_optional(pool)
    .await?;
    if taken.is_some() {
        return Ok(None);
    }
    let have: f64 = sqlx::query_scalar!(
        "SELECT least($2::float8, tokens + extract(epoch FROM now() - actualizado_en) * $2::float8)
         FROM subscription_rate WHERE subscription_id = $1",
        subscription.as_uuid(),
        rate,
    )
    .fetch_optional(pool)
    .await?
    .flatten()
    .unwrap_or(0.0);
    let wait = ((1.0 - have).max(0.0) / rate).max(0.001);
    Ok(Some(std::time::Duration::from_secs_f64(wait)))
}

/// Gives back a claim whose attempt found no token: the lease is cleared,
/// the delivery is due `wait` from now and its job is written for then.
pub async fn give_back(
    pool: &Pool,
    delivery: DeliveryId,
    attempt: u32,
    wait: std::time::Duration,
) -> Result<()> {
    let mut tx = pool.begin().await?;
    let row = sqlx::query_as!(
        JobRow,
        "UPDATE deliveries SET reservado_hasta = NULL, proximo_intento = now() + $3,
                               actualizado_en = now()
         WHERE id = $1 AND estado = 'pendiente' AND intentos = $2::bigint - 1
         RETURNING id, subscription_id, instance_id, lane, seq, intentos AS attempts_made,
                   proximo_intento AS due",
        delivery.as_uuid(),
        i64::from(attempt),
        interval(wait),
    )
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(row) = row {
        let job = row.next_job();
        crate::deliveries::enqueue_jobs(&mut tx, std::slice::from_ref(&job)).await?;
    }
    tx.commit().await?;
    Ok(())
}
