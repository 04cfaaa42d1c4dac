//! Bringing lanes back: on reactivation ([`release_lane_heads`]) and when a
//! wake-up was lost ([`due_lane_heads`] then [`requeue`]), so progress never
//! depends on one message.

use std::time::Duration;

use motor_domain::{
    delivery::{DeliveryId, DeliveryJob, Lane},
    subscription::SubscriptionId,
};
use sqlx::{Acquire, PgConnection, Postgres};

use super::{by_key, enqueue, uuids, JobRow, LaneHints};
use crate::Result;

/// Writes a job for the head of every lane of an `activa` subscription (for
/// an unordered one, for its 1,000 oldest due open deliveries: each of
/// their attempts claims the next one when it records, so the rest follow
/// at the receiver's pace, and a million parked deliveries never become a
/// million jobs in one transaction), skipping deliveries whose
/// lease is live (an attempt is in flight). Call it in the transaction that
/// makes the subscription `activa` again (PATCH, or the operator), after the
/// change. Jobs keep the delivery's own due time (a retry still waits its
/// schedule). Returns the jobs written. Sequential and bitmap scans stay
/// off for the rest of the transaction ([`super::BY_KEY_SETUP`]).
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
/// not one lane check per delivery. An unordered one releases at most
/// 1,000 (one range of `deliveries_open_due_by_subscription`), or for a
/// replay's lane every open delivery of that lane (at most the replay's
/// 10,000): its cost is its output. (`OFFSET 0` and `LIMIT` keep those
/// branches subqueries run only for the subscription that passed, so an
/// ordered subscription never reads its open deliveries there.)
async fn release(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
    lane: Option<Lane>,
) -> Result<Vec<DeliveryJob>> {
    by_key(conn).await?;
    let rows = sqlx::query_file_as!(
        JobRow,
        "src/deliveries/sql/release.sql",
        subscription.as_uuid(),
        lane.map(|l| l.to_string()),
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut jobs: Vec<DeliveryJob> = rows.into_iter().map(JobRow::next_job).collect();
    jobs.sort_by_key(|j| (*j.instance_id.as_uuid(), j.seq));
    enqueue(conn, &jobs).await?;
    Ok(jobs)
}

/// Deliveries that should be moving but may have no live job: `pendiente`,
/// subscription `activa`, head of their lane (any open one for an unordered
/// subscription), and either leased with the lease expired (the attempt's
/// process died) or unleased and due for at least `stale_after` (its job was
/// lost, or its park raced the head's finish). Oldest due first, at most
/// `limit`. Read-only: pass them to [`requeue`], which checks again.
///
/// A walk with no hints: the sweeper keeps a [`LaneHints`] between passes
/// and calls [`LaneHints::due_lane_heads`].
pub async fn due_lane_heads<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    stale_after: Duration,
    limit: i64,
) -> Result<Vec<DeliveryId>> {
    LaneHints::default()
        .due_lane_heads(db, stale_after, limit)
        .await
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
/// Its transaction turns sequential and bitmap scans off
/// ([`super::BY_KEY_SETUP`]).
pub async fn requeue<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    ids: &[DeliveryId],
) -> Result<Vec<DeliveryJob>> {
    let mut tx = db.begin().await?;
    by_key(&mut tx).await?;
    let rows = sqlx::query_file_as!(JobRow, "src/deliveries/sql/requeue.sql", &uuids(ids))
        .fetch_all(&mut *tx)
        .await?;
    let mut jobs: Vec<DeliveryJob> = rows.into_iter().map(JobRow::next_job).collect();
    jobs.sort_by_key(|j| (*j.instance_id.as_uuid(), j.seq));
    enqueue(&mut tx, &jobs).await?;
    tx.commit().await?;
    Ok(jobs)
}
