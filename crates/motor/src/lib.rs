//! The `motor` binary's library: configuration, the command line, and the
//! roles `motor serve` runs (the HTTP API and the outbox relay). Integration
//! tests drive the same functions the binary does.

pub mod admin;
pub mod cli;
pub mod config;
pub mod dispatch;
pub mod relay;
pub mod serve;
