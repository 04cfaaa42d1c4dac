//! Motor's application layer: every use case as a plain function that
//! takes what it needs (the pool, the sealing key, the senders) and
//! returns domain or store types, or one [`AppError`]. The HTTP API
//! (`motor-api`), its console and the `motor admin` CLI call the same
//! functions; none of them opens a transaction of its own.
//!
//! One module per resource: `apps`, `instances`, `keys`, `settings`,
//! `alerts`, `event_types` (the operator's administration), `commands` (a
//! producer's commands: send, submit, read, list, cancel),
//! `subscriptions` (and `probe`, the `/test` attempt), `deliveries` (read,
//! search, manual retry), `dlq`, `replays`, `events` (append, with its
//! group-commit `intake`, and read the ledger), `executor` (claim, report,
//! long-poll and instance state for executors), `streams` (where a stream
//! opens) and `reconcile`. `access`
//! holds who may touch what.
//!
//! Neighbours: `motor-domain` (the rules and parsers), `motor-store`
//! (Postgres), `motor-destinations` (the probe's attempt). It knows no
//! HTTP: no axum, no status codes, no OpenAPI.

pub mod access;
pub mod alerts;
pub mod apps;
pub mod commands;
pub mod deliveries;
pub mod dlq;
pub mod error;
pub mod event_types;
pub mod events;
pub mod executor;
pub mod instances;
pub mod keys;
pub mod reconcile;
pub mod replays;
pub mod settings;
pub mod streams;
pub mod subscriptions;

mod parse;

pub use access::Access;
pub use error::{AppError, Result};
