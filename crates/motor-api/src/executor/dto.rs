//! The wire shapes of `/v1/executor`: a command as an executor sees it
//! (its full content), the claim's answer with the lease, the report, the
//! long-poll's page and the instance state report. Field names are the
//! seed's where it has them (`tipo`, `status`, `next_try`, `error_code`,
//! `stage`, `server_code`, `chat`, `contenido`, `parametros`, …); the
//! lease is Motor's (`reserva`, `reservado_hasta`). Field order is the
//! order on the wire.

use motor_domain::{outbox::CommandJob, time};
use motor_store::{commands::Command, instance_state::StateChange};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

fn ts(t: &time::Timestamp) -> String {
    time::format(t)
}

/// A command with everything an executor needs to run it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ComandoEjecutor)]
pub struct ExecutorCommand {
    #[schema(format = Uuid)]
    pub id: String,
    #[schema(format = Uuid)]
    pub instance_id: String,
    /// `mensaje` for a send; a remote operation's family; a control kind.
    pub tipo: String,
    /// `aceptado`, `en_cola`, `ejecutando`, `enviado`, `completado`,
    /// `fallido`, `ambiguo` or `cancelado`.
    pub status: String,
    /// A send's destination; `null` for other kinds.
    pub chat: Option<String>,
    /// A send's content, as the producer gave it; `null` for other kinds.
    #[schema(value_type = Option<Object>)]
    pub contenido: Option<Value>,
    /// Another kind's parameters; `null` for a send.
    #[schema(value_type = Option<Object>)]
    pub parametros: Option<Value>,
    #[schema(format = DateTime)]
    pub next_try: Option<String>,
    pub error_code: Option<String>,
    /// `previa`, `servidor` or `frontera`.
    pub stage: Option<String>,
    pub server_code: Option<String>,
    pub provider_message_id: Option<String>,
    #[schema(format = DateTime)]
    pub aceptado_en: Option<String>,
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
    pub correlation_id: Option<String>,
    pub generacion_esperada: Option<i64>,
    /// The instance's generation when the command was accepted.
    pub generation: i64,
    /// How many times an executor claimed it.
    pub reclamos: i32,
    /// The current lease's end, while `ejecutando`.
    #[schema(format = DateTime)]
    pub reservado_hasta: Option<String>,
    #[schema(format = DateTime)]
    pub creado_en: String,
    #[schema(format = DateTime)]
    pub actualizado_en: String,
}

impl From<&Command> for ExecutorCommand {
    fn from(c: &Command) -> Self {
        Self {
            id: c.id.to_string(),
            instance_id: c.instance_id.to_string(),
            tipo: c.kind.as_str().to_owned(),
            status: c.status.as_str().to_owned(),
            chat: c.chat.clone(),
            contenido: c.content.clone(),
            parametros: c.parameters.clone(),
            next_try: c.next_try.as_ref().map(ts),
            error_code: c.error_code.clone(),
            stage: c.stage.map(|s| s.as_str().to_owned()),
            server_code: c.server_code.clone(),
            provider_message_id: c.provider_message_id.clone(),
            aceptado_en: c.accepted_at.as_ref().map(ts),
            expires_at: c.expires_at.as_ref().map(ts),
            correlation_id: c.correlation_id.clone(),
            generacion_esperada: c.expected_generation,
            generation: c.generation,
            reclamos: c.claims,
            reservado_hasta: c.lease_until.as_ref().map(ts),
            creado_en: ts(&c.created_at),
            actualizado_en: ts(&c.updated_at),
        }
    }
}

/// A claim's answer: the command, now `ejecutando`, and its lease.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ComandoReclamado)]
pub struct ClaimAnswer {
    /// The lease token: send it as `reserva` in the report.
    #[schema(format = Uuid)]
    pub reserva: String,
    /// Report before this, or the sweeper makes the command `ambiguo`
    /// (stage `frontera`, `error_code` `reserva_vencida`).
    #[schema(format = DateTime)]
    pub reservado_hasta: String,
    pub comando: ExecutorCommand,
}

/// An executor's heartbeat: still working on the command, under this
/// lease.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = LatidoComando)]
pub struct HeartbeatInput {
    /// The lease token the claim answered.
    #[schema(format = Uuid)]
    pub reserva: Option<String>,
}

/// An executor's report of a command's outcome. Every field is a string
/// so that each is judged by the rules of the `status` it comes with: a
/// field the status does not take is a 422 naming it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ReporteComando)]
pub struct ReportInput {
    /// The lease token the claim answered.
    #[schema(format = Uuid)]
    pub reserva: Option<String>,
    /// `enviado` (sends: `provider_message_id`, `chat`, `aceptado_en`),
    /// `completado` (every other kind), `fallido` (`error_code`, `stage`
    /// `previa`/`servidor`, `server_code` with `servidor`, optional
    /// `provider_message_id`), `ambiguo` (optional `error_code`, `stage`
    /// `frontera`), `en_cola` (a deferral: `next_try`).
    pub status: Option<String>,
    pub provider_message_id: Option<String>,
    pub chat: Option<String>,
    #[schema(format = DateTime)]
    pub aceptado_en: Option<String>,
    pub error_code: Option<String>,
    pub stage: Option<String>,
    pub server_code: Option<String>,
    #[schema(format = DateTime)]
    pub next_try: Option<String>,
}

/// A claimable command, as the `{prefix}.commands` record describes it:
/// claim it for its content.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ComandoPendiente)]
pub struct DueCommand {
    #[schema(format = Uuid)]
    pub command_id: String,
    #[schema(format = Uuid)]
    pub instance_id: String,
    pub tipo: String,
    /// When it became claimable; `null` for an `aceptado` command.
    #[schema(format = DateTime)]
    pub next_try: Option<String>,
}

impl From<&CommandJob> for DueCommand {
    fn from(j: &CommandJob) -> Self {
        Self {
            command_id: j.command_id.to_string(),
            instance_id: j.instance_id.to_string(),
            tipo: j.kind.as_str().to_owned(),
            next_try: j.next_try.as_ref().map(ts),
        }
    }
}

/// The long-poll's answer: the instance's claimable commands in
/// acceptance order; empty when none appeared within `wait`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ComandosPendientes)]
pub struct DuePage {
    pub commands: Vec<DueCommand>,
}

/// An instance's connection state, as its executor saw it change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ReporteEstado)]
pub struct StateInput {
    /// `vinculando`, `conectada`, `desconectada`, `pausada`,
    /// `desvinculada` or `archivada`.
    pub estado: Option<String>,
    /// The instance was linked again (a new session, perhaps another
    /// number): bumps its `generation`. Only with `conectada`.
    pub revinculada: Option<bool>,
    /// Why, in 1–300 characters.
    pub motivo: Option<String>,
    /// The control command whose effect this is (one of the instance's).
    #[schema(format = Uuid)]
    pub command_id: Option<String>,
}

/// What a state report did.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EstadoInstancia)]
pub struct StateAnswer {
    #[schema(format = Uuid)]
    pub instance_id: String,
    pub estado: String,
    /// The state before; `null` when none had been reported.
    pub estado_anterior: Option<String>,
    /// The instance's generation now.
    pub generation: i64,
    /// The `state.changed` event's seq; `null` when nothing changed (the
    /// same state again without a relink appends nothing).
    pub seq: Option<i64>,
}

impl StateAnswer {
    pub fn new(instance: motor_domain::InstanceId, change: &StateChange) -> Self {
        Self {
            instance_id: instance.to_string(),
            estado: change.state.as_str().to_owned(),
            estado_anterior: change.previous.map(|s| s.as_str().to_owned()),
            generation: change.generation,
            seq: change.seq,
        }
    }
}
