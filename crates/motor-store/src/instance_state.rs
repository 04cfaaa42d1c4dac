//! An instance's connection state as its executor reports it: the
//! `instances.estado` column and the `state.changed` event a change
//! appends, in one transaction; a relink also bumps `generation` before
//! the event is written, so the event is the first of the new
//! generation and every earlier event keeps the one it was born under.

use motor_domain::{
    command::CommandId,
    instance_state::{InstanceState, StateReport},
    time::Timestamp,
    AppId, InstanceId,
};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::{ledger, Result, StoreError};

/// What a state report did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateChange {
    pub state: InstanceState,
    /// The state before (`None`: never reported).
    pub previous: Option<InstanceState>,
    /// The instance's generation now.
    pub generation: i64,
    /// The `state.changed` event's seq; `None` when nothing changed (the
    /// same state again, no relink: nothing is appended).
    pub seq: Option<i64>,
}

/// Records `report` for `instance` of `app` in the caller's transaction.
/// `command_id`, when given, is cited by the event (the control command
/// whose effect this is; the caller checked it is the instance's).
/// Another app's instance is [`StoreError::NotFound`].
pub async fn report(
    conn: &mut PgConnection,
    app: AppId,
    instance: InstanceId,
    report: &StateReport,
    command_id: Option<CommandId>,
    now: Timestamp,
) -> Result<StateChange> {
    let row = sqlx::query!(
        "SELECT app_id, estado, generation FROM instances WHERE id = $1 FOR NO KEY UPDATE",
        Uuid::from(instance),
    )
    .fetch_optional(&mut *conn)
    .await?
    .filter(|row| row.app_id == Uuid::from(app))
    .ok_or(StoreError::NotFound("instance"))?;
    let previous = row.estado.as_deref().and_then(InstanceState::parse);
    if !report.changes(previous) {
        return Ok(StateChange {
            state: report.state,
            previous,
            generation: row.generation,
            seq: None,
        });
    }
    sqlx::query!(
        "UPDATE instances
         SET estado = $2, estado_desde = $3, generation = generation + $4
         WHERE id = $1",
        Uuid::from(instance),
        report.state.as_str(),
        now,
        i64::from(report.relinked),
    )
    .execute(&mut *conn)
    .await?;
    // The row is ours until commit; this reads the bumped generation.
    let locked = ledger::lock_instance(&mut *conn, instance).await?;
    let command_id = command_id.map(|id| id.to_string());
    let event = report.to_event(previous, command_id.as_deref());
    ledger::append_locked(&mut *conn, locked, &[event]).await?;
    Ok(StateChange {
        state: report.state,
        previous,
        generation: locked.generation,
        seq: Some(locked.last_seq + 1),
    })
}
