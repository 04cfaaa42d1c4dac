//! The sweeper's two jobs on commands: a command whose `expires_at` passed
//! before any claim ends `fallido` with `comando_vencido`, and one whose
//! executor's lease ran out while `ejecutando` ends `ambiguo` at the
//! `frontera` (Motor never sends it again by itself). Each is the same
//! compare-and-set as any transition, so a claim or a report that gets
//! there first wins and the sweeper skips the command.
//!
//! Each looks for due commands with one statement on the connection and
//! opens a transaction only for what it found (a savepoint inside a
//! caller's transaction): the sweeper's pass every second, nearly always
//! with nothing due, is then one round trip for each, not three (`BEGIN`,
//! the read, `COMMIT`), each a wake-up of a Postgres backend and of Motor
//! (docs/BENCHMARKS.md, "Low-rate CPU", 2026-12-07 20:08).

use motor_domain::{
    command::{CommandId, Transition, EXPIRED_ERROR_CODE, LEASE_EXPIRED_ERROR_CODE},
    time::Timestamp,
};
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use super::{
    transition::{apply, Change},
    Command, CommandError,
};

/// Expires up to `limit` commands not claimed by their `expires_at`,
/// appending `command.failed` for each, in one transaction (when any is
/// due). Answers the commands it expired.
pub async fn expire_due(
    conn: &mut PgConnection,
    now: Timestamp,
    limit: i64,
) -> Result<Vec<Command>, CommandError> {
    let due = sqlx::query!(
        "SELECT id, instance_id FROM commands
         WHERE status IN ('aceptado', 'en_cola') AND expires_at IS NOT NULL AND expires_at <= $1
         ORDER BY expires_at LIMIT $2",
        now,
        limit,
    )
    .fetch_all(&mut *conn)
    .await?;
    let due = due.into_iter().map(|r| (r.instance_id, r.id)).collect();
    settle(conn, due, Transition::Expired, EXPIRED_ERROR_CODE, now).await
}

/// Makes up to `limit` commands whose lease ended before a report
/// `ambiguo` (stage `frontera`, `error_code` `reserva_vencida`), appending
/// `command.ambiguous` for each, in one transaction (when any is due).
/// Answers the commands it changed.
pub async fn expire_leases(
    conn: &mut PgConnection,
    now: Timestamp,
    limit: i64,
) -> Result<Vec<Command>, CommandError> {
    let due = sqlx::query!(
        "SELECT id, instance_id FROM commands
         WHERE status = 'ejecutando' AND reservado_hasta <= $1
         ORDER BY reservado_hasta LIMIT $2",
        now,
        limit,
    )
    .fetch_all(&mut *conn)
    .await?;
    let due = due.into_iter().map(|r| (r.instance_id, r.id)).collect();
    settle(
        conn,
        due,
        Transition::LeaseExpired,
        LEASE_EXPIRED_ERROR_CODE,
        now,
    )
    .await
}

/// Applies `transition` to each `(instance, command)`, in instance order
/// (the order every writer locks instances in, so two sweepers never
/// deadlock), in one transaction opened only when there are any; one that
/// changed since it was read is skipped.
async fn settle(
    conn: &mut PgConnection,
    mut due: Vec<(Uuid, Uuid)>,
    transition: Transition,
    error_code: &str,
    now: Timestamp,
) -> Result<Vec<Command>, CommandError> {
    if due.is_empty() {
        return Ok(Vec::new());
    }
    due.sort();
    let mut tx = conn.begin().await?;
    let mut done = Vec::with_capacity(due.len());
    for (_, id) in due {
        let change = Change {
            error_code: Some(error_code),
            ..Change::new(transition, None, CommandId::from_uuid(id), now)
        };
        match apply(&mut tx, change).await {
            Ok(command) => done.push(command),
            Err(CommandError::Illegal(_) | CommandError::NotFound) => {}
            Err(e) => return Err(e),
        }
    }
    tx.commit().await?;
    Ok(done)
}
