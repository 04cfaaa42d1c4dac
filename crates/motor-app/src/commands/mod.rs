//! Commands, the producer's side (issue 32): a send (`chat` +
//! `contenido`) or any other kind (`tipo` + `parametros`) accepted for an
//! instance, one command read, an instance's commands listed, a command
//! cancelled. Each operation takes the pool (an accept, the process's
//! [`Acceptor`]), the caller and the time it acts at, and owns its
//! transaction: an accepted command is answered only after its row, its
//! `command.accepted` and its `{prefix}.commands` record are committed,
//! in the group commit of the requests that came with it (`accept`). The
//! writes take the process's `AfterCommit` too, when it has one: told
//! after each commit that wrote, it wakes the relay (the command's record,
//! the event's deliveries) and the streams' tail at once instead of at
//! their next poll.
//!
//! Neighbours: `motor_domain::command` (the request's rules, the state
//! machine), `motor_store::commands` (the rows and their transitions).
//! The executor's side (claim, report) is `executor`.

mod accept;
mod query;

use std::collections::HashMap;

use chrono::DateTime;
use motor_domain::{
    command::{
        CommandId, CommandKind, IdempotencyKey, NewCommand, RawOperation, RawSend, Transition,
    },
    principal::Principal,
    time::Timestamp,
    FieldError, InstanceId,
};
use motor_store::{
    commands::{self as store, Command, CommandError, ListFilter},
    deliveries::{AfterCommit, Handed},
    Pool,
};

pub use self::{
    accept::Acceptor,
    query::{ListQuery, DEFAULT_PER_PAGE, MAX_PER_PAGE},
};
use crate::{access::restricted, AppError, Result};

/// An accepted command, and whether this request stored it (`false` when
/// its `Idempotency-Key` found the command of an earlier, identical
/// request).
#[derive(Debug, Clone)]
pub struct Submitted {
    pub command: Command,
    pub created: bool,
}

/// One page of an instance's commands, newest first.
#[derive(Debug)]
pub struct CommandPage {
    pub commands: Vec<Command>,
    pub page: i64,
    pub per_page: i64,
    pub has_more: bool,
}

/// Accepts a send (`mensaje`) for `instance`: its `Idempotency-Key`
/// (`key`, the header as it arrived) is required. Born `en_cola`, due at
/// once, with its `command.accepted`.
pub async fn send(
    acceptor: &Acceptor,
    caller: &Principal,
    instance: InstanceId,
    key: Option<&str>,
    raw: RawSend<'_>,
    now: Timestamp,
) -> Result<Submitted> {
    let key = IdempotencyKey::for_kind(key, CommandKind::Message)?;
    let parse = |at| NewCommand::send(raw, at);
    accept(acceptor, caller, instance, key, parse, now).await
}

/// Accepts any other kind (`tipo`: a remote operation or instance
/// control) for `instance`; its `Idempotency-Key` is optional. Born
/// `aceptado`; a remote operation appends `command.accepted`, a control
/// command nothing.
pub async fn submit(
    acceptor: &Acceptor,
    caller: &Principal,
    instance: InstanceId,
    key: Option<&str>,
    raw: RawOperation<'_>,
    now: Timestamp,
) -> Result<Submitted> {
    let key = key.map(IdempotencyKey::parse).transpose()?;
    let parse = |at| NewCommand::operation(raw, at);
    accept(acceptor, caller, instance, key, parse, now).await
}

/// Parses the request as of `now` and queues it for the next group
/// commit (the store resolves the key first, then `generacion_esperada`,
/// in queue order). A key is
/// resolved before every other check, also before `expires_at` must be in
/// the future: a repeat that arrives after the `expires_at` of the request
/// it repeats answers the stored command, not a 422.
async fn accept(
    acceptor: &Acceptor,
    caller: &Principal,
    instance: InstanceId,
    key: Option<IdempotencyKey>,
    parse: impl Fn(Timestamp) -> Result<NewCommand, FieldError>,
    now: Timestamp,
) -> Result<Submitted> {
    if !caller.may_access(instance) {
        return Err(restricted());
    }
    let new = match (parse(now), &key) {
        (Ok(new), _) => new,
        (Err(late), Some(key)) if late.field == "expires_at" => {
            // Only a past `expires_at` passes when parsed as of the
            // calendar's start; a malformed one fails again.
            let Ok(repeat) = parse(DateTime::<chrono::Utc>::MIN_UTC) else {
                return Err(late.into());
            };
            let mut conn = acceptor.pool.acquire().await?;
            return match store::find_repeat(&mut conn, caller.app_id, instance, &repeat, key)
                .await
                .map_err(command_error)?
            {
                Some(command) => Ok(Submitted {
                    command,
                    created: false,
                }),
                None => Err(late.into()),
            };
        }
        (Err(e), _) => return Err(e.into()),
    };
    let accepted = acceptor
        .accept(accept::Pending {
            app: caller.app_id,
            instance,
            new,
            key,
            now,
        })
        .await?;
    Ok(Submitted {
        command: accepted.command,
        created: accepted.created,
    })
}

/// One of the caller's commands; one of another app, or of an instance
/// outside a key's restriction, is not found, as an unknown one.
pub async fn get(pool: &Pool, caller: &Principal, id: CommandId) -> Result<Command> {
    store::get(pool, Some(caller.app_id), id)
        .await
        .map_err(command_error)?
        .filter(|c| caller.may_access(c.instance_id))
        .ok_or(AppError::NotFound("command"))
}

/// A page of `instance`'s commands filtered by the raw query (`status`,
/// `pagina`, `por_pagina`), newest first. The caller has checked that the
/// instance is the app's.
pub async fn list(
    pool: &Pool,
    caller: &Principal,
    instance: InstanceId,
    params: &HashMap<String, String>,
) -> Result<CommandPage> {
    let query = ListQuery::parse(params)?;
    if !caller.may_access(instance) {
        return Err(restricted());
    }
    let filter = ListFilter {
        app: caller.app_id,
        instance,
        statuses: query.statuses,
        offset: (query.page - 1) * query.per_page,
        limit: query.per_page + 1,
    };
    let mut commands = store::list(pool, &filter).await.map_err(command_error)?;
    let has_more = commands.len() as i64 > query.per_page;
    commands.truncate(query.per_page as usize);
    Ok(CommandPage {
        commands,
        page: query.page,
        per_page: query.per_page,
        has_more,
    })
}

/// Cancels one of the caller's commands while `aceptado` or `en_cola`,
/// appending `command.cancelled` in the same transaction; once an executor
/// claimed it (or it ended) the answer is a conflict, since it may have
/// had an effect outside.
pub async fn cancel(
    pool: &Pool,
    after_commit: Option<&dyn AfterCommit>,
    caller: &Principal,
    id: CommandId,
    now: Timestamp,
) -> Result<Command> {
    let mut tx = pool.begin().await?;
    store::get(&mut *tx, Some(caller.app_id), id)
        .await
        .map_err(command_error)?
        .filter(|c| caller.may_access(c.instance_id))
        .ok_or(AppError::NotFound("command"))?;
    let command = store::cancel(&mut tx, caller.app_id, id, now)
        .await
        .map_err(command_error)?;
    tx.commit().await?;
    committed(after_commit);
    Ok(command)
}

/// A commit wrote an event and an outbox record: wake who follows them.
fn committed(after_commit: Option<&dyn AfterCommit>) {
    if let Some(after_commit) = after_commit {
        after_commit.committed(Handed::default());
    }
}

/// What each refusal of the store means to a caller: unknown (or another
/// app's) command or instance 404; a reused key, a stale
/// `generacion_esperada`, a transition the status does not allow, a lost
/// lease or a claim before `next_try` 409.
pub fn command_error(e: CommandError) -> AppError {
    match e {
        CommandError::NotFound => AppError::NotFound("command"),
        CommandError::InstanceNotFound => AppError::NotFound("instance"),
        CommandError::KeyConflict { existing } => AppError::conflict(format!(
            "this Idempotency-Key was used for another request (command {existing}); \
             use a new key for a new command"
        )),
        CommandError::GenerationMismatch { expected, actual } => AppError::conflict(format!(
            "generacion_esperada is {expected} but the instance's generation is {actual} \
             (it was relinked); nothing was stored"
        )),
        CommandError::Illegal(illegal) if illegal.transition == Transition::Cancel => {
            AppError::conflict(format!(
                "the command is {}: only an aceptado or en_cola command can be cancelled \
                 (once an executor took it, it may have had an effect outside)",
                illegal.from
            ))
        }
        CommandError::Illegal(illegal) => AppError::conflict(illegal.to_string()),
        e @ (CommandError::LeaseLost | CommandError::NotDue(_)) => {
            AppError::conflict(e.to_string())
        }
        CommandError::Store(e) => e.into(),
    }
}
