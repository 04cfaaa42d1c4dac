//! Motor's system tests, against real Postgres and a real Kafka-protocol
//! broker (start it with `scripts/broker`), RabbitMQ, NATS and receivers of
//! their own: Motor in-process (`util::TestMotor`) or as `motor` processes
//! (`util::MotorProcess`). Each test gets a fresh database and its own topic
//! prefix. What they share beyond `util` is the crate's `harness`.

mod admin;
mod auth;
mod brokers;
mod cancel;
mod commands;
mod contracts;
mod deliveries;
mod dispatch;
mod executor;
mod failover;
mod health;
mod ingest;
mod ledger;
mod openapi;
mod operators;
mod ordering;
mod probe;
mod relay;
mod replays;
mod secrets;
mod settings;
mod signature_profiles;
mod snapshots;
mod streams;
mod subscription_access;
mod subscriptions;
mod tools;
mod util;
