//! Commands: what an app asks Motor to have done (send a message, a remote
//! operation, instance control), beside the events that tell what happened
//! (seed 002, "Comandos asíncronos y eventos"). Pure rules only; the store
//! keeps the rows and applies [`state::step`] as a compare-and-set, the API
//! parses requests with [`request`] and executors' outcomes with
//! [`report`].
//!
//! The closed list of `tipo` values ([`CommandKind`]), from the seed's
//! words: `mensaje` (a send, only through `POST …/messages`); the remote
//! operations `grupos`, `canales`, `perfil`, `etiquetas`, `llamadas`,
//! `historial` (which operation of the family goes in `parametros`, as the
//! executor understands it: Motor is provider-agnostic); and instance
//! control `reconectar`, `desconectar`, `pausar`, `reanudar`,
//! `desvincular`, `archivar`. A send is born `en_cola` (with `next_try`);
//! every other command is born `aceptado` (the seed: "los comandos de
//! control (que no son envíos) nacen así"). Sends and remote operations
//! append `command.accepted` in the transaction that stores them; control
//! commands do not (their effect shows as `state.changed`).
//!
//! Neighbours: `ledger` events ([`events`] builds the ones a command's
//! transitions append), `outbox` (the `{prefix}.commands` record).

pub mod events;
pub mod kind;
pub mod report;
pub mod request;
pub mod state;

pub use events::CommandEvent;
pub use kind::{CommandKind, KindClass};
pub use report::{RawReport, Report};
pub use request::{
    CommandOptions, Fingerprint, IdempotencyKey, NewCommand, Payload, RawOperation, RawOptions,
    RawSend,
};
pub use state::{step, CommandStatus, IllegalTransition, Outcome, Stage, Step, Transition};

crate::ids::uuid_id!(
    /// A command: one row, whatever its kind; cited as `command_id` by the
    /// events its transitions append.
    CommandId
);

/// `error_code` of a command whose `expires_at` passed before an executor
/// claimed it (the seed's code).
pub const EXPIRED_ERROR_CODE: &str = "comando_vencido";

/// `error_code` of a command whose executor's lease ran out while it was
/// `ejecutando`: it may or may not have had its effect (`ambiguo`,
/// `frontera`). Motor's own code; the seed names none.
pub const LEASE_EXPIRED_ERROR_CODE: &str = "reserva_vencida";
