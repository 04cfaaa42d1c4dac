//! Commands (issue 32): storing what an app asks for and every change of
//! its status. Each change is a compare-and-set on the command's row whose
//! condition is the domain's state machine
//! (`motor_domain::command::state`), and the event the change appends goes
//! to the instance's ledger through [`crate::ledger::append_locked`] in
//! the same transaction. Functions take the caller's connection: call them
//! inside a transaction and commit it (the instance lock they take lasts
//! until then).
//!
//! Lock order, everywhere: the instance's row, then the command's. A claim
//! and the reports that append nothing take only the command's row.
//!
//! - `insert`: new commands, one or a batch in one transaction (the
//!   API's group commit), each Idempotency-Key resolved first;
//! - `due`: what an executor may claim now (the long-poll's read);
//! - `transition`: cancel, claim, report (and deferral), the lease's
//!   extension (an executor's heartbeat);
//! - `sweep`: expiry (`comando_vencido`) and leases that ran out;
//! - here: the stored [`Command`], reads and the module's errors.

mod due;
mod insert;
mod rows;
mod sweep;
mod transition;

pub use due::due;
pub use insert::{find_repeat, insert, insert_batch, Acceptance, Accepted};
pub use sweep::{expire_due, expire_leases};
pub use transition::{cancel, claim, claim_alone, extend_lease, report, Claimed};

use motor_domain::{
    command::{CommandId, CommandKind, CommandStatus, IllegalTransition, Stage},
    time::Timestamp,
    AppId, InstanceId,
};
use serde_json::Value;
use sqlx::PgExecutor;
use uuid::Uuid;

use crate::StoreError;

/// Why a command operation did not happen; the caller maps each to its
/// answer (404, 409, …). Database failures are [`CommandError::Store`].
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// No such command, or it belongs to another app.
    #[error("command not found")]
    NotFound,
    /// No such instance, or it belongs to another app.
    #[error("instance not found")]
    InstanceNotFound,
    /// The Idempotency-Key was first used with another request.
    #[error("the Idempotency-Key was used for another request (command {existing})")]
    KeyConflict { existing: CommandId },
    /// `generacion_esperada` is not the instance's `generation`.
    #[error("the instance's generation is {actual}, not {expected}")]
    GenerationMismatch { expected: i64, actual: i64 },
    /// The command's status does not allow the transition.
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
    /// A report whose lease is not the command's current one (another
    /// claim took over after a deferral, or the lease was never this one).
    #[error("the command's lease is another one")]
    LeaseLost,
    /// A claim before the command's `next_try`.
    #[error("the command is not due before {0}")]
    NotDue(Timestamp),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for CommandError {
    fn from(e: sqlx::Error) -> Self {
        CommandError::Store(StoreError::Database(e))
    }
}

/// A command as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub id: CommandId,
    pub app_id: AppId,
    pub instance_id: InstanceId,
    pub kind: CommandKind,
    pub chat: Option<String>,
    /// A send's `contenido`.
    pub content: Option<Value>,
    /// Another kind's `parametros`.
    pub parameters: Option<Value>,
    pub status: CommandStatus,
    pub next_try: Option<Timestamp>,
    pub error_code: Option<String>,
    pub stage: Option<Stage>,
    pub server_code: Option<String>,
    pub provider_message_id: Option<String>,
    /// `aceptado_en`: when the provider's server accepted a send.
    pub accepted_at: Option<Timestamp>,
    pub expires_at: Option<Timestamp>,
    pub correlation_id: Option<String>,
    pub expected_generation: Option<i64>,
    /// The instance's generation when the command was accepted.
    pub generation: i64,
    pub idempotency_key: Option<String>,
    /// How many times an executor claimed it.
    pub claims: i32,
    /// The current lease's end, while `ejecutando`.
    pub lease_until: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A row as every statement here selects it (the same columns in each:
/// `sqlx` wants one literal per query).
struct CommandRow {
    id: Uuid,
    app_id: Uuid,
    instance_id: Uuid,
    kind: String,
    chat: Option<String>,
    content: Option<Value>,
    parameters: Option<Value>,
    status: String,
    next_try: Option<Timestamp>,
    error_code: Option<String>,
    stage: Option<String>,
    server_code: Option<String>,
    provider_message_id: Option<String>,
    accepted_at: Option<Timestamp>,
    expires_at: Option<Timestamp>,
    correlation_id: Option<String>,
    expected_generation: Option<i64>,
    generation: i64,
    idempotency_key: Option<String>,
    claims: i32,
    lease_until: Option<Timestamp>,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl TryFrom<CommandRow> for Command {
    type Error = sqlx::Error;

    /// The table's CHECKs keep every spelling known; one that is not is
    /// a decode error, never a panic.
    fn try_from(row: CommandRow) -> Result<Self, Self::Error> {
        let unknown = |what: &str, value: &str| {
            sqlx::Error::Decode(format!("commands: unknown {what} {value:?}").into())
        };
        Ok(Command {
            id: CommandId::from_uuid(row.id),
            app_id: AppId::from_uuid(row.app_id),
            instance_id: InstanceId::from_uuid(row.instance_id),
            kind: CommandKind::parse(&row.kind).ok_or_else(|| unknown("tipo", &row.kind))?,
            chat: row.chat,
            content: row.content,
            parameters: row.parameters,
            status: CommandStatus::parse(&row.status)
                .ok_or_else(|| unknown("status", &row.status))?,
            next_try: row.next_try,
            error_code: row.error_code,
            stage: row
                .stage
                .map(|s| Stage::parse(&s).ok_or_else(|| unknown("stage", &s)))
                .transpose()?,
            server_code: row.server_code,
            provider_message_id: row.provider_message_id,
            accepted_at: row.accepted_at,
            expires_at: row.expires_at,
            correlation_id: row.correlation_id,
            expected_generation: row.expected_generation,
            generation: row.generation,
            idempotency_key: row.idempotency_key,
            claims: row.claims,
            lease_until: row.lease_until,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

/// One command: of `app`, or of any app (`None`, the operator).
pub async fn get(
    db: impl PgExecutor<'_>,
    app: Option<AppId>,
    id: CommandId,
) -> Result<Option<Command>, CommandError> {
    let row = sqlx::query_as!(
        CommandRow,
        "SELECT id, app_id, instance_id, tipo AS kind, chat, contenido AS content,
                parametros AS parameters, status, next_try, error_code, stage, server_code,
                provider_message_id, aceptado_en AS accepted_at, expires_at, correlation_id,
                generacion_esperada AS expected_generation, generation, idempotency_key,
                reclamos AS claims, reservado_hasta AS lease_until, creado_en AS created_at,
                actualizado_en AS updated_at
         FROM commands WHERE id = $1 AND ($2::uuid IS NULL OR app_id = $2)",
        Uuid::from(id),
        app.map(Uuid::from),
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(Command::try_from).transpose()?)
}

/// Which of an instance's commands to list, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListFilter {
    pub app: AppId,
    pub instance: InstanceId,
    /// Empty = every status.
    pub statuses: Vec<CommandStatus>,
    pub offset: i64,
    pub limit: i64,
}

/// A page of an instance's commands, newest first (creation time, then
/// id, descending), as deliveries page. Asks for `limit` rows; ask for one
/// more to learn whether a next page exists.
pub async fn list(
    db: impl PgExecutor<'_>,
    filter: &ListFilter,
) -> Result<Vec<Command>, CommandError> {
    let statuses: Vec<&str> = filter.statuses.iter().map(|s| s.as_str()).collect();
    let rows = sqlx::query_as!(
        CommandRow,
        "SELECT id, app_id, instance_id, tipo AS kind, chat, contenido AS content,
                parametros AS parameters, status, next_try, error_code, stage, server_code,
                provider_message_id, aceptado_en AS accepted_at, expires_at, correlation_id,
                generacion_esperada AS expected_generation, generation, idempotency_key,
                reclamos AS claims, reservado_hasta AS lease_until, creado_en AS created_at,
                actualizado_en AS updated_at
         FROM commands
         WHERE instance_id = $1 AND app_id = $2
           AND (cardinality($3::text[]) = 0 OR status = ANY ($3))
         ORDER BY creado_en DESC, id DESC
         OFFSET $4 LIMIT $5",
        Uuid::from(filter.instance),
        Uuid::from(filter.app),
        &statuses as &[&str],
        filter.offset,
        filter.limit,
    )
    .fetch_all(db)
    .await?;
    rows.into_iter()
        .map(|row| Command::try_from(row).map_err(CommandError::from))
        .collect()
}
