//! Changes of a command's status: one compare-and-set statement
//! ([`apply`]) whose condition is the state machine's sources for the
//! transition, plus the guards of each (a claim only when due and not
//! expired, a report only under its own lease, expiry only once due, a
//! lease's end only once passed). When the statement changes nothing,
//! [`why_not`] reads the row to say why. The event of the step is appended
//! in the same transaction, after the instance's row is locked.

use std::time::Duration;

use motor_domain::{
    command::{
        events::EventFacts, step, CommandId, IllegalTransition, Report, Stage, Step, Transition,
        EXPIRED_ERROR_CODE,
    },
    outbox::OutboxRecord,
    time::Timestamp,
    AppId, InstanceId,
};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use super::{insert::job, Command, CommandError, CommandRow};
use crate::{ledger, outbox};

/// A claimed command and the lease its executor reports under.
#[derive(Debug, Clone, PartialEq)]
pub enum Claimed {
    /// Now `ejecutando`: the executor holds it until `command.lease_until`
    /// and must present `lease` with its report.
    Claimed { command: Command, lease: Uuid },
    /// Its `expires_at` had passed: the claim expired it instead (`fallido`,
    /// `comando_vencido`, `command.failed` appended). Nobody runs it.
    Expired(Command),
}

/// Cancels a command of `app` while `aceptado` or `en_cola`, appending
/// `command.cancelled`; once claimed it may have had an effect, and the
/// answer is [`CommandError::Illegal`].
pub async fn cancel(
    conn: &mut PgConnection,
    app: AppId,
    id: CommandId,
    now: Timestamp,
) -> Result<Command, CommandError> {
    apply(conn, Change::new(Transition::Cancel, Some(app), id, now)).await
}

/// An executor claims a command of `app` for `lease`: a compare-and-set
/// from `aceptado`/`en_cola` once `next_try` is due, so of a claim and a
/// cancel racing exactly one wins. A command whose `expires_at` passed is
/// expired instead ([`Claimed::Expired`]; commit the transaction).
pub async fn claim(
    conn: &mut PgConnection,
    app: AppId,
    id: CommandId,
    lease: Duration,
    now: Timestamp,
) -> Result<Claimed, CommandError> {
    let token = Uuid::new_v4();
    let change = Change {
        lease: Some((token, lease_end(now, lease))),
        ..Change::new(Transition::Claim, Some(app), id, now)
    };
    match apply(conn, change).await {
        Ok(command) => Ok(Claimed::Claimed {
            command,
            lease: token,
        }),
        // Refused while still open: if only because it expired, expire it
        // now, so no executor ever gets it after `expires_at`.
        Err(refused) if still_open(&refused) => {
            let expired = Change {
                error_code: Some(EXPIRED_ERROR_CODE),
                ..Change::new(Transition::Expired, Some(app), id, now)
            };
            match apply(conn, expired).await {
                Ok(command) => Ok(Claimed::Expired(command)),
                Err(CommandError::Store(e)) => Err(CommandError::Store(e)),
                Err(_) => Err(refused),
            }
        }
        Err(e) => Err(e),
    }
}

/// [`claim`] in one statement, its own transaction (`db`: a pool, or a
/// connection outside a transaction block), for what most claims are: a
/// command not bound to a generation (`generacion_esperada` needs the
/// instance's lock first, so a transaction) on one of `instances` (empty:
/// any). One round trip where [`claim`]'s transaction takes four. `None`
/// when it claimed nothing, for whatever reason (bound, another instance,
/// not claimable, expired, unknown): [`claim`] then says why, and expires
/// an expired command.
pub async fn claim_alone(
    db: impl PgExecutor<'_>,
    app: AppId,
    id: CommandId,
    lease: Duration,
    now: Timestamp,
    instances: &[InstanceId],
) -> Result<Option<(Command, Uuid)>, CommandError> {
    let token = Uuid::new_v4();
    let change = Change {
        lease: Some((token, lease_end(now, lease))),
        ..Change::new(Transition::Claim, Some(app), id, now)
    };
    let instances: Vec<Uuid> = instances.iter().copied().map(Uuid::from).collect();
    let claimed = set(db, &change, Some(&instances)).await?;
    Ok(claimed.map(|command| (command, token)))
}

/// When a lease taken at `now` ends; one beyond the calendar's end is
/// clamped, never a panic.
fn lease_end(now: Timestamp, lease: Duration) -> Timestamp {
    chrono::TimeDelta::from_std(lease)
        .ok()
        .and_then(|lease| now.checked_add_signed(lease))
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
}

/// Whether a claim was refused by a guard (due time, expiry) rather than
/// by the command's status.
fn still_open(refused: &CommandError) -> bool {
    match refused {
        CommandError::NotDue(_) => true,
        CommandError::Illegal(illegal) => step(illegal.from, Transition::Claim).is_ok(),
        _ => false,
    }
}

/// Records an executor's report on a command of `app` it holds under
/// `lease`, appending its event (`message.sent`, `command.failed`,
/// `command.ambiguous`; none for `completado` or a deferral). A deferral
/// puts the command back `en_cola` and writes its `{prefix}.commands`
/// record again, due at `next_try`. A report after the lease's end is
/// still taken while the command is `ejecutando` (the executor knows
/// better than the sweeper's `ambiguo`).
pub async fn report(
    conn: &mut PgConnection,
    app: AppId,
    id: CommandId,
    lease: Uuid,
    report: &Report,
    now: Timestamp,
) -> Result<Command, CommandError> {
    let base = Change {
        holder: Some(lease),
        ..Change::new(report.transition(), Some(app), id, now)
    };
    let change = match report {
        Report::Sent {
            provider_message_id,
            chat,
            accepted_at,
        } => Change {
            provider_message_id: Some(provider_message_id),
            accepted_at: Some(*accepted_at),
            reported_chat: Some(chat),
            ..base
        },
        Report::Completed => base,
        Report::Failed {
            error_code,
            stage,
            server_code,
            provider_message_id,
        } => Change {
            error_code: Some(error_code),
            stage: Some(*stage),
            server_code: server_code.as_deref(),
            provider_message_id: provider_message_id.as_deref(),
            ..base
        },
        Report::Ambiguous { error_code } => Change {
            error_code: error_code.as_deref(),
            ..base
        },
        Report::Deferred { next_try } => Change {
            next_try: Some(*next_try),
            ..base
        },
    };
    let command = apply(conn, change).await?;
    if matches!(report, Report::Deferred { .. }) {
        outbox::insert(&mut *conn, [OutboxRecord::command(&job(&command))]).await?;
    }
    Ok(command)
}

/// One transition of one command, with the values it writes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Change<'a> {
    pub transition: Transition,
    /// `None` for the sweeper, which acts for every app.
    pub app: Option<AppId>,
    pub id: CommandId,
    pub now: Timestamp,
    /// The lease a report must hold.
    pub holder: Option<Uuid>,
    /// A claim's new lease: its token and its end.
    pub lease: Option<(Uuid, Timestamp)>,
    pub next_try: Option<Timestamp>,
    pub error_code: Option<&'a str>,
    pub stage: Option<Stage>,
    pub server_code: Option<&'a str>,
    pub provider_message_id: Option<&'a str>,
    pub accepted_at: Option<Timestamp>,
    /// `message.sent`'s `chat`: the destination as the provider spells it.
    pub reported_chat: Option<&'a str>,
}

impl Change<'_> {
    pub fn new(transition: Transition, app: Option<AppId>, id: CommandId, now: Timestamp) -> Self {
        Self {
            transition,
            app,
            id,
            now,
            holder: None,
            lease: None,
            next_try: None,
            error_code: None,
            stage: transition.fixed_stage(),
            server_code: None,
            provider_message_id: None,
            accepted_at: None,
            reported_chat: None,
        }
    }
}

/// Applies `change` as a compare-and-set and appends its step's event.
/// Every transition has one target whatever status it leaves from, so the
/// step (and whether an event needs the instance's lock) is known before
/// the row is read.
pub(super) async fn apply(
    conn: &mut PgConnection,
    change: Change<'_>,
) -> Result<Command, CommandError> {
    let Step { event, .. } = step(change.transition.sources()[0], change.transition)?;
    let locked = match event {
        Some(_) => {
            let instance = sqlx::query_scalar!(
                "SELECT instance_id FROM commands WHERE id = $1 AND ($2::uuid IS NULL OR app_id = $2)",
                Uuid::from(change.id),
                change.app.map(Uuid::from),
            )
            .fetch_optional(&mut *conn)
            .await?
            .ok_or(CommandError::NotFound)?;
            let instance = InstanceId::from_uuid(instance);
            Some(ledger::lock_instance(&mut *conn, instance).await?)
        }
        None => None,
    };
    let Some(command) = set(&mut *conn, &change, None).await? else {
        return Err(why_not(conn, &change).await);
    };
    if let (Some(event), Some(locked)) = (event, locked) {
        let new = event.to_event(&EventFacts {
            chat: change.reported_chat.or(command.chat.as_deref()),
            correlation_id: command.correlation_id.as_deref(),
            provider_message_id: command.provider_message_id.as_deref(),
            accepted_at: command.accepted_at,
            error_code: command.error_code.as_deref(),
            stage: command.stage,
            server_code: command.server_code.as_deref(),
            ..EventFacts::of(command.id, command.kind)
        });
        ledger::append_locked(&mut *conn, locked, &[new]).await?;
    }
    Ok(command)
}

/// `change`'s compare-and-set statement: the command as it now is, or
/// `None` when the statement changed nothing. With `alone` it also leaves
/// alone a command bound to a generation and one on an instance not in
/// `alone` (empty: any instance): the guards [`claim_alone`] cannot
/// check without a transaction.
async fn set(
    db: impl PgExecutor<'_>,
    change: &Change<'_>,
    alone: Option<&[Uuid]>,
) -> Result<Option<Command>, CommandError> {
    let sources = change.transition.sources();
    let Step { to, .. } = step(sources[0], change.transition)?;
    let sources: Vec<&str> = sources.iter().map(|s| s.as_str()).collect();
    let row = sqlx::query_as!(
        CommandRow,
        "UPDATE commands
         SET status = $3, next_try = $4, error_code = $5, stage = $6, server_code = $7,
             provider_message_id = $8, aceptado_en = $9, reserva = $10, reservado_hasta = $11,
             reclamos = reclamos + $12, actualizado_en = $13
         WHERE id = $1 AND ($2::uuid IS NULL OR app_id = $2) AND status = ANY ($14)
           AND ($15::uuid IS NULL OR reserva = $15)
           AND (NOT $16 OR ((expires_at IS NULL OR expires_at > $13)
                            AND (next_try IS NULL OR next_try <= $13)))
           AND (NOT $17 OR expires_at <= $13)
           AND (NOT $18 OR reservado_hasta <= $13)
           AND (NOT $19 OR (generacion_esperada IS NULL
                            AND (cardinality($20::uuid[]) = 0 OR instance_id = ANY ($20))))
         RETURNING id, app_id, instance_id, tipo AS kind, chat, contenido AS content,
                   parametros AS parameters, status, next_try, error_code, stage, server_code,
                   provider_message_id, aceptado_en AS accepted_at, expires_at, correlation_id,
                   generacion_esperada AS expected_generation, generation, idempotency_key,
                   reclamos AS claims, reservado_hasta AS lease_until, creado_en AS created_at,
                   actualizado_en AS updated_at",
        Uuid::from(change.id),
        change.app.map(Uuid::from),
        to.as_str(),
        change.next_try,
        change.error_code,
        change.stage.map(Stage::as_str),
        change.server_code,
        change.provider_message_id,
        change.accepted_at,
        change.lease.map(|(token, _)| token),
        change.lease.map(|(_, until)| until),
        i32::from(change.transition == Transition::Claim),
        change.now,
        &sources as &[&str],
        change.holder,
        change.transition == Transition::Claim,
        change.transition == Transition::Expired,
        change.transition == Transition::LeaseExpired,
        alone.is_some(),
        alone.unwrap_or_default() as &[Uuid],
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(Command::try_from).transpose()?)
}

/// Why `change` changed nothing, read from the row as it is now: gone (or
/// another app's), a status the transition cannot leave from, another
/// lease, or a claim not yet due. An expiry or a lease's end that is not
/// due yet is an [`CommandError::Illegal`] the sweeper skips; a claim of
/// an expired command too, which [`claim`] turns into its expiry.
async fn why_not(conn: &mut PgConnection, change: &Change<'_>) -> CommandError {
    let current = match super::get(&mut *conn, change.app, change.id).await {
        Ok(Some(command)) => command,
        Ok(None) => return CommandError::NotFound,
        Err(e) => return e,
    };
    let illegal = CommandError::Illegal(IllegalTransition {
        from: current.status,
        transition: change.transition,
    });
    if step(current.status, change.transition).is_err() {
        return illegal;
    }
    match change.transition {
        Transition::Report(_) => CommandError::LeaseLost,
        Transition::Claim => match current.next_try {
            Some(at) if at > change.now => CommandError::NotDue(at),
            _ => illegal,
        },
        // Expiry or a lease's end not due yet: nothing to do, which the
        // sweeper treats as a skip.
        _ => illegal,
    }
}

/// An executor still working on a command of `app` it holds under `lease`
/// extends that lease to `now + extend` (never shortening it): a long
/// provider call does not let the sweeper make the command `ambiguo`.
/// The status does not change and nothing is appended. Refused with
/// [`CommandError::LeaseLost`] under another token or once the command
/// is no longer `ejecutando` (reported, or the sweeper's lease end came
/// first). A heartbeat after
/// the lease's end but before the sweeper ran is still taken, as a report
/// is.
pub async fn extend_lease(
    conn: &mut PgConnection,
    app: AppId,
    id: CommandId,
    lease: Uuid,
    extend: Duration,
    now: Timestamp,
) -> Result<Command, CommandError> {
    let until = chrono::TimeDelta::from_std(extend)
        .ok()
        .and_then(|extend| now.checked_add_signed(extend))
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
    let row = sqlx::query_as!(
        CommandRow,
        "UPDATE commands
         SET reservado_hasta = GREATEST(reservado_hasta, $4), actualizado_en = $5
         WHERE id = $1 AND app_id = $2 AND status = 'ejecutando' AND reserva = $3
         RETURNING id, app_id, instance_id, tipo AS kind, chat, contenido AS content,
                   parametros AS parameters, status, next_try, error_code, stage, server_code,
                   provider_message_id, aceptado_en AS accepted_at, expires_at, correlation_id,
                   generacion_esperada AS expected_generation, generation, idempotency_key,
                   reclamos AS claims, reservado_hasta AS lease_until, creado_en AS created_at,
                   actualizado_en AS updated_at",
        Uuid::from(id),
        Uuid::from(app),
        lease,
        until,
        now,
    )
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(row) = row {
        return Ok(Command::try_from(row)?);
    }
    // Another token, or no longer `ejecutando`: either way the lease is
    // gone.
    match super::get(&mut *conn, Some(app), id).await? {
        None => Err(CommandError::NotFound),
        Some(_) => Err(CommandError::LeaseLost),
    }
}
