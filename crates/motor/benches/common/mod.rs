//! What every benchmark needs: a fresh database, Motor running in this
//! process with chosen roles, and percentiles.

#![allow(dead_code)]

use motor::{config::Config, serve::Role};
use motor_api::admin::{self, CreateApp, CreateInstance, CreateKey};
use motor_domain::InstanceId;
use sqlx::{Connection, Executor, PgConnection};
use tokio_util::sync::CancellationToken;

pub fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// A numeric knob from the environment.
pub fn number(name: &str, default: &str) -> f64 {
    env_or(name, default)
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a number"))
}

/// A process's resident set, in MB (`VmRSS` of `/proc/<pid>/status`; NaN
/// when it cannot be read).
pub fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The URL of database `name` on `server`, whose query (`?sslmode=disable`,
/// `?host=/var/run/postgresql` for the Unix socket) it keeps.
fn database(server: &str, name: &str) -> String {
    match server.split_once('?') {
        Some((base, query)) => format!("{base}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}

/// A fresh database on the benchmark's Postgres server, dropped by
/// [`BenchDb::drop_db`].
pub struct BenchDb {
    pub url: String,
    pub brokers: String,
    pub run_id: String,
    name: String,
    admin: PgConnection,
}

impl BenchDb {
    pub async fn create() -> Self {
        let server = env_or(
            "MOTOR_BENCH_DATABASE_URL",
            "postgres://postgres@127.0.0.1:5432",
        );
        let brokers = env_or("MOTOR_BENCH_KAFKA_BROKERS", "127.0.0.1:9092");
        let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
        let name = format!("motor_bench_{run_id}");
        let mut admin = PgConnection::connect(&database(&server, "postgres"))
            .await
            .unwrap();
        admin
            .execute(format!("CREATE DATABASE {name}").as_str())
            .await
            .unwrap();
        Self {
            url: database(&server, &name),
            brokers,
            run_id,
            name,
            admin,
        }
    }

    /// `CHECKPOINT` on the server, so that what earlier runs left dirty
    /// (the commands bench's accept phase: 60,000-odd commands with their
    /// events and outbox records) is written out before this run
    /// measures, not during it. A role without the right to it is told
    /// so, and the run goes on.
    pub async fn checkpoint(&mut self) {
        if let Err(e) = self.admin.execute("CHECKPOINT").await {
            println!("no CHECKPOINT before measuring: {e}");
        }
    }

    pub fn config(&self, prefix: &str) -> Config {
        Config {
            database_url: self.url.clone(),
            kafka_brokers: self.brokers.clone(),
            kafka_partitions: 8,
            kafka_replication: 1,
            topic_prefix: prefix.to_owned(),
            http_addr: "127.0.0.1:0".into(),
            admin_token: None,
            master_key: Some("bench-master-key-0123456789abcdef0123".into()),
            database_pool: 32,
            database_acquire_timeout_ms: 10_000,
            database_tcp_timeout_secs: 30,
            retry_schedule_ms: None,
            retry_give_up_secs: None,
            test_ladders: Vec::new(),
            dispatch_in_flight: 1000,
            record_linger_ms: 20,
            intake_pace_ms: 2,
            relay_pace_ms: 10,
            relay_events_pace_ms: 40,
            streams_max_connections: 10_000,
            streams_buffer: 4_096,
            webhook_extra_roots: None,
            streams_heartbeat_ms: None,
            executor_lease_secs: 30,
            executor_poll_max_wait_secs: 30,
            executor_poll_max_limit: 100,
            executor_poll_recheck_ms: 250,
            metrics_sample_ms: 15_000,
            metrics_top_instances: motor_metrics::DEFAULT_TOP_INSTANCES,
            metrics_top_types: motor_metrics::DEFAULT_TOP_TYPES,
            reconcile: Default::default(),
        }
    }

    pub async fn drop_db(mut self) {
        self.admin
            .execute(format!("DROP DATABASE {} WITH (FORCE)", self.name).as_str())
            .await
            .unwrap();
    }
}

pub struct Running {
    pub shutdown: CancellationToken,
    pub task: tokio::task::JoinHandle<()>,
    pub addr: Option<std::net::SocketAddr>,
}

impl Running {
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap();
    }
}

pub async fn start(config: Config, roles: &[Role]) -> Running {
    let shutdown = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let stop = shutdown.clone();
    let roles = roles.to_vec();
    let task = tokio::spawn(async move {
        motor::serve::run(config, &roles, stop, Some(tx))
            .await
            .unwrap();
    });
    let addr = rx.await.ok();
    Running {
        shutdown,
        task,
        addr,
    }
}

/// An app allowing `destinations`, `instances` instances and a key with
/// `scopes`: the instance ids and the key's token.
pub async fn tenant(
    pool: &motor_store::Pool,
    destinations: &[&str],
    instances: usize,
    scopes: &[&str],
) -> (Vec<InstanceId>, String) {
    let app = admin::create_app(
        pool,
        CreateApp {
            nombre: "bench".into(),
            destinos_permitidos: destinations.iter().map(|d| d.to_string()).collect(),
            politica_destinos: None,
            contrato: None,
        },
    )
    .await
    .unwrap();
    let mut ids = Vec::new();
    for i in 0..instances {
        let instance = admin::create_instance(
            pool,
            app.id,
            CreateInstance {
                nombre: format!("i{i}"),
            },
        )
        .await
        .unwrap();
        ids.push(instance.id);
    }
    let token = admin::create_key(
        pool,
        app.id,
        CreateKey {
            nombre: "bench".into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            instancias: vec![],
            vence_en: None,
            permisos_lectura: vec![],
        },
    )
    .await
    .unwrap()
    .token;
    (ids, token)
}
