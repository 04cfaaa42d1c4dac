//! The harness: one [`Run`] is a scenario's world — its own database (made
//! by `motor migrate`, dropped at the end), its own topic prefix, `motor`
//! processes with split roles, receivers and producers that record the
//! history, and the dump of Motor's tables at the end. Setup goes through
//! Motor's operator and public HTTP APIs; Postgres is only read.

mod api;
pub mod brokers;
pub mod commands;
pub mod contracts;
mod dump;
pub mod process;
pub mod provider;
pub mod proxy;
pub mod receiver;
pub mod services;
pub mod stream;

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{bail, Context};
use sqlx::{postgres::PgPoolOptions, Connection, Executor, PgConnection, PgPool};

pub use self::{
    api::Producer,
    process::MotorProcess,
    receiver::{Behaviour, Incoming, Receiver},
};
use crate::{
    check::{check, Report},
    history::{now_us, History, Record, Recorder, Settings},
};

pub const ADMIN_TOKEN: &str = "faults-admin-token";

/// The shared Postgres server (trust auth), without a database name.
pub fn pg_server() -> String {
    std::env::var("MOTOR_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// The shared broker that `scripts/broker` starts.
pub fn shared_brokers() -> String {
    std::env::var("MOTOR_TEST_KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into())
}

/// Where histories go: `$MOTOR_FAULTS_DIR`, or `faults/` in the system's
/// temporary directory.
pub fn histories_dir() -> PathBuf {
    std::env::var("MOTOR_FAULTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir().join("motor-faults"))
}

/// Drops database `name` on the Postgres server at `server` (a URL
/// without a database name), whoever is still connected.
pub async fn drop_database(server: &str, name: &str) -> anyhow::Result<()> {
    let mut admin = PgConnection::connect(&format!("{server}/postgres")).await?;
    admin
        .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
        .await?;
    Ok(())
}

/// How a run is set up.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub scenario: String,
    pub retry_schedule_ms: [u64; 6],
    /// `MOTOR_RETRY_GIVE_UP_SECS` (None: the production 72 h).
    pub give_up_secs: Option<u64>,
    pub timeout_secs: u64,
    pub late_slack_ms: u64,
    pub recovery_ms: u64,
    /// `MOTOR_EXECUTOR_LEASE_SECS` (None: Motor's default; the history's
    /// `command_lease_ms` is then 0).
    pub command_lease_secs: Option<u64>,
    /// Postgres server (no database name) the run's database lives on.
    pub pg_server: String,
    /// Brokers Motor is given.
    pub brokers: String,
}

impl RunConfig {
    pub fn new(scenario: &str) -> Self {
        Self {
            scenario: scenario.into(),
            retry_schedule_ms: [200, 400, 800, 1600, 3200, 6400],
            give_up_secs: None,
            timeout_secs: 2,
            late_slack_ms: 8000,
            recovery_ms: 20_000,
            command_lease_secs: None,
            pg_server: pg_server(),
            brokers: shared_brokers(),
        }
    }
}

/// An app, its instances and a key with every scope.
pub struct Tenant {
    pub app: String,
    pub instances: Vec<String>,
    pub token: String,
}

pub struct Run {
    pub config: RunConfig,
    pub dir: PathBuf,
    pub recorder: Recorder,
    pub db_name: String,
    /// The URL Motor is given (a fault proxy may stand in between).
    pub motor_db_url: String,
    pub pool: PgPool,
    pub prefix: String,
    pub api: String,
    pub http: reqwest::Client,
    pub env: process::Env,
    pub processes: Vec<MotorProcess>,
    pub tenant: Option<Tenant>,
    started: Instant,
}

/// A random 12-character id: database names, topic prefixes, tags.
pub fn short_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

/// This package's directory (`tests/`) as `cargo test` gives it when it
/// runs the test: one target dir serves several checkouts, and cargo may
/// run a binary built from another one (the path it was built with is the
/// fallback).
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// The repository's root: `schemas/`, `scripts/`, the crates.
pub fn repo_root() -> PathBuf {
    manifest_dir()
        .parent()
        .expect("the tests package sits in the repository")
        .to_owned()
}

impl Run {
    /// A fresh world for `config`; `motor_db_server` is the server URL
    /// Motor gets (a proxy's, or the same as `config.pg_server`).
    pub async fn start(config: RunConfig) -> anyhow::Result<Self> {
        let server = config.pg_server.clone();
        Self::start_via(config, &server).await
    }

    pub async fn start_via(config: RunConfig, motor_db_server: &str) -> anyhow::Result<Self> {
        let server = motor_db_server.to_owned();
        Self::start_with_url(config, move |db| format!("{server}/{db}")).await
    }

    /// [`Self::start_via`] with Motor's whole URL made from the database
    /// name (several hosts, parameters after the name).
    pub async fn start_with_url(
        config: RunConfig,
        motor_db_url: impl FnOnce(&str) -> String,
    ) -> anyhow::Result<Self> {
        let id = short_id();
        let dir = histories_dir().join(format!("{}-{id}", config.scenario));
        let recorder = Recorder::create(&dir)?;
        let db_name = format!("motor_test_faults_{id}");
        let settings = Settings {
            retry_schedule_ms: config.retry_schedule_ms,
            jitter_percent: 20,
            give_up_ms: config.give_up_secs.unwrap_or(72 * 3600) * 1000,
            retry_after_cap_ms: 3_600_000,
            timeout_ms: config.timeout_secs * 1000,
            unordered_in_flight: 8,
            late_slack_ms: config.late_slack_ms,
            recovery_ms: config.recovery_ms,
            command_lease_ms: config.command_lease_secs.unwrap_or(0) * 1000,
        };
        recorder.record(&Record::Meta {
            scenario: config.scenario.clone(),
            started_us: now_us(),
            settings,
        });
        let prefix = format!("f{id}");
        let api = format!("127.0.0.1:{}", services::free_port());
        let motor_db_url = motor_db_url(&db_name);
        let schedule = config
            .retry_schedule_ms
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let mut vars = vec![
            ("MOTOR_DATABASE_URL", motor_db_url.clone()),
            ("MOTOR_KAFKA_BROKERS", config.brokers.clone()),
            ("MOTOR_TOPIC_PREFIX", prefix.clone()),
            ("MOTOR_KAFKA_PARTITIONS", "4".into()),
            ("MOTOR_HTTP_ADDR", api.clone()),
            ("MOTOR_ADMIN_TOKEN", ADMIN_TOKEN.into()),
            ("MOTOR_DATABASE_POOL", "4".into()),
            ("MOTOR_RETRY_SCHEDULE_MS", schedule),
            // Warnings, and the sweeper's repairs (a requeue is a wake-up
            // that was lost): what a failed run prints from the logs.
            ("RUST_LOG", "warn,motor_engine::sweeper=info".into()),
        ];
        if let Some(secs) = config.give_up_secs {
            vars.push(("MOTOR_RETRY_GIVE_UP_SECS", secs.to_string()));
        }
        if let Some(secs) = config.command_lease_secs {
            vars.push(("MOTOR_EXECUTOR_LEASE_SECS", secs.to_string()));
        }
        let vars: Vec<(String, String)> = vars.into_iter().map(|(k, v)| (k.into(), v)).collect();
        // `motor migrate` creates the database and applies the migrations.
        let migrate = std::process::Command::new(process::motor_bin())
            .arg("migrate")
            .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env(
                "MOTOR_DATABASE_URL",
                format!("{}/{db_name}", config.pg_server),
            )
            .output()
            .context("running motor migrate")?;
        if !migrate.status.success() {
            bail!(
                "motor migrate: {}",
                String::from_utf8_lossy(&migrate.stderr)
            );
        }
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .connect(&format!("{}/{db_name}", config.pg_server))
            .await?;
        let env = process::Env {
            vars,
            log_dir: dir.clone(),
            recorder: recorder.clone(),
            pids: Arc::new(Mutex::new(Vec::new())),
        };
        eprintln!("[{}] history in {}", config.scenario, dir.display());
        Ok(Self {
            config,
            dir,
            recorder,
            db_name,
            motor_db_url,
            pool,
            prefix,
            api,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()?,
            env,
            processes: Vec::new(),
            tenant: None,
            started: Instant::now(),
        })
    }

    /// After a failover: the harness's own reads (settling, the dump,
    /// dropping the database) go to `server`, the promoted primary.
    pub async fn repoint(&mut self, server: &str) -> anyhow::Result<()> {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.pool.close()).await;
        self.pool = PgPoolOptions::new()
            .max_connections(2)
            .connect(&format!("{server}/{}", self.db_name))
            .await?;
        self.config.pg_server = server.into();
        Ok(())
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Starts `motor serve --roles <roles>` as process `name`.
    pub fn spawn(&mut self, name: &str, roles: &str) -> usize {
        self.processes
            .push(MotorProcess::spawn(&self.env, name, roles, &[]));
        self.processes.len() - 1
    }

    pub fn process(&mut self, name: &str) -> &mut MotorProcess {
        self.processes
            .iter_mut()
            .rev()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no process {name}"))
    }

    /// Kills `name` with SIGKILL, waits `down`, starts it again; records
    /// the fault from the kill to the restart.
    pub async fn kill9_and_restart(&mut self, name: &str, down: Duration) {
        let start = now_us();
        self.process(name).kill9();
        tokio::time::sleep(down).await;
        self.process(name).restart();
        self.fault("kill9", name, start, now_us());
    }

    pub fn fault(&self, kind: &str, target: &str, start_us: i64, end_us: i64) {
        self.recorder.record(&Record::Fault {
            kind: kind.into(),
            target: target.into(),
            start_us,
            end_us,
        });
    }

    pub fn action(&self, what: &str, subscription_id: &str, detail: &str) {
        self.recorder.record(&Record::Action {
            what: what.into(),
            subscription_id: subscription_id.into(),
            detail: detail.into(),
            t_us: now_us(),
        });
    }

    pub async fn receiver(&self, name: &str) -> Receiver {
        Receiver::start(name, self.recorder.clone(), self.env.pids.clone()).await
    }

    /// Open deliveries on active subscriptions (the run settles at 0).
    pub async fn open_deliveries(&self) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id \
             WHERE d.estado = 'pendiente' AND s.estado = 'activa'",
        )
        .fetch_one(&self.pool)
        .await?)
    }

    /// Waits until nothing is open on an active subscription, or `within`
    /// passed; whether it settled.
    pub async fn settle(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if self.open_deliveries().await.is_ok_and(|n| n == 0) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Waits until the ledger holds at least `n` events.
    pub async fn wait_events(&self, n: i64, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            let count: Result<i64, _> = sqlx::query_scalar("SELECT count(*) FROM events")
                .fetch_one(&self.pool)
                .await;
            if count.is_ok_and(|c| c >= n) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Waits until the receivers together saw at least `n` requests.
    pub async fn wait_requests(&self, receivers: &[&Receiver], n: u64, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if receivers.iter().map(|r| r.requests()).sum::<u64>() >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Settles (up to `within`), stops every process, dumps the tables,
    /// drops the database and judges the history.
    pub async fn finish(mut self, within: Duration) -> anyhow::Result<Report> {
        let settled = self.settle(within).await;
        // Stray copies arrive now if they arrive at all.
        tokio::time::sleep(Duration::from_secs(1)).await;
        for p in &mut self.processes {
            if p.running() {
                p.stop();
            }
        }
        let rows = dump::dump(&self.pool).await?;
        self.recorder.write_dump(&rows)?;
        self.recorder.record(&Record::End {
            t_us: now_us(),
            settled,
        });
        self.pool.close().await;
        drop_database(&self.config.pg_server, &self.db_name).await?;
        let report = check(&History::read(&self.dir)?)?;
        eprintln!(
            "[{}] {:.1} s; history in {}\n{report}",
            self.config.scenario,
            self.started.elapsed().as_secs_f64(),
            self.dir.display()
        );
        if !report.ok() {
            // CI keeps only what is printed: what Motor itself said was
            // wrong (the sweeper's repairs among it) goes with the report.
            for line in notable_log_lines(&self.dir, 60) {
                eprintln!("  {line}");
            }
        }
        Ok(report)
    }
}

/// The lines of the run's Motor logs (`motor-*.log` in `dir`) that say
/// something went wrong or was repaired — warnings, errors, the sweeper's
/// requeues — without colour codes, the last `max` of them.
fn notable_log_lines(dir: &std::path::Path, max: usize) -> Vec<String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("motor-") && n.ends_with(".log"))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut lines = Vec::new();
    for file in files {
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for line in text.lines() {
            let plain = strip_ansi(line);
            let notable = plain.contains(" WARN ")
                || plain.contains(" ERROR ")
                || plain.contains("re-enqueued");
            if notable && !plain.contains("MOTOR_MASTER_KEY is unset") {
                lines.push(format!("{name}: {plain}"));
            }
        }
    }
    let skip = lines.len().saturating_sub(max);
    lines.split_off(skip)
}

/// `line` without ANSI escape sequences (`ESC [ … letter`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notable_log_lines_keep_warnings_and_repairs_without_colour() {
        let dir = std::env::temp_dir().join(format!("motor-notable-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("motor-back.log"),
            "\u{1b}[2m2026-12-01T21:20:08Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m motor: started\n\
             \u{1b}[2m2026-12-01T21:20:09Z\u{1b}[0m \u{1b}[33m WARN\u{1b}[0m motor::config: MOTOR_MASTER_KEY is unset\n\
             \u{1b}[2m2026-12-01T21:20:10Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m motor_engine::sweeper: requeued=1 sweeper re-enqueued lane heads\n\
             \u{1b}[2m2026-12-01T21:20:11Z\u{1b}[0m \u{1b}[33m WARN\u{1b}[0m motor_engine::dispatch: attempt not completed\n",
        )
        .unwrap();
        std::fs::write(dir.join("history.jsonl"), " WARN not a log\n").unwrap();
        let lines = notable_log_lines(&dir, 60);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            lines,
            [
                "motor-back.log: 2026-12-01T21:20:10Z  INFO motor_engine::sweeper: requeued=1 sweeper re-enqueued lane heads",
                "motor-back.log: 2026-12-01T21:20:11Z  WARN motor_engine::dispatch: attempt not completed",
            ]
        );
    }
}
