//! Reads for streams: where an instance's ledger ends, the first cursor
//! still resumable, a range of events with their type, and the live
//! tail's one query for every followed instance at once.

use motor_domain::{time::Timestamp, InstanceId};
use sqlx::PgExecutor;
use uuid::Uuid;

use crate::{Pool, Result};

/// One event as a stream sends it: its seq, type and stored envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEvent {
    pub seq: i64,
    pub event_type: String,
    pub envelope: String,
}

/// The instance's last seq (`None`: no such instance). Every event up to
/// it is committed and visible: `last_seq` moves in the transaction that
/// inserts them.
pub async fn last_seq(db: impl PgExecutor<'_>, instance: InstanceId) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar!(
        "SELECT last_seq FROM instances WHERE id = $1",
        Uuid::from(instance)
    )
    .fetch_optional(db)
    .await?)
}

/// Whether a stream may resume after `cursor`: the next event (if any)
/// was received at or after `cutoff`. `cursor` must be below `last`.
async fn resumable(
    pool: &Pool,
    instance: InstanceId,
    cursor: i64,
    cutoff: Timestamp,
) -> Result<bool> {
    let received: Option<Timestamp> = sqlx::query_scalar!(
        "SELECT recibido_en FROM events WHERE instance_id = $1 AND seq = $2",
        Uuid::from(instance),
        cursor + 1,
    )
    .fetch_optional(pool)
    .await?;
    Ok(received.is_none_or(|at| at >= cutoff))
}

/// Every seq up to this one has had its content redacted by retention
/// (the redaction walks each instance's ledger in seq order); 0: none.
async fn redacted_upto(pool: &Pool, instance: InstanceId) -> Result<i64> {
    Ok(sqlx::query_scalar!(
        "SELECT hasta_seq FROM redaction_marks WHERE instance_id = $1",
        Uuid::from(instance)
    )
    .fetch_optional(pool)
    .await?
    .unwrap_or(0))
}

/// Whether `cursor` (at most `last`) is still resumable at `cutoff`: its
/// next event, if any, was received at or after `cutoff` and still has its
/// content (a stream never hands out a redacted event as new).
pub async fn is_resumable(
    pool: &Pool,
    instance: InstanceId,
    cursor: i64,
    last: i64,
    cutoff: Timestamp,
) -> Result<bool> {
    if cursor >= last {
        return Ok(true);
    }
    if cursor < redacted_upto(pool, instance).await? {
        return Ok(false);
    }
    resumable(pool, instance, cursor, cutoff).await
}

/// The first cursor still resumable at `cutoff` (`primer_cursor`): past
/// the instance's redacted prefix and past the window, the latter found by a
/// binary search over seq by primary key (`recibido_en` follows seq, give
/// or take the clocks of concurrent writers), so it costs a few lookups
/// whatever the ledger's size, with no index on `recibido_en`. The answer
/// is always itself resumable.
pub async fn first_resumable(
    pool: &Pool,
    instance: InstanceId,
    last: i64,
    cutoff: Timestamp,
) -> Result<i64> {
    // Past the redacted prefix, then past the window.
    let redacted = redacted_upto(pool, instance).await?.min(last);
    Ok(first_within(pool, instance, last, cutoff)
        .await?
        .max(redacted))
}

/// The first cursor whose next event was received at or after `cutoff`.
async fn first_within(
    pool: &Pool,
    instance: InstanceId,
    last: i64,
    cutoff: Timestamp,
) -> Result<i64> {
    if last == 0 || resumable(pool, instance, 0, cutoff).await? {
        return Ok(0);
    }
    // Invariant: `lo` is not resumable, `hi` is (`last` always is).
    let (mut lo, mut hi) = (0, last);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if resumable(pool, instance, mid, cutoff).await? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// Events with `after < seq <= upto` of `types` (empty = all), at most
/// `limit`, in seq order.
pub async fn read_range(
    db: impl PgExecutor<'_>,
    instance: InstanceId,
    after: i64,
    upto: i64,
    types: &[&str],
    limit: i64,
) -> Result<Vec<StreamEvent>> {
    let rows = sqlx::query_as!(
        StreamEvent,
        r#"SELECT seq, type AS event_type, envelope FROM events
           WHERE instance_id = $1 AND seq > $2 AND seq <= $3
             AND (cardinality($4::text[]) = 0 OR type = ANY($4))
           ORDER BY seq LIMIT $5"#,
        Uuid::from(instance),
        after,
        upto,
        types as &[&str],
        limit,
    )
    .fetch_all(db)
    .await?;
    Ok(rows)
}

/// The live tail's poll: for each `(instance, after)`, its next events
/// (at most `limit` each), in one statement — one index range per
/// followed instance, whatever the number of clients.
pub async fn read_after_many(
    db: impl PgExecutor<'_>,
    instances: &[(InstanceId, i64)],
    limit: i64,
) -> Result<Vec<(InstanceId, StreamEvent)>> {
    let ids: Vec<Uuid> = instances.iter().map(|(i, _)| Uuid::from(*i)).collect();
    let afters: Vec<i64> = instances.iter().map(|(_, a)| *a).collect();
    let rows = sqlx::query!(
        r#"SELECT w.id AS "id!", e.seq, e.type, e.envelope
           FROM unnest($1::uuid[], $2::bigint[]) AS w(id, after)
           CROSS JOIN LATERAL (
               SELECT seq, type, envelope FROM events
               WHERE instance_id = w.id AND seq > w.after
               ORDER BY seq LIMIT $3
           ) e
           ORDER BY w.id, e.seq"#,
        &ids,
        &afters,
        limit,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let event = StreamEvent {
                seq: row.seq,
                event_type: row.r#type,
                envelope: row.envelope,
            };
            (InstanceId::from_uuid(row.id), event)
        })
        .collect())
}
