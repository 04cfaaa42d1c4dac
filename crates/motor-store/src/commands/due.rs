//! What an executor may claim now: an instance's commands `aceptado` or
//! `en_cola` whose `next_try` is due and whose `expires_at` has not
//! passed, oldest first (acceptance order). The long-poll of
//! `GET /v1/executor/commands` reads it; the claim decides who gets each.

use motor_domain::{
    command::{CommandId, CommandKind},
    outbox::CommandJob,
    time::Timestamp,
    AppId, InstanceId,
};
use sqlx::PgConnection;
use uuid::Uuid;

use super::CommandError;

/// Up to `limit` of `instance`'s claimable commands at `now`, in
/// acceptance order, as the `{prefix}.commands` records describe them;
/// and the earliest `next_try` after `now` among its other open commands
/// (when the next one falls due), for a waiter to sleep until.
pub async fn due(
    conn: &mut PgConnection,
    app: AppId,
    instance: InstanceId,
    now: Timestamp,
    limit: i64,
) -> Result<(Vec<CommandJob>, Option<Timestamp>), CommandError> {
    // Both read only open rows (the partial index `commands_open`).
    let rows = sqlx::query!(
        "SELECT id, tipo AS kind, next_try
         FROM commands
         WHERE instance_id = $1 AND app_id = $2 AND status IN ('aceptado', 'en_cola')
           AND (next_try IS NULL OR next_try <= $3)
           AND (expires_at IS NULL OR expires_at > $3)
         ORDER BY creado_en, id
         LIMIT $4",
        Uuid::from(instance),
        Uuid::from(app),
        now,
        limit,
    )
    .fetch_all(&mut *conn)
    .await?;
    let next = sqlx::query_scalar!(
        "SELECT min(next_try) FROM commands
         WHERE instance_id = $1 AND app_id = $2 AND status IN ('aceptado', 'en_cola')
           AND next_try > $3",
        Uuid::from(instance),
        Uuid::from(app),
        now,
    )
    .fetch_one(&mut *conn)
    .await?;
    let jobs = rows
        .into_iter()
        .map(|row| {
            let kind = CommandKind::parse(&row.kind).ok_or_else(|| {
                sqlx::Error::Decode(format!("commands: unknown tipo {:?}", row.kind).into())
            })?;
            Ok(CommandJob {
                command_id: CommandId::from_uuid(row.id),
                instance_id: instance,
                kind,
                next_try: row.next_try,
            })
        })
        .collect::<Result<_, sqlx::Error>>()?;
    Ok((jobs, next))
}
