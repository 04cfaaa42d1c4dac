//! Claim and report: the two steps of one execution. A claim is the
//! store's compare-and-set (`aceptado`/`en_cola` → `ejecutando`, so of a
//! claim and a cancel racing exactly one wins) and hands the executor the
//! command's full content and a lease token; the report presents that
//! token with the outcome. Each is one transaction with its event.

use std::time::Duration;

use motor_domain::{
    command::{CommandId, RawReport, Report, Stage},
    time, FieldError,
};
use motor_store::{
    commands::{self, Claimed, Command},
    ledger, Pool,
};
use uuid::Uuid;

use super::{check_instance, command_error, Bell, GENERATION_CHANGED_ERROR_CODE};
use crate::{Access, AppError, Result};

/// A command now `ejecutando` for the caller, and the lease it reports
/// under (until `command.lease_until`).
#[derive(Debug, Clone)]
pub struct ClaimedCommand {
    pub command: Command,
    pub lease: Uuid,
}

/// Claims command `id` for `lease`. Refusals: another app's or unknown,
/// 404; a key restricted to other instances, 403; not claimable (claimed,
/// finished, cancelled, not due yet), 409. A command whose `expires_at`
/// passed is expired instead (`fallido`, `comando_vencido`, committed) and
/// the answer is a 409 saying so; one whose `generacion_esperada` is no
/// longer the instance's generation is failed the same way with
/// [`GENERATION_CHANGED_ERROR_CODE`]. Nobody runs either.
pub async fn claim(
    pool: &Pool,
    access: &Access,
    id: CommandId,
    lease: Duration,
) -> Result<ClaimedCommand> {
    // Most claims are one statement; the rest (bound to a generation,
    // refused, expired) take the transaction below, which says why.
    let alone = commands::claim_alone(
        pool,
        access.app,
        id,
        lease,
        time::now_millis(),
        &access.restriction,
    )
    .await
    .map_err(command_error)?;
    if let Some((command, lease)) = alone {
        return Ok(ClaimedCommand { command, lease });
    }
    let mut tx = pool.begin().await?;
    let current = commands::get(&mut *tx, Some(access.app), id)
        .await
        .map_err(command_error)?
        .ok_or(AppError::NotFound("command"))?;
    if check_instance(access, current.instance_id).is_err() {
        return Err(AppError::NotFound("command"));
    }
    // A command bound to a generation: lock the instance first (the lock
    // order of every command write: instance, then command), so a relink
    // cannot slip between the check and the claim.
    let generation = match current.expected_generation {
        Some(_) => Some(
            ledger::lock_instance(&mut tx, current.instance_id)
                .await?
                .generation,
        ),
        None => None,
    };
    let now = time::now_millis();
    let claimed = commands::claim(&mut tx, access.app, id, lease, now)
        .await
        .map_err(command_error)?;
    let (command, token) = match claimed {
        Claimed::Claimed { command, lease } => (command, lease),
        Claimed::Expired(_) => {
            tx.commit().await?;
            return Err(AppError::conflict(
                "the command's expires_at passed: it is now fallido with comando_vencido",
            ));
        }
    };
    if let (Some(expected), Some(actual)) = (command.expected_generation, generation) {
        if expected != actual {
            let failed = Report::Failed {
                error_code: GENERATION_CHANGED_ERROR_CODE.into(),
                stage: Stage::Before,
                server_code: None,
                provider_message_id: None,
            };
            commands::report(&mut tx, access.app, id, token, &failed, now)
                .await
                .map_err(command_error)?;
            tx.commit().await?;
            return Err(AppError::conflict(format!(
                "the instance was relinked (generation {actual}, the command expected \
                 {expected}): it is now fallido with {GENERATION_CHANGED_ERROR_CODE}"
            )));
        }
    }
    tx.commit().await?;
    Ok(ClaimedCommand {
        command,
        lease: token,
    })
}

/// Records an executor's report on command `id` held under `lease` (the
/// token its claim answered, as text; `None` when absent). Bad input is
/// a field error naming `reserva` or the report's field (bare names);
/// another token, or a command no longer `ejecutando`, 409. A deferral
/// rings `bell`: the command is claimable again at its `next_try`.
pub async fn report(
    pool: &Pool,
    bell: &Bell,
    access: &Access,
    id: CommandId,
    lease: Option<&str>,
    raw: RawReport<'_>,
) -> Result<Command> {
    let lease = parse_lease(lease)?;
    let mut tx = pool.begin().await?;
    let current = commands::get(&mut *tx, Some(access.app), id)
        .await
        .map_err(command_error)?
        .ok_or(AppError::NotFound("command"))?;
    if check_instance(access, current.instance_id).is_err() {
        return Err(AppError::NotFound("command"));
    }
    let report = Report::parse(raw, current.kind)?;
    let command = commands::report(&mut tx, access.app, id, lease, &report, time::now_millis())
        .await
        .map_err(command_error)?;
    tx.commit().await?;
    if matches!(report, Report::Deferred { .. }) {
        bell.ring(command.instance_id);
    }
    Ok(command)
}

/// An executor's heartbeat on command `id` held under `lease` (the claim's
/// token, as text): the lease now ends `extend` from now, never sooner
/// than it did. Bad input names `reserva`; unknown or another app's
/// command 404; another token, or a command no longer `ejecutando` (it was
/// reported, or the sweeper ended the lease first: the command is
/// `ambiguo`), 409 — the executor has lost it and must not report.
pub async fn heartbeat(
    pool: &Pool,
    access: &Access,
    id: CommandId,
    lease: Option<&str>,
    extend: Duration,
) -> Result<Command> {
    let lease = parse_lease(lease)?;
    let mut conn = pool.acquire().await?;
    let current = commands::get(&mut *conn, Some(access.app), id)
        .await
        .map_err(command_error)?
        .ok_or(AppError::NotFound("command"))?;
    if check_instance(access, current.instance_id).is_err() {
        return Err(AppError::NotFound("command"));
    }
    commands::extend_lease(&mut conn, access.app, id, lease, extend, time::now_millis())
        .await
        .map_err(command_error)
}

/// The lease token a report or heartbeat presents (`reserva`).
fn parse_lease(lease: Option<&str>) -> Result<Uuid> {
    let lease = lease.ok_or_else(|| {
        FieldError::invalid("reserva", "is required: the lease token the claim answered")
    })?;
    Ok(lease
        .parse()
        .map_err(|_| FieldError::invalid("reserva", "must be the uuid the claim answered"))?)
}
