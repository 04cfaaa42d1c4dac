//! Motor's system tests, with Motor as a black box: the `motor` binary in
//! separate processes with split roles, real Postgres, a Kafka-protocol
//! broker, receivers of our own and a TCP fault proxy. Each run records a
//! [`history`]; [`check`] judges any history against DESIGN.md's
//! invariants (also as the `motor-check` binary).

pub mod check;
pub mod harness;
pub mod history;
pub mod scenarios;
