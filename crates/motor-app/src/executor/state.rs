//! An instance's connection state reported by its executor
//! (`motor_store::instance_state`): a change appends `state.changed`, a
//! relink bumps the instance's `generation`, in one transaction.

use motor_domain::{
    instance_state::{RawStateReport, StateReport},
    time, FieldError, InstanceId,
};
use motor_store::{commands, instance_state, instance_state::StateChange, Pool};

use super::{check_instance, command_error};
use crate::{Access, Result};

/// Records `raw` for `instance` (already known to be the caller's app's).
/// `command_id`, when given, must be a command of this instance (422 on
/// `command_id` otherwise); the event cites it.
pub async fn report_state(
    pool: &Pool,
    access: &Access,
    instance: InstanceId,
    raw: RawStateReport<'_>,
    command_id: Option<&str>,
) -> Result<StateChange> {
    check_instance(access, instance)?;
    let report = StateReport::parse(raw)?;
    let mut tx = pool.begin().await?;
    let command_id = match command_id {
        None => None,
        Some(raw) => {
            let not_ours =
                || FieldError::invalid("command_id", "must be a command of this instance");
            let id = raw.parse().map_err(|_| not_ours())?;
            let command = commands::get(&mut *tx, Some(access.app), id)
                .await
                .map_err(command_error)?;
            match command {
                Some(c) if c.instance_id == instance => Some(id),
                _ => return Err(not_ours().into()),
            }
        }
    };
    let change = instance_state::report(
        &mut tx,
        access.app,
        instance,
        &report,
        command_id,
        time::now_millis(),
    )
    .await?;
    tx.commit().await?;
    Ok(change)
}
