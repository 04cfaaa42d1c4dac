//! The store's integration tests, against a real Postgres server
//! (MOTOR_TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432);
//! each test creates a database of its own.

mod appender;
mod commands;
mod held;
mod migrations;
mod tcp_guard;
