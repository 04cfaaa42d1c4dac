//! Test harness: fresh databases, an in-process API on port 0, fixtures
//! made through the operator API code, and a plain Kafka reader.

#![allow(dead_code)]

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use motor::{config::Config, serve::Role};
use motor_api::admin::{self, CreateApp, CreateInstance, CreateKey};
use motor_destinations::resolve::{Lookup, Resolver, SystemResolver};
use motor_domain::{operator::Instance, AppId, InstanceId, NewEvent};
use motor_store::Pool;
use motor_system_tests::harness;
pub use motor_system_tests::harness::{
    manifest_dir, pg_server,
    process::{executor_bin, motor_bin},
    repo_root,
};
use rdkafka::{
    consumer::{BaseConsumer, Consumer},
    message::{Headers, Message},
    ClientConfig, TopicPartitionList,
};
use sqlx::{Connection, Executor, PgConnection};
use tokio_util::sync::CancellationToken;

/// A fresh, migrated database. A clone is the same database, for a second
/// [`TestMotor`] on it (another process's roles).
#[derive(Clone)]
pub struct TestDb {
    pub name: String,
    pub url: String,
    pub pool: Pool,
}

impl TestDb {
    pub async fn new() -> Self {
        Self::on(&pg_server()).await
    }

    /// A fresh database on the Postgres server at `server` (a URL without
    /// a database name).
    pub async fn on(server: &str) -> Self {
        let name = format!("motor_test_{}", harness::short_id());
        let mut admin = PgConnection::connect(&format!("{server}/postgres"))
            .await
            .expect("postgres must be running (see scripts/test)");
        let url = format!("{server}/{name}");
        if server == pg_server() {
            let template = migrated_template(&mut admin, server).await;
            admin
                .execute(format!("CREATE DATABASE {name} TEMPLATE {template}").as_str())
                .await
                .unwrap();
        } else {
            // Another server (a test's own, a replicated pair): migrated
            // in place, as Motor would.
            admin
                .execute(format!("CREATE DATABASE {name}").as_str())
                .await
                .unwrap();
            motor_store::migrate(&url).await.unwrap();
        }
        // The test's own reads; small, so that parallel tests stay well
        // inside the shared server's connection limit (100 by default).
        let pool = motor_store::connect(&url, 5).await.unwrap();
        Self { name, url, pool }
    }

    /// The end of a test that caught its body's panic to clean up first:
    /// closes the pool, drops the database (on the shared server), then
    /// returns the body's value or panics again with its panic.
    pub async fn drop_then<T>(self, outcome: std::thread::Result<T>) -> T {
        self.pool.close().await;
        harness::drop_database(&pg_server(), &self.name)
            .await
            .unwrap();
        outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// The shared server's database that every test database is copied from:
/// every migration applied once per set of migrations (its name carries
/// their checksums), not once per test. Copying it takes a quarter of a
/// second; migrating a new database took 1.2–1.7 s, hundreds of times a
/// run. The first test process to need it builds it under an advisory lock
/// (the others wait, then copy); it is a `motor_test_` database, so
/// scripts/test drops it with the rest and the next run builds it afresh.
async fn migrated_template(admin: &mut PgConnection, server: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    for m in motor_store::MIGRATOR.iter() {
        digest.update(m.version.to_be_bytes());
        digest.update(&m.checksum);
    }
    let name = format!(
        "motor_test_template_{}",
        &hex::encode(digest.finalize())[..16]
    );
    if database_exists(admin, &name).await {
        return name;
    }
    sqlx::query("SELECT pg_advisory_lock(hashtext($1))")
        .bind(&name)
        .execute(&mut *admin)
        .await
        .unwrap();
    if !database_exists(admin, &name).await {
        // Built under another name and renamed when complete: a process
        // killed midway leaves no half-migrated template behind.
        let building = format!("{name}_building");
        admin
            .execute(format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)").as_str())
            .await
            .unwrap();
        admin
            .execute(format!("CREATE DATABASE {building}").as_str())
            .await
            .unwrap();
        motor_store::migrate(&format!("{server}/{building}"))
            .await
            .unwrap();
        // The migration's connection may still be closing on the server.
        let mut tries = 0;
        while let Err(e) = admin
            .execute(format!("ALTER DATABASE {building} RENAME TO {name}").as_str())
            .await
        {
            tries += 1;
            assert!(tries < 100, "template {building} stays in use: {e}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    sqlx::query("SELECT pg_advisory_unlock(hashtext($1))")
        .bind(&name)
        .execute(&mut *admin)
        .await
        .unwrap();
    name
}

async fn database_exists(admin: &mut PgConnection, name: &str) -> bool {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(name)
        .fetch_one(admin)
        .await
        .unwrap()
}

/// A connection of its own to the database at `url`, with the session
/// settings of Motor's pool (`motor_store::connect_options`: JIT off), so
/// a test runs Motor's statements as Motor does. A plain
/// `PgConnection::connect` JIT-compiles every statement the planner costs
/// high: seconds each on a loaded machine, for statements that run in
/// milliseconds.
pub async fn connect(url: &str) -> PgConnection {
    let options = motor_store::connect_options(url)
        .unwrap()
        .application_name("motor-system-tests");
    PgConnection::connect_with(&options).await.unwrap()
}

/// The scans (index and sequential) of `table` this connection made and
/// has not reported to the statistics yet: its open transaction's, and
/// those of earlier transactions still pending, so a test compares two
/// readings in one transaction.
pub async fn scans(conn: &mut PgConnection, table: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT coalesce(sum(idx_scan + seq_scan), 0)::bigint
         FROM pg_stat_xact_user_tables WHERE relname = $1",
    )
    .bind(table)
    .fetch_one(conn)
    .await
    .unwrap()
}

/// Configuration for a Motor under test: its database, a topic prefix of
/// its own, the API on a free port.
pub fn config(db: &TestDb, prefix: &str) -> Config {
    Config {
        database_url: db.url.clone(),
        kafka_brokers: harness::shared_brokers(),
        kafka_partitions: 4,
        kafka_replication: 1,
        topic_prefix: prefix.to_owned(),
        http_addr: "127.0.0.1:0".into(),
        admin_token: Some(ADMIN_TOKEN.into()),
        master_key: None,
        // Six tests run at once (.config/nextest.toml), each with its own
        // Motor: at 12 a test held up to 24 of the shared server's 100
        // connections and a run reached its limit.
        database_pool: 8,
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
        metrics_sample_ms: 1000,
        metrics_top_instances: motor_metrics::DEFAULT_TOP_INSTANCES,
        metrics_top_types: motor_metrics::DEFAULT_TOP_TYPES,
        reconcile: Default::default(),
    }
}

pub const ADMIN_TOKEN: &str = "test-admin-token";

pub fn topic_prefix() -> String {
    format!("t{}", harness::short_id())
}

/// A hosts file for one [`TestMotor`]: names set here resolve to the given
/// addresses, every other name through the system. Motor's guards judge
/// these answers like any DNS answer.
#[derive(Default)]
pub struct Hosts(Mutex<HashMap<String, Vec<IpAddr>>>);

impl Hosts {
    /// Makes `name` resolve to `addrs` (empty: back to the system).
    pub fn set(&self, name: &str, addrs: &[IpAddr]) {
        let mut hosts = self.0.lock().expect("not poisoned");
        if addrs.is_empty() {
            hosts.remove(&name.to_ascii_lowercase());
        } else {
            hosts.insert(name.to_ascii_lowercase(), addrs.to_vec());
        }
    }
}

impl Resolver for Hosts {
    fn lookup(&self, name: &str) -> Lookup {
        let key = name.trim_end_matches('.').to_ascii_lowercase();
        match self.0.lock().expect("not poisoned").get(&key) {
            Some(ips) => {
                let ips = ips.clone();
                Box::pin(async move { Ok(ips) })
            }
            None => SystemResolver.lookup(name),
        }
    }
}

/// Motor running in this process with the given roles.
pub struct TestMotor {
    pub db: TestDb,
    pub prefix: String,
    pub addr: Option<SocketAddr>,
    pub http: reqwest::Client,
    /// How this Motor's destinations resolve names.
    pub hosts: Arc<Hosts>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl TestMotor {
    pub async fn start(roles: &[Role]) -> Self {
        Self::start_on(TestDb::new().await, roles).await
    }

    pub async fn start_on(db: TestDb, roles: &[Role]) -> Self {
        Self::start_configured(db, roles, |_| {}).await
    }

    /// Starts with the test configuration changed by `configure`.
    pub async fn start_configured(
        db: TestDb,
        roles: &[Role],
        configure: impl FnOnce(&mut Config),
    ) -> Self {
        let prefix = topic_prefix();
        let mut config = config(&db, &prefix);
        configure(&mut config);
        let shutdown = CancellationToken::new();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let roles = roles.to_vec();
        let stop = shutdown.clone();
        let hosts = Arc::new(Hosts::default());
        let resolver = hosts.clone();
        let task = tokio::spawn(async move {
            motor::serve::run_with_resolver(config, &roles, stop, Some(tx), resolver)
                .await
                .expect("motor serve");
        });
        let addr = rx.await.ok();
        Self {
            db,
            prefix,
            addr,
            http: reqwest::Client::new(),
            hosts,
            shutdown,
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr.expect("api role running"))
    }

    pub async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap();
    }

    /// `/metrics` as text.
    pub async fn metrics(&self) -> String {
        let response = self.http.get(self.url("/metrics")).send().await.unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        response.text().await.unwrap()
    }

    /// The counter `name` (its `_total` sample) on `/metrics`.
    pub async fn counter(&self, name: &str) -> u64 {
        let sample = format!("{name}_total ");
        self.metrics()
            .await
            .lines()
            .find_map(|line| line.strip_prefix(&sample))
            .unwrap_or_else(|| panic!("{name} is exposed"))
            .trim()
            .parse()
            .unwrap()
    }

    /// Waits until one connection listens on `channel`
    /// (`motor_store::changes`: one connection of a process listens on
    /// every channel its roles follow, in one statement).
    pub async fn listening(&self, channel: &str) {
        let since = Instant::now();
        while self.listeners(channel, false).await != 1 {
            assert!(
                since.elapsed() < Duration::from_secs(10),
                "nobody listens on {channel}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Ends the connections listening on `channel` (and on the other
    /// channels they listen on): how many there were.
    pub async fn end_listeners(&self, channel: &str) -> i64 {
        self.listeners(channel, true).await
    }

    /// The connections listening on `channel`, ended if `end`.
    async fn listeners(&self, channel: &str, end: bool) -> i64 {
        sqlx::query_scalar(
            "SELECT count(*) FILTER (WHERE CASE WHEN $2 THEN pg_terminate_backend(pid) ELSE true END)
               FROM pg_stat_activity
              WHERE datname = current_database()
                AND strpos(query, 'LISTEN \"' || $1 || '\";') > 0
                -- Listening once its LISTEN has finished.
                AND (state = 'idle' OR $2)",
        )
        .bind(channel)
        .bind(end)
        .fetch_one(&self.db.pool)
        .await
        .unwrap()
    }

    /// An app with one key holding every scope and `n` instances.
    pub async fn tenant(&self, instances: usize) -> Tenant {
        Tenant::create(&self.db.pool, instances).await
    }
}

pub struct Tenant {
    pub app: AppId,
    pub instances: Vec<InstanceId>,
    pub token: String,
}

impl Tenant {
    pub async fn create(pool: &Pool, instances: usize) -> Self {
        let app = admin::create_app(
            pool,
            CreateApp {
                nombre: "test app".into(),
                destinos_permitidos: vec!["127.0.0.1".into()],
                politica_destinos: None,
                contrato: None,
            },
        )
        .await
        .unwrap();
        let mut ids = Vec::new();
        for i in 0..instances {
            let Instance { id, .. } = admin::create_instance(
                pool,
                app.id,
                CreateInstance {
                    nombre: format!("instance {i}"),
                },
            )
            .await
            .unwrap();
            ids.push(id);
        }
        let token = key(
            pool,
            app.id,
            &[
                "events:write",
                "events:read",
                "subscriptions:manage",
                "deliveries:replay",
            ],
            &[],
        )
        .await;
        Self {
            app: app.id,
            instances: ids,
            token,
        }
    }
}

/// Appends `events` (producer JSON) to `instance`'s ledger in one
/// transaction, as the library does: no API, no wake-up of a serving
/// process's tail.
pub async fn append_to_ledger(pool: &Pool, instance: InstanceId, events: &[serde_json::Value]) {
    let events: Vec<NewEvent> = events
        .iter()
        .map(|e| NewEvent::parse(e, "e").unwrap())
        .collect();
    let mut tx = pool.begin().await.unwrap();
    motor_store::ledger::append(&mut tx, instance, &events)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

/// Issues a key with these scopes, restricted to `instancias` (empty = all).
pub async fn key(pool: &Pool, app: AppId, scopes: &[&str], instancias: &[InstanceId]) -> String {
    admin::create_key(
        pool,
        app,
        CreateKey {
            nombre: "test key".into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            instancias: instancias.iter().map(|i| i.to_string()).collect(),
            vence_en: None,
            permisos_lectura: vec![],
        },
    )
    .await
    .unwrap()
    .token
}

/// Serves `app` on a free port of `ip` (a receiver, a collector) for the
/// rest of the test; its address.
pub async fn serve(ip: &str, app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// Serves `app` on a free loopback port; its address.
pub async fn serve_loopback(app: axum::Router) -> SocketAddr {
    serve("127.0.0.1", app).await
}

/// A record read back from Kafka.
#[derive(Debug, Clone)]
pub struct KafkaRecord {
    pub partition: i32,
    pub offset: i64,
    pub key: String,
    pub payload: Vec<u8>,
    pub headers: HashMap<String, String>,
    /// The record's timestamp, in milliseconds since the epoch (the
    /// producer's clock when it was handed the record), if it has one.
    pub timestamp_ms: Option<i64>,
}

/// Reads `topic` from the beginning with a plain consumer (no group, no
/// Motor code) until at least `at_least` records arrived and nothing more
/// came for a second. (Tansu's high watermarks are not reliable, so the
/// caller says how many records it expects.)
pub fn read_topic(topic: &str, at_least: usize) -> Vec<KafkaRecord> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", harness::shared_brokers())
        .set("group.id", format!("reader-{}", harness::short_id()))
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let metadata = consumer
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    for p in metadata.topics()[0].partitions() {
        assignment
            .add_partition_offset(topic, p.id(), rdkafka::Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut last_arrival = Instant::now();
    loop {
        if out.len() >= at_least && last_arrival.elapsed() > Duration::from_secs(1) {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "{topic}: {} records after 90 s, expected at least {at_least}",
            out.len()
        );
        let Some(message) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        let message = message.unwrap();
        last_arrival = Instant::now();
        let mut headers = HashMap::new();
        if let Some(hs) = message.headers() {
            for h in hs.iter() {
                headers.insert(
                    h.key.to_owned(),
                    String::from_utf8_lossy(h.value.unwrap_or_default()).into_owned(),
                );
            }
        }
        out.push(KafkaRecord {
            partition: message.partition(),
            offset: message.offset(),
            key: String::from_utf8_lossy(message.key().unwrap_or_default()).into_owned(),
            payload: message.payload().unwrap_or_default().to_vec(),
            headers,
            timestamp_ms: message.timestamp().to_millis(),
        });
    }
}

/// Waits until the outbox is empty (everything relayed).
pub async fn wait_outbox_empty(pool: &Pool, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let pending = motor_store::outbox::pending(pool).await.unwrap();
        if pending == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "outbox still holds {pending} records"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Per instance, the seqs in the order they first appear in `records`.
pub fn first_occurrences(records: &[KafkaRecord]) -> HashMap<String, Vec<i64>> {
    let mut seen = std::collections::HashSet::new();
    let mut out: HashMap<String, Vec<i64>> = HashMap::new();
    for record in records {
        let seq: i64 = record.headers["seq"].parse().unwrap();
        if seen.insert((record.key.clone(), seq)) {
            out.entry(record.key.clone()).or_default().push(seq);
        }
    }
    out
}

/// Every role of `motor serve`.
pub const ALL_ROLES: [Role; 5] = [
    Role::Api,
    Role::Relay,
    Role::Dispatch,
    Role::Retry,
    Role::Sweeper,
];

/// [`ALL_ROLES`] as `--roles` takes them.
pub const ALL_ROLES_ARG: &str = "api,relay,dispatch,retry,sweeper";

/// `motor serve --roles <roles>` as its own process, against `db` and topic
/// prefix `prefix`; killed (SIGKILL) when dropped.
pub struct MotorProcess(std::process::Child);

impl MotorProcess {
    pub fn spawn(roles: &str, db: &TestDb, prefix: &str, env: &[(&str, &str)]) -> Self {
        Self::spawn_logging(roles, db, prefix, env, std::process::Stdio::inherit())
    }

    /// [`Self::spawn`] with the process's log (its stderr) sent to `log`.
    pub fn spawn_logging(
        roles: &str,
        db: &TestDb,
        prefix: &str,
        env: &[(&str, &str)],
        log: std::process::Stdio,
    ) -> Self {
        let mut command = std::process::Command::new(motor_bin());
        command
            .args(["serve", "--roles", roles])
            .env("MOTOR_DATABASE_URL", &db.url)
            .env("MOTOR_KAFKA_BROKERS", harness::shared_brokers())
            .env("MOTOR_TOPIC_PREFIX", prefix)
            .env("MOTOR_KAFKA_PARTITIONS", "4")
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(log);
        for (name, value) in env {
            command.env(name, value);
        }
        Self(command.spawn().expect("spawning motor"))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Resident memory of the process, in KiB (Linux `VmRSS`).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.0.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/<pid>/status")
    }

    /// `motor serve --roles api` on a free port; returns once it answers
    /// `/healthz`, with its base URL.
    pub async fn spawn_api(db: &TestDb, prefix: &str, env: &[(&str, &str)]) -> (Self, String) {
        Self::serving("api", db, prefix, env, std::process::Stdio::inherit()).await
    }

    /// `motor serve --roles <roles>` (with the API among them) on a free
    /// port, its log to `log`; returns once it answers `/healthz`, with its
    /// base URL.
    pub async fn serving(
        roles: &str,
        db: &TestDb,
        prefix: &str,
        env: &[(&str, &str)],
        log: std::process::Stdio,
    ) -> (Self, String) {
        let addr = format!("127.0.0.1:{}", harness::services::free_port());
        let mut env = env.to_vec();
        env.push(("MOTOR_HTTP_ADDR", &addr));
        let process = Self::spawn_logging(roles, db, prefix, &env, log);
        let base = format!("http://{addr}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(res) = reqwest::get(format!("{base}/healthz")).await {
                if res.status().is_success() {
                    return (process, base);
                }
            }
            assert!(
                Instant::now() < deadline,
                "motor at {addr} never became healthy"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits for the process to exit (after a signal the test sent).
    pub fn wait(&mut self) -> std::process::ExitStatus {
        self.0.wait().unwrap()
    }

    /// kill -9: no shutdown, no flush; its Postgres sessions (and advisory
    /// locks) end with the process.
    pub fn kill9(&mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for MotorProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
