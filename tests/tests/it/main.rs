//! Motor's integration tests, against real Postgres and a real
//! Kafka-protocol broker (start it with `scripts/broker`). Each test gets a
//! fresh database and its own topic prefix.

mod admin;
mod auth;
mod brokers;
mod deliveries;
mod dispatch;
mod firma;
mod health;
mod ingest;
mod ledger;
mod openapi;
mod operators;
mod probe;
mod relay;
mod replays;
mod secrets;
mod settings;
mod snapshots;
mod streams;
mod subscription_access;
mod subscriptions;
mod util;
