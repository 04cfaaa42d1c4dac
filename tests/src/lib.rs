//! Motor's system tests, with Motor as a black box: the `motor` binary in
//! separate processes with split roles, real Postgres, a Kafka-protocol
//! broker, receivers of our own and a TCP fault proxy. Each run records a
//! [`history`]; [`check`] judges any history against DESIGN.md's
//! invariants (also as the `motor-check` binary).
//!
//! The [`harness`] is also what the integration binary `it`
//! (`tests/it/`) shares: the Postgres server and broker, the `motor`
//! binary, private services, free ports, the repository's paths.

pub mod check;
pub mod harness;
pub mod history;
pub mod scenarios;
