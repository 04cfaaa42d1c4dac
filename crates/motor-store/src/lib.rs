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
//! `group_commit` (the one batching worker of the intake and the recorder),
//! `held` (the pool connection such a worker keeps between batches),
//! `changes` (what Postgres announces to the caches that listen).
//! The migrations in `migrations/` are embedded as [`MIGRATOR`].
//!
//! Neighbours: `motor-domain` (the types it stores); used by `motor-app`,
//! `motor-engine`, `motor-api` and the `motor` binary.

pub mod alerts;
pub mod changes;
pub mod commands;
pub mod deliveries;
pub mod group_commit;
pub mod health;
pub mod held;
pub mod idempotency;
pub mod instance_state;
pub mod ledger;
pub mod lifecycle;
pub mod observe;
pub mod operator;
pub mod operator_view;
pub mod outbox;
pub mod primary;
pub mod reconcile;
pub mod replays;
pub mod settings;
pub mod statistics;
pub mod subscription_stats;
pub mod subscriptions;
pub mod tcp_guard;
pub mod throttle;

use std::{str::FromStr, time::Duration};

use sqlx::{
    migrate::Migrator,
    postgres::{types::PgInterval, PgConnectOptions, PgPoolOptions},
    Executor, PgConnection, PgPool,
};

use crate::primary::{Hosts, SessionAttrs, Switched};
pub use crate::tcp_guard::TcpGuard;

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

/// Motor's session settings: JIT compilation off. Motor's statements are
/// short index probes, and a plan the planner costs high (a recursive
/// walk's row estimates, or the `disable_cost` of a scan or sort a
/// transaction turned off) was JIT-compiled on every run: 65 ms of a pass
/// that ran in 3 ms, and 3.7 s of a sweeper pass over an empty table on a
/// loaded 2-core machine.
fn session(options: PgConnectOptions) -> PgConnectOptions {
    options.application_name("motor").options([("jit", "off")])
}

/// The options of Motor's sessions on the database at a one-host `url`
/// ([`session`]). A connection made outside the pool (a test's own) takes
/// these so that it runs Motor's statements as Motor does.
pub fn connect_options(url: &str) -> Result<PgConnectOptions> {
    Ok(session(PgConnectOptions::from_str(url)?))
}

/// Connects a pool to the host of `url` that Motor should write to
/// ([`primary`]: the URL may name several, libpq's way), its sessions
/// with Motor's settings ([`session`]).
///
/// With `target_session_attrs=read-write` every new connection is checked
/// to take writes (one that does not is dropped and the pool tries
/// again); with several hosts a task follows the primary from host to
/// host for as long as the pool is open, and connections made before a
/// move are dropped when next acquired. A connection whose server died
/// fails sqlx's ping before it is handed out.
pub async fn connect(url: &str, max_connections: u32) -> Result<PgPool> {
    connect_with_timeout(url, max_connections, ACQUIRE_TIMEOUT).await
}

/// [`connect`] with the acquire timeout given (`MOTOR_DATABASE_ACQUIRE_TIMEOUT_MS`).
pub async fn connect_with_timeout(
    url: &str,
    max_connections: u32,
    acquire_timeout: Duration,
) -> Result<PgPool> {
    connect_guarded(url, max_connections, acquire_timeout, TcpGuard::DEFAULT).await
}

/// [`connect_with_timeout`], every connection's socket under `guard`
/// (`MOTOR_DATABASE_TCP_TIMEOUT_SECS`; [`tcp_guard`]), as are the
/// process's connections outside a pool ([`connect_own`]).
pub async fn connect_guarded(
    url: &str,
    max_connections: u32,
    acquire_timeout: Duration,
    guard: TcpGuard,
) -> Result<PgPool> {
    tcp_guard::set_process_guard(guard);
    let hosts = Hosts::parse(url).map_err(|e| sqlx::Error::Configuration(e.into()))?;
    let (chosen, probe) = hosts.find(acquire_timeout).await?;
    let options = session(chosen.clone());
    let read_write = hosts.attrs == SessionAttrs::ReadWrite;
    let switched = Switched::default();
    let current = switched.clone();
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(acquire_timeout)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                tcp_guard::apply_or_log(conn, guard).await;
                if read_write && !primary::takes_writes(conn).await? {
                    return Err(sqlx::Error::Io(std::io::Error::new(
                        std::io::ErrorKind::NotConnected,
                        "the server does not take writes (no primary)",
                    )));
                }
                Ok(())
            })
        })
        .before_acquire(move |_, meta| {
            let keep = current.is_current(meta.age);
            Box::pin(async move { Ok(keep) })
        })
        .connect_with(options)
        .await?;
    if hosts.candidates.len() > 1 {
        let probe_hosts = hosts.map(|o| o.application_name("motor-primary"));
        tokio::spawn(primary::follow(
            probe_hosts,
            pool.clone(),
            chosen,
            Some(probe),
            switched,
        ));
    }
    Ok(pool)
}

/// How long a request waits for a pooled connection before it is
/// answered "unavailable", unless the caller says otherwise.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection of a role's own, outside the pool (the relay's shard
/// locks, the sweeper's passes), to the host the pool uses now (which
/// follows the primary) and checked to take writes: made again after an
/// error, it finds the new primary after a failover.
pub async fn connect_own(pool: &PgPool, application_name: &str) -> Result<PgConnection> {
    use sqlx::ConnectOptions;
    let options = pool
        .connect_options()
        .as_ref()
        .clone()
        .application_name(application_name);
    let mut conn = options.connect().await?;
    tcp_guard::apply_or_log(&mut conn, tcp_guard::process_guard()).await;
    if !primary::takes_writes(&mut conn).await? {
        return Err(StoreError::Database(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            format!(
                "{}:{} does not take writes (no primary)",
                options.get_host(),
                options.get_port()
            ),
        ))));
    }
    Ok(conn)
}

/// Whether a database error means "out of reach for now, retry later"
/// rather than a fault of the request: no pooled connection within the
/// acquire timeout, a connection refused or cut, a server shutting down
/// or starting up (SQLSTATE class 08, 57P01–57P03), or a host that no
/// longer takes writes (25006: a demoted primary). Every door maps it to
/// 503 with `Retry-After`; dispatchers hold their work.
pub fn out_of_reach(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            code.starts_with("08") || matches!(&*code, "57P01" | "57P02" | "57P03" | "25006")
        }),
        _ => false,
    }
}

/// Creates the database named in `url` when it does not exist yet, by
/// connecting to the `postgres` maintenance database on the host that
/// takes writes.
pub async fn create_database_if_missing(url: &str) -> Result<()> {
    let hosts = Hosts::parse(url).map_err(|e| sqlx::Error::Configuration(e.into()))?;
    let first = &hosts.candidates[0];
    let name = first
        .get_database()
        .unwrap_or_else(|| first.get_username())
        .to_owned();
    if hosts.find(ACQUIRE_TIMEOUT).await.is_ok() {
        return Ok(());
    }
    let (_, mut admin) = hosts
        .map(|o| o.database("postgres"))
        .find(ACQUIRE_TIMEOUT)
        .await?;
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
