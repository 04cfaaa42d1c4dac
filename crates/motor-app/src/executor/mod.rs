//! The executor's side of commands (issue 32): an executor — the user's
//! provider adapter — learns which commands are due (`poll`, the
//! long-poll, or the `{prefix}.commands` topic), claims one with a lease
//! (`claim`), runs it against its provider and reports the outcome under
//! that lease (`claim::report`); it also reports its instance's
//! connection state (`state`). The sweeper (motor-engine) ends what no
//! executor finished: expired commands and leases that ran out.
//!
//! `bell` wakes long-polls of this process when a command becomes
//! claimable here; other processes' commits are seen by the long-poll's
//! periodic re-read.
//!
//! Neighbours: `motor_store::commands` (every transition, each with its
//! ledger event), `motor_store::instance_state`, `motor_domain::command`
//! (the report's rules). Knows no HTTP.

pub mod bell;
pub mod claim;
pub mod poll;
pub mod state;

use std::time::Duration;

use motor_domain::{command::CommandId, InstanceId};
use motor_store::commands::CommandError;

pub use bell::Bell;
pub use claim::{claim, heartbeat, report, ClaimedCommand};
pub use poll::{poll, PollQuery};
pub use state::report_state;

use crate::{access::restricted, Access, AppError};

/// `error_code` of a command whose `generacion_esperada` is no longer the
/// instance's `generation` when an executor claims it (the instance was
/// relinked since it was accepted): it fails before it goes out, so it
/// never leaves through the new link (the seed: "el mensaje no sale por
/// el número nuevo"). Motor's own code.
pub const GENERATION_CHANGED_ERROR_CODE: &str = "generacion_cambiada";

/// Knobs of the executor API of one process.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// A claim's lease: an executor must report within it, or the sweeper
    /// makes the command `ambiguo`.
    pub lease: Duration,
    /// The longest `wait` a long-poll may ask for
    /// (`MOTOR_EXECUTOR_POLL_MAX_WAIT_SECS`).
    pub max_wait: Duration,
    /// The most commands one long-poll answer carries, the largest
    /// `limit` (`MOTOR_EXECUTOR_POLL_MAX_LIMIT`).
    pub max_limit: i64,
    /// How often a waiting long-poll reads again when nothing woke it
    /// (commands committed by another process;
    /// `MOTOR_EXECUTOR_POLL_RECHECK_MS`).
    pub recheck: Duration,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(30),
            max_wait: Duration::from_secs(30),
            max_limit: poll::MAX_LIMIT,
            recheck: Duration::from_millis(250),
        }
    }
}

/// The one mapping of the store's command errors to the application's.
pub(crate) fn command_error(e: CommandError) -> AppError {
    match e {
        CommandError::NotFound => AppError::NotFound("command"),
        CommandError::InstanceNotFound => AppError::NotFound("instance"),
        CommandError::KeyConflict { existing } => AppError::conflict(format!(
            "the Idempotency-Key was used for another request (command {existing})"
        )),
        CommandError::GenerationMismatch { expected, actual } => AppError::conflict(format!(
            "the instance's generation is {actual}, not {expected}"
        )),
        CommandError::Illegal(illegal) => AppError::conflict(format!(
            "the command is {}: it cannot take this transition",
            illegal.from
        )),
        CommandError::LeaseLost => AppError::conflict(
            "the lease is not the command's current one (another claim took it, or it ended)",
        ),
        CommandError::NotDue(at) => AppError::conflict(format!(
            "the command is not due before {}",
            motor_domain::time::format(&at)
        )),
        CommandError::Store(e) => e.into(),
    }
}

/// A key restricted to other instances may not touch this one (403).
pub(crate) fn check_instance(access: &Access, instance: InstanceId) -> Result<(), AppError> {
    if access.restriction.is_empty() || access.restriction.contains(&instance) {
        Ok(())
    } else {
        Err(restricted())
    }
}

/// A command id from a path; one that cannot exist is a 404.
pub fn command_id(raw: &str) -> Result<CommandId, AppError> {
    raw.parse().map_err(|_| AppError::NotFound("command"))
}

/// What the executor API of one process shares: its knobs and the bell
/// its long-polls wait on. The producer side rings
/// [`ExecutorState::bell`] after each command it commits.
#[derive(Debug, Clone, Default)]
pub struct ExecutorState {
    pub bell: Bell,
    pub config: ExecutorConfig,
}
