//! Motor's delivery engine: everything between a committed transaction and
//! a receiver's answer. The binary wires configuration to it; nothing here
//! knows HTTP routes or the API crate.
//!
//! - `relay`: outbox → Kafka, per owned shard, in id order; woken by the
//!   outbox writers of its own process.
//! - `dispatch`: delivery jobs from `{prefix}.deliveries` (the dispatch
//!   role) and the delay tiers (the retry role) become attempts through
//!   `motor-destinations`, recorded in Postgres with what follows. A head's
//!   record claims its lane's next delivery, so a busy lane runs as a chain
//!   (`chain`) in a task of its own; delivered records are group-committed
//!   (`recorder`); first attempts a commit of this process hands over start
//!   at once (`LocalRoles`).
//! - `sweeper`: expired commands and command leases that ran out end
//!   (`fallido`, `ambiguo`); lane heads whose job was lost or whose lease expired get a
//!   fresh job; `retention` deletes old `entregada` deliveries and redacts
//!   old content.
//! - `reconcile`: reports stuck work and keeps `reconciliacion` alerts.
//! - `sampler`: the metrics' sampled gauges (backlogs, lag, memory) and the
//!   history points.
//!
//! Neighbours: `motor-store` (Postgres), `motor-bus` (Kafka),
//! `motor-destinations` (the attempt), `motor-metrics` (counting),
//! `motor-domain` (the rules). Used by the `motor` binary only.

mod dispatch;
mod error;
mod reconcile;
mod relay;
mod retention;
mod sampler;
mod sweeper;

pub use dispatch::{
    run as run_dispatch, DispatchConfig, Dispatcher, Ladders, LocalRoles, MotorStandIn, Source,
    ATTEMPT_SPAN_TARGET,
};
pub use error::{EngineError, Result};
pub use reconcile::{reconcile_once, run as run_reconcile, ReconcileConfig};
pub use relay::{run as run_relay, RelayConfig, RelayWake};
pub use sampler::{run as run_sampler, sample_once, SamplerConfig};
pub use sweeper::{
    purge_once, redact_once, run as run_sweeper, sweep_commands_once, sweep_once, CommandSweep,
    SweeperConfig,
};
