//! Motor's Postgres store. Functions take a connection or a transaction so
//! the caller decides what commits together (the ledger write, its fan-out
//! and its outbox rows always do). Every statement is checked at build time
//! (`sqlx::query!` against `.sqlx/`); the hot delivery statements live in
//! `deliveries/sql/*.sql` so the plans test reads the same text.
//!
//! Modules: `ledger` (append with a gapless per-instance `seq`, read,
//! stream, redact), `outbox` (the relay's shards), `deliveries` (fan-out,
//! claim, finish, sweep, reads), `subscriptions` and `lifecycle` (a change of
//! state and what it does: the one reactivation), `replays`, `idempotency`
//! (producer `Idempotency-Key`), `instance_state` (executor-reported state),
//! `commands` (commands and every change of
//! their status, each with its ledger event), `operator` (apps, instances, keys),
//! `operator_view` (the operator's cross-app reads), `settings`, `alerts`,
//! `health` (disabling on sustained failure), `throttle` (`Retry-After`
//! holds), `observe` (backlog counts for metrics), `reconcile` (stuck work),
//! `group_commit` (the one batching worker of the intake and the recorder).
//! The migrations in `migrations/` are embedded as [`MIGRATOR`].
//!
//! Neighbours: `motor-domain` (the types it stores); used by `motor-app`,
//! `motor-engine`, `motor-api` and the `motor` binary.

pub mod alerts;
pub mod commands;
pub mod deliveries;
pub mod group_commit;
pub mod health;
pub mod idempotency;
pub mod instance_state;
pub mod ledger;
pub mod lifecycle;
pub mod observe;
pub mod operator;
pub mod operator_view;
pub mod outbox;
pub mod reconcile;
pub mod replays;
pub mod settings;
pub mod subscriptions;
pub mod throttle;

use std::str::FromStr;

use sqlx::{
    migrate::Migrator,
    postgres::{types::PgInterval, PgConnectOptions, PgPoolOptions},
    ConnectOptions, Connection, Executor, PgConnection, PgPool,
};

pub use sqlx::{PgPool as Pool, Postgres, Transaction};

/// The migrations in `migrations/`, embedded in the binary.
pub static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A duration as a Postgres `interval` parameter of a checked statement
/// (`query!` takes `PgInterval` for one); a duration beyond an interval's
/// range (about 292,000 years of microseconds) is clamped to the largest.
fn interval(duration: std::time::Duration) -> PgInterval {
    let delta = chrono::TimeDelta::from_std(duration).unwrap_or(chrono::TimeDelta::MAX);
    PgInterval::try_from(delta).unwrap_or(PgInterval {
        months: 0,
        days: 0,
        microseconds: i64::MAX,
    })
}

/// Connects a pool. Its sessions run with JIT compilation off: Motor's
/// statements are short index probes, and a plan the planner costs high
/// (a recursive walk's row estimates) was JIT-compiled on every run, 65 ms
/// of a pass that ran in 3 ms.
pub async fn connect(url: &str, max_connections: u32) -> Result<PgPool> {
    let options = PgConnectOptions::from_str(url)?
        .application_name("motor")
        .options([("jit", "off")]);
    Ok(PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(std::time::Duration::from_secs(10))
        .connect_with(options)
        .await?)
}

/// Creates the database named in `url` when it does not exist yet, by
/// connecting to the `postgres` maintenance database on the same server.
pub async fn create_database_if_missing(url: &str) -> Result<()> {
    let options = PgConnectOptions::from_str(url)?;
    let name = options
        .get_database()
        .map(str::to_owned)
        .or_else(|| options.get_username().to_owned().into())
        .unwrap_or_else(|| "postgres".into());
    if options.connect().await.is_ok() {
        return Ok(());
    }
    let mut admin = PgConnection::connect_with(&options.clone().database("postgres")).await?;
    let exists = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS "exists!""#,
        &name
    )
    .fetch_one(&mut admin)
    .await?;
    if !exists {
        let quoted = format!("\"{}\"", name.replace('"', "\"\""));
        // Dynamic: a database's name cannot be a parameter.
        admin
            .execute(format!("CREATE DATABASE {quoted}").as_str())
            .await?;
    }
    Ok(())
}

/// Creates the database if needed and applies every pending migration.
pub async fn migrate(url: &str) -> Result<()> {
    create_database_if_missing(url).await?;
    // Through a pool: `Migrator::run` on a bare connection makes the future
    // not `Send` (sqlx's higher-ranked `Acquire` bound).
    let pool = connect(url, 1).await?;
    let result = MIGRATOR.run(&pool).await;
    pool.close().await;
    result.map_err(|e| StoreError::Database(e.into()))
}
