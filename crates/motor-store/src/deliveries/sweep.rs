//! Bringing lanes back: on reactivation ([`release_lane_heads`]) and when a
//! wake-up was lost ([`due_lane_heads`] then [`requeue`]), so progress never
//! depends on one message.

use std::time::Duration;

use motor_domain::{
    delivery::{DeliveryId, DeliveryJob, Lane},
    subscription::SubscriptionId,
};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use super::{enqueue, next_job, uuids, CLAIMABLE_NOW, LANE_IS_FREE};
use crate::{Pool, Result};

/// What the sweeper's lane walk keeps of each lane head.
const HEAD_COLUMNS: &str =
    "d.subscription_id, d.instance_id, d.lane, d.id, d.lease_until, d.proximo_intento";

/// Columns [`next_job`] reads.
const JOB_COLUMNS: &str =
    "d.id, d.subscription_id, d.instance_id, d.lane, d.seq, d.intentos, d.proximo_intento";

/// Writes a job for the head of every lane of an `activa` subscription (for
/// an unordered one, for every open delivery), skipping deliveries whose
/// lease is live (an attempt is in flight). Call it in the transaction that
/// makes the subscription `activa` again (PATCH, or the operator), after the
/// change. Jobs keep the delivery's own due time (a retry still waits its
/// schedule). Returns the jobs written.
pub async fn release_lane_heads(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
) -> Result<Vec<DeliveryJob>> {
    release(conn, subscription, None).await
}

/// [`release_lane_heads`] for one lane only (every instance's part of it):
/// a replay calls it in the transaction that creates the replay's
/// deliveries, so an ordered replay gets one job per instance (its head)
/// and the rest follow as the heads finish; a subscription that is not
/// `activa` gets none (reactivation releases them).
pub async fn release_lane(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
    lane: Lane,
) -> Result<Vec<DeliveryJob>> {
    release(conn, subscription, Some(lane)).await
}

async fn release(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
    lane: Option<Lane>,
) -> Result<Vec<DeliveryJob>> {
    let rows = sqlx::query(&format!(
        "UPDATE deliveries d SET parked_at = NULL, actualizada_en = now()
         FROM subscriptions s
         WHERE d.subscription_id = $1 AND s.id = d.subscription_id AND s.estado = 'activa'
           AND ($2::text IS NULL OR d.lane = $2)
           AND d.estado = 'pendiente'
           AND (d.lease_until IS NULL OR d.lease_until <= now())
           AND (NOT s.ordenado OR {LANE_IS_FREE})
         RETURNING {JOB_COLUMNS}"
    ))
    .bind(subscription.as_uuid())
    .bind(lane.map(|l| l.to_string()))
    .fetch_all(&mut *conn)
    .await?;
    let mut jobs: Vec<DeliveryJob> = rows.iter().map(next_job).collect();
    jobs.sort_by_key(|j| (*j.instance_id.as_uuid(), j.seq));
    enqueue(conn, &jobs).await?;
    Ok(jobs)
}

/// Deliveries that should be moving but may have no live job: `pendiente`,
/// subscription `activa`, head of their lane (any open one for an unordered
/// subscription), and either leased with the lease expired (the attempt's
/// process died) or unleased and due for at least `stale_after` (its job was
/// lost, or its park raced the head's finish). Oldest due first. Read-only:
/// pass them to [`requeue`], which checks again.
///
/// The heads come from a walk over the lanes with open deliveries (one
/// index probe per lane: the lowest open seq of the next lane), not from
/// the open deliveries themselves, so a pass costs the same whether a lane
/// holds one open delivery or a million (measured on 1,000,000 open
/// deliveries in 50 lanes: 1.4 ms, against 2.1 s for a `DISTINCT ON` over
/// them).
pub async fn due_lane_heads(
    db: impl PgExecutor<'_>,
    stale_after: Duration,
    limit: i64,
) -> Result<Vec<DeliveryId>> {
    let stale_after = chrono::TimeDelta::from_std(stale_after).unwrap_or(chrono::TimeDelta::MAX);
    let lost = |d: &str| {
        format!(
            "(({d}.lease_until IS NULL AND {d}.proximo_intento <= now() - $1)
              OR {d}.lease_until <= now())"
        )
    };
    let ids: Vec<Uuid> = sqlx::query_scalar(&format!(
        "WITH RECURSIVE heads AS (
             (SELECT {HEAD_COLUMNS} FROM deliveries d
              WHERE d.estado = 'pendiente'
              ORDER BY d.subscription_id, d.instance_id, d.lane, d.seq
              LIMIT 1)
             UNION ALL
             SELECT n.* FROM heads h CROSS JOIN LATERAL (
                 SELECT {HEAD_COLUMNS} FROM deliveries d
                 WHERE d.estado = 'pendiente'
                   AND (d.subscription_id, d.instance_id, d.lane)
                       > (h.subscription_id, h.instance_id, h.lane)
                 ORDER BY d.subscription_id, d.instance_id, d.lane, d.seq
                 LIMIT 1) n
         )
         SELECT id FROM (
             SELECT h.id, h.proximo_intento
             FROM heads h JOIN subscriptions s ON s.id = h.subscription_id
             WHERE s.estado = 'activa' AND s.ordenado AND {ordered}
             UNION ALL
             SELECT d.id, d.proximo_intento
             FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
             WHERE d.estado = 'pendiente' AND s.estado = 'activa' AND NOT s.ordenado
               AND {unordered}
         ) due
         ORDER BY proximo_intento, id
         LIMIT $2",
        ordered = lost("h"),
        unordered = lost("d"),
    ))
    .bind(stale_after)
    .bind(limit)
    .fetch_all(db)
    .await?;
    Ok(ids.into_iter().map(DeliveryId::from_uuid).collect())
}

/// Writes a fresh job for each of `ids` that is still a due, unleased (or
/// lease-expired) lane head of an `activa` subscription, in one
/// transaction. Rows another transaction holds (a claim, a finish) are
/// skipped: they are moving. The requeued ones get `proximo_intento` = now
/// (never earlier than it was), so the sweeper leaves them alone for
/// `stale_after` while their job travels. Returns the jobs written.
pub async fn requeue(pool: &Pool, ids: &[DeliveryId]) -> Result<Vec<DeliveryJob>> {
    let mut tx = pool.begin().await?;
    let rows = sqlx::query(&format!(
        "UPDATE deliveries d
         SET proximo_intento = now(), lease_until = NULL, parked_at = NULL, actualizada_en = now()
         FROM subscriptions s
         WHERE d.id IN (SELECT id FROM deliveries WHERE id = ANY ($1) FOR UPDATE SKIP LOCKED)
           AND s.id = d.subscription_id AND d.estado = 'pendiente' AND {CLAIMABLE_NOW}
           AND (NOT s.ordenado OR {LANE_IS_FREE})
         RETURNING {JOB_COLUMNS}"
    ))
    .bind(uuids(ids))
    .fetch_all(&mut *tx)
    .await?;
    let mut jobs: Vec<DeliveryJob> = rows.iter().map(next_job).collect();
    jobs.sort_by_key(|j| (*j.instance_id.as_uuid(), j.seq));
    enqueue(&mut tx, &jobs).await?;
    tx.commit().await?;
    Ok(jobs)
}

/// Retention: deletes up to `limit` `entregada` deliveries (with their
/// attempts) delivered more than `days` days ago. `fallida` rows are never
/// deleted — they are the DLQ — and `pendiente` ones are still owed.
/// Returns how many were deleted.
pub async fn purge_delivered(db: impl PgExecutor<'_>, days: i64, limit: i64) -> Result<u64> {
    let done = sqlx::query(
        "DELETE FROM deliveries WHERE id IN (
             SELECT id FROM deliveries
             WHERE estado = 'entregada' AND entregada_en < now() - make_interval(days => $1::int)
             LIMIT $2
             FOR UPDATE SKIP LOCKED)",
    )
    .bind(days)
    .bind(limit)
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}
