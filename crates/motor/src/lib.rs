//! The `motor` binary's library: the command line and what each command
//! does. The engine itself is the `motor-engine` crate, the HTTP API
//! `motor-api`; this crate wires configuration to them. Integration tests
//! (the top-level `tests/` member) drive the same functions the binary does.
//!
//! Modules: `cli` (`motor migrate | serve | admin | doctor`), `config`
//! (every setting, from the environment or flags), `serve` (runs the chosen
//! roles in one process and drains them on SIGINT/SIGTERM), `admin` (the
//! operator API's operations from the shell), `doctor` (one reconciliation
//! pass from the shell), `check_receiver` (the receiver conformance
//! tester), `replay` and `tail` (the public API from the terminal, with
//! `remote` their shared client), `nats_stream` (a JetStream stream for
//! a NATS subscription, without the `nats` CLI), `logging` (text or JSON logs, optional OTLP traces).

pub mod admin;
pub mod check_receiver;
pub mod cli;
pub mod config;
pub mod doctor;
pub mod logging;
#[cfg(feature = "nats")]
pub mod nats_stream;
pub mod remote;
pub mod replay;
pub mod serve;
pub mod tail;
