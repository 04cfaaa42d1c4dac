//! The `motor` binary's library: configuration, the command line, `serve`
//! (wiring configuration to the API and the engine's roles) and `admin`.
//! The engine itself is the `motor-engine` crate. Integration tests drive
//! the same functions the binary does.

pub mod admin;
pub mod cli;
pub mod config;
pub mod doctor;
pub mod logging;
pub mod serve;
