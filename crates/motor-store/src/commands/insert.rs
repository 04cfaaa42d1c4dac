//! Storing a new command. The instance's row is locked first, so requests
//! for one instance are serialised and fifty identical ones make one
//! command; then, in this order: the Idempotency-Key (a repeat answers the
//! stored command even after a relink), `generacion_esperada`, the row,
//! `command.accepted` (sends and remote operations) and the command's
//! `{prefix}.commands` record.

use motor_domain::{
    command::{
        events::EventFacts, CommandEvent, CommandId, CommandStatus, IdempotencyKey, NewCommand,
        Payload,
    },
    outbox::{CommandJob, OutboxRecord},
    time::Timestamp,
    AppId, InstanceId,
};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use super::{Command, CommandError, CommandRow};
use crate::{ledger, outbox, StoreError};

/// A stored command and whether this request stored it.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub command: Command,
    /// `false` when the Idempotency-Key found the command of an earlier,
    /// identical request.
    pub created: bool,
}

/// Stores `new` for `instance` of `app`, with its event and outbox record,
/// in the caller's transaction; `now` stamps it (and is a send's
/// `next_try`). Refuses an instance of another app as
/// [`CommandError::InstanceNotFound`], the same key with another request
/// as [`CommandError::KeyConflict`] and a stale `generacion_esperada` as
/// [`CommandError::GenerationMismatch`].
pub async fn insert(
    conn: &mut PgConnection,
    app: AppId,
    instance: InstanceId,
    new: &NewCommand,
    key: Option<&IdempotencyKey>,
    now: Timestamp,
) -> Result<Accepted, CommandError> {
    let locked = match ledger::lock_instance(&mut *conn, instance).await {
        Err(StoreError::NotFound(_)) => return Err(CommandError::InstanceNotFound),
        other => other?,
    };
    let owner = sqlx::query_scalar!(
        "SELECT app_id FROM instances WHERE id = $1",
        Uuid::from(instance)
    )
    .fetch_one(&mut *conn)
    .await?;
    if owner != Uuid::from(app) {
        return Err(CommandError::InstanceNotFound);
    }
    let fingerprint = new.fingerprint();
    if let Some(key) = key {
        if let Some(existing) = by_key(&mut *conn, app, instance, key).await? {
            return if existing.1 == fingerprint.0 {
                Ok(Accepted {
                    command: existing.0,
                    created: false,
                })
            } else {
                Err(CommandError::KeyConflict {
                    existing: existing.0.id,
                })
            };
        }
    }
    if let Some(expected) = new.options.expected_generation {
        if expected != locked.generation {
            return Err(CommandError::GenerationMismatch {
                expected,
                actual: locked.generation,
            });
        }
    }

    let kind = new.kind();
    let status = kind.initial_status();
    let next_try = (status == CommandStatus::Queued).then_some(now);
    let (content, parameters) = match &new.payload {
        Payload::Send { content, .. } => (Some(Value::Object(content.clone())), None),
        Payload::Operation { parameters, .. } => (None, Some(Value::Object(parameters.clone()))),
    };
    let row = sqlx::query_as!(
        CommandRow,
        "INSERT INTO commands (id, app_id, instance_id, tipo, chat, contenido, parametros, status,
                               next_try, expires_at, correlation_id, generacion_esperada,
                               generation, idempotency_key, request_hash, creado_en, actualizado_en)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16)
         RETURNING id, app_id, instance_id, tipo AS kind, chat, contenido AS content,
                   parametros AS parameters, status, next_try, error_code, stage, server_code,
                   provider_message_id, aceptado_en AS accepted_at, expires_at, correlation_id,
                   generacion_esperada AS expected_generation, generation, idempotency_key,
                   reclamos AS claims, reservado_hasta AS lease_until, creado_en AS created_at,
                   actualizado_en AS updated_at",
        Uuid::from(CommandId::new()),
        Uuid::from(app),
        Uuid::from(instance),
        kind.as_str(),
        new.chat(),
        content,
        parameters,
        status.as_str(),
        next_try,
        new.options.expires_at,
        new.options.correlation_id.as_deref(),
        new.options.expected_generation,
        locked.generation,
        key.map(IdempotencyKey::as_str),
        &fingerprint.0[..],
        now,
    )
    .fetch_one(&mut *conn)
    .await?;
    let command = Command::try_from(row)?;

    if kind.appends_accepted() {
        let event = CommandEvent::Accepted.to_event(&EventFacts {
            chat: command.chat.as_deref(),
            correlation_id: command.correlation_id.as_deref(),
            ..EventFacts::of(command.id, kind)
        });
        ledger::append_locked(&mut *conn, locked, &[event]).await?;
    }
    outbox::insert(&mut *conn, [OutboxRecord::command(&job(&command))]).await?;
    Ok(Accepted {
        command,
        created: true,
    })
}

/// The command an earlier request stored under `key` for `instance` of
/// `app`, when it asked for the same as `new` (its fingerprint); the same
/// key with another request is [`CommandError::KeyConflict`], an unknown
/// key `None`. Stores nothing: for a repeat that fails a check which
/// depends on the time it arrives (an `expires_at` now past), since a key
/// is resolved before every other check.
pub async fn find_repeat(
    conn: &mut PgConnection,
    app: AppId,
    instance: InstanceId,
    new: &NewCommand,
    key: &IdempotencyKey,
) -> Result<Option<Command>, CommandError> {
    match by_key(conn, app, instance, key).await? {
        None => Ok(None),
        Some((command, hash)) if hash == new.fingerprint().0 => Ok(Some(command)),
        Some((command, _)) => Err(CommandError::KeyConflict {
            existing: command.id,
        }),
    }
}

/// The `{prefix}.commands` record's content for `command`.
pub(super) fn job(command: &Command) -> CommandJob {
    CommandJob {
        command_id: command.id,
        instance_id: command.instance_id,
        kind: command.kind,
        next_try: command.next_try,
    }
}

/// The command stored under `key`, with its request's fingerprint.
async fn by_key(
    conn: &mut PgConnection,
    app: AppId,
    instance: InstanceId,
    key: &IdempotencyKey,
) -> Result<Option<(Command, Vec<u8>)>, CommandError> {
    let row = sqlx::query!(
        "SELECT id, request_hash FROM commands
         WHERE app_id = $1 AND instance_id = $2 AND idempotency_key = $3",
        Uuid::from(app),
        Uuid::from(instance),
        key.as_str(),
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let command = super::get(&mut *conn, Some(app), CommandId::from_uuid(row.id))
        .await?
        .ok_or(CommandError::NotFound)?;
    Ok(Some((command, row.request_hash)))
}
