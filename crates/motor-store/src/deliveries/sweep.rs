//! Bringing lanes back: on reactivation ([`release_lane_heads`]) and when a
//! wake-up was lost ([`due_lane_heads`] then [`requeue`]), so progress never
//! depends on one message.

use std::time::Duration;

use motor_domain::{
    delivery::{DeliveryId, DeliveryJob, Lane},
    subscription::SubscriptionId,
};
use sqlx::{Acquire, PgConnection, PgExecutor, Postgres};
use uuid::Uuid;

use super::{enqueue, next_job, uuids, CLAIMABLE_NOW, LANE_IS_FREE};
use crate::{Pool, Result};

/// What the sweeper's lane walk keeps of each lane head.
const HEAD_COLUMNS: &str =
    "d.subscription_id, d.instance_id, d.lane, d.id, d.reservado_hasta, d.proximo_intento";

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

/// The lanes' heads are found by a walk over the subscription's lanes (one
/// index probe per lane, as in [`due_lane_heads`]), so an ordered
/// subscription with a million parked deliveries costs one probe per lane,
/// not one lane check per delivery. An unordered one releases every open
/// delivery: its cost is its output. (`OFFSET 0` keeps that branch a
/// subquery run only for the subscription that passed, so an ordered
/// subscription never reads its open deliveries there.)
async fn release(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
    lane: Option<Lane>,
) -> Result<Vec<DeliveryJob>> {
    let rows = sqlx::query(&release_sql())
        .bind(subscription.as_uuid())
        .bind(lane.map(|l| l.to_string()))
        .fetch_all(&mut *conn)
        .await?;
    let mut jobs: Vec<DeliveryJob> = rows.iter().map(next_job).collect();
    jobs.sort_by_key(|j| (*j.instance_id.as_uuid(), j.seq));
    enqueue(conn, &jobs).await?;
    Ok(jobs)
}

/// The statement of [`release`]: `$1` subscription, `$2` lane or NULL.
pub(super) fn release_sql() -> String {
    format!(
        "WITH RECURSIVE lanes AS (
             (SELECT d.instance_id, d.lane, d.id FROM deliveries d
              WHERE d.subscription_id = $1 AND d.estado = 'pendiente'
              ORDER BY d.instance_id, d.lane, d.seq
              LIMIT 1)
             UNION ALL
             SELECT n.* FROM lanes h CROSS JOIN LATERAL (
                 SELECT d.instance_id, d.lane, d.id FROM deliveries d
                 WHERE d.subscription_id = $1 AND d.estado = 'pendiente'
                   AND (d.instance_id, d.lane) > (h.instance_id, h.lane)
                 ORDER BY d.instance_id, d.lane, d.seq
                 LIMIT 1) n
         ), heads AS (
             SELECT h.id FROM lanes h JOIN subscriptions s ON s.id = $1
             WHERE s.ordenado AND s.estado = 'activa' AND ($2::text IS NULL OR h.lane = $2)
             UNION ALL
             SELECT d.id FROM subscriptions s CROSS JOIN LATERAL (
                 SELECT d.id FROM deliveries d
                 WHERE d.subscription_id = s.id AND d.estado = 'pendiente'
                   AND ($2::text IS NULL OR d.lane = $2)
                 OFFSET 0) d
             WHERE s.id = $1 AND NOT s.ordenado AND s.estado = 'activa'
         )
         UPDATE deliveries d SET aparcado_en = NULL, actualizado_en = now()
         WHERE d.id = ANY (ARRAY(SELECT id FROM heads))
           AND d.estado = 'pendiente'
           AND (d.reservado_hasta IS NULL OR d.reservado_hasta <= now())
         RETURNING {JOB_COLUMNS}"
    )
}

/// Deliveries that should be moving but may have no live job: `pendiente`,
/// subscription `activa`, head of their lane (any open one for an unordered
/// subscription), and either leased with the lease expired (the attempt's
/// process died) or unleased and due for at least `stale_after` (its job was
/// lost, or its park raced the head's finish). Oldest due first. Read-only:
/// pass them to [`requeue`], which checks again.
///
/// No part of a pass reads the backlog itself, so it costs the same
/// whether a lane holds one open delivery or a million:
/// - ordered heads come from a walk over the lanes with open deliveries
///   (one index probe per lane: the lowest open seq of the next lane), not
///   from the open deliveries themselves (measured on 1,000,000 open
///   deliveries in 50 lanes: 1.4 ms, against 2.1 s for a `DISTINCT ON`
///   over them);
/// - an unordered subscription's candidates are one range of
///   `deliveries_open_due_by_subscription` per `activa` subscription,
///   oldest due first, read up to `limit` (was: every open delivery of
///   every unordered subscription, then a sort — 1.6 s on 1,000,000).
///   "Open" is said as `proximo_intento <= …` (only `pendiente` rows have
///   one), not `estado = 'pendiente'`, so that no other index matches: the
///   global `deliveries_open_due` would read the other subscriptions'
///   rows in front of these.
///
/// So that range ends at `now() - stale_after`, an unordered delivery whose
/// lease expired is found once its due time is also `stale_after` old: at
/// once when the lease is at least `stale_after` long (the dispatcher's is
/// the send timeout plus 5 s, against the sweeper's 5 s), at most
/// `stale_after` after the lease ran out otherwise. The rows due within the
/// last `stale_after` (a burst's fresh jobs) are never read.
///
/// Its transaction turns bitmap scans off: a bitmap scan returns rows in
/// no order, so with one the planner reads every stale row of a
/// subscription to sort them, and it chose that on a never-analysed table
/// (0.7 s on 1,000,000 open deliveries, against 1 ms in index order).
pub async fn due_lane_heads<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    stale_after: Duration,
    limit: i64,
) -> Result<Vec<DeliveryId>> {
    let stale_after = chrono::TimeDelta::from_std(stale_after).unwrap_or(chrono::TimeDelta::MAX);
    let mut tx = db.begin().await?;
    sqlx::query(DUE_LANE_HEADS_SETUP).execute(&mut *tx).await?;
    let ids: Vec<Uuid> = sqlx::query_scalar(&due_lane_heads_sql())
        .bind(stale_after)
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(ids.into_iter().map(DeliveryId::from_uuid).collect())
}

/// What [`due_lane_heads`] sets in its transaction before its statement.
pub(super) const DUE_LANE_HEADS_SETUP: &str = "SET LOCAL enable_bitmapscan = off";

/// The statement of [`due_lane_heads`]: `$1` stale_after, `$2` limit.
pub(super) fn due_lane_heads_sql() -> String {
    format!(
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
             WHERE s.estado = 'activa' AND s.ordenado
               AND ((h.reservado_hasta IS NULL AND h.proximo_intento <= now() - $1)
                    OR h.reservado_hasta <= now())
             UNION ALL
             SELECT u.id, u.proximo_intento
             FROM subscriptions s CROSS JOIN LATERAL (
                 SELECT d.id, d.proximo_intento FROM deliveries d
                 WHERE d.subscription_id = s.id
                   AND d.proximo_intento <= now() - $1
                   AND (d.reservado_hasta IS NULL OR d.reservado_hasta <= now())
                 ORDER BY d.proximo_intento, d.id
                 LIMIT $2) u
             WHERE s.estado = 'activa' AND NOT s.ordenado
         ) due
         ORDER BY proximo_intento, id
         LIMIT $2"
    )
}

/// Writes a fresh job for each of `ids` that is still a due, unleased (or
/// lease-expired) lane head of an `activa` subscription, in one
/// transaction. Rows another transaction holds (a claim, a finish) are
/// skipped: they are moving. The requeued ones get `proximo_intento` = now
/// (never earlier than it was), so the sweeper leaves them alone for
/// `stale_after` while their job travels. Returns the jobs written.
///
/// Every row is reached by its primary key: the given rows are locked
/// first (one probe per id), the checks read the locked rows, and the
/// update takes the ids that passed. Never a join against the open
/// deliveries: an `id IN (… FOR UPDATE SKIP LOCKED)` semi join let the
/// planner re-run the locking subquery once per open delivery (13–138 s on
/// 21,000 open rows, while every claim of the locked ones waited).
pub async fn requeue(pool: &Pool, ids: &[DeliveryId]) -> Result<Vec<DeliveryJob>> {
    let mut tx = pool.begin().await?;
    let rows = sqlx::query(&requeue_sql())
        .bind(uuids(ids))
        .fetch_all(&mut *tx)
        .await?;
    let mut jobs: Vec<DeliveryJob> = rows.iter().map(next_job).collect();
    jobs.sort_by_key(|j| (*j.instance_id.as_uuid(), j.seq));
    enqueue(&mut tx, &jobs).await?;
    tx.commit().await?;
    Ok(jobs)
}

/// The statement of [`requeue`]: `$1` the ids.
pub(super) fn requeue_sql() -> String {
    format!(
        "WITH locked AS MATERIALIZED (
             SELECT id, subscription_id, instance_id, lane, seq, estado, reservado_hasta, proximo_intento
             FROM deliveries WHERE id = ANY ($1)
             FOR UPDATE SKIP LOCKED
         )
         UPDATE deliveries d
         SET proximo_intento = now(), reservado_hasta = NULL, aparcado_en = NULL, actualizado_en = now()
         WHERE d.id = ANY (ARRAY(
             SELECT d.id FROM locked d JOIN subscriptions s ON s.id = d.subscription_id
             WHERE d.estado = 'pendiente' AND {CLAIMABLE_NOW}
               AND (NOT s.ordenado OR {LANE_IS_FREE})))
         RETURNING {JOB_COLUMNS}"
    )
}

/// Retention: deletes up to `limit` `entregada` deliveries (with their
/// attempts) delivered more than `days` days ago. `fallida` rows are never
/// deleted — they are the DLQ — and `pendiente` ones are still owed.
/// Returns how many were deleted.
///
/// Oldest first, from `deliveries_delivered`, then each by its primary
/// key: a pass reads what it deletes, however many rows are pending or
/// failed.
pub async fn purge_delivered(db: impl PgExecutor<'_>, days: i64, limit: i64) -> Result<u64> {
    let done = sqlx::query(PURGE_DELIVERED)
        .bind(days)
        .bind(limit)
        .execute(db)
        .await?;
    Ok(done.rows_affected())
}

/// The statement of [`purge_delivered`]: `$1` days, `$2` limit.
pub(super) const PURGE_DELIVERED: &str = "DELETE FROM deliveries WHERE id = ANY (ARRAY(
             SELECT id FROM deliveries
             WHERE estado = 'entregada' AND entregado_en < now() - make_interval(days => $1::int)
             ORDER BY entregado_en
             LIMIT $2
             FOR UPDATE SKIP LOCKED))";
