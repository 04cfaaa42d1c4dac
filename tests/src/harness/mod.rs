//! The harness: one [`Run`] is a scenario's world — its own database (made
//! by `motor migrate`, dropped at the end), its own topic prefix, `motor`
//! processes with split roles, receivers and producers that record the
//! history, and the dump of Motor's tables at the end. Setup goes through
//! Motor's operator and public HTTP APIs; Postgres is only read.

mod dump;
pub mod process;
pub mod proxy;
pub mod receiver;
pub mod services;

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{bail, Context};
use reqwest::Method;
use serde_json::{json, Value};
use sqlx::{postgres::PgPoolOptions, Connection, Executor, PgConnection, PgPool};

pub use self::{
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

/// Posts events and records what it was told.
#[derive(Clone)]
pub struct Producer {
    api: String,
    http: reqwest::Client,
    token: String,
    recorder: Recorder,
}

impl Producer {
    async fn post(&self, instance: &str, events: &[Value]) -> anyhow::Result<(u16, Value)> {
        let response = self
            .http
            .post(format!(
                "http://{}/v1/instances/{instance}/events",
                self.api
            ))
            .bearer_auth(&self.token)
            .json(&Value::Array(events.to_vec()))
            .send()
            .await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// Posts `n` events to `instance` in batches of `batch`, each with a
    /// unique `source_id`; a failed batch is retried with the same source
    /// ids (the API dedups them) for up to `patience`.
    pub async fn produce(
        &self,
        instance: &str,
        n: usize,
        batch: usize,
        patience: Duration,
    ) -> anyhow::Result<()> {
        let tag = short_id();
        let mut i = 0;
        while i < n {
            let size = batch.min(n - i);
            let source_ids: Vec<String> = (i..i + size).map(|j| format!("{tag}-{j}")).collect();
            let events: Vec<Value> = source_ids
                .iter()
                .map(|s| json!({"type": "fault.test", "data": {"s": s}, "source_id": s}))
                .collect();
            let deadline = Instant::now() + patience;
            loop {
                let answer = self.post(instance, &events).await;
                match answer {
                    Ok((200 | 201, Value::Array(stored))) => {
                        let t_us = now_us();
                        for (envelope, source_id) in stored.iter().zip(&source_ids) {
                            self.recorder.record(&Record::Produced {
                                event_id: envelope["event_id"].as_str().unwrap_or("").into(),
                                instance_id: instance.into(),
                                seq: envelope["seq"].as_i64().unwrap_or(-1),
                                source_id: source_id.clone(),
                                t_us,
                            });
                        }
                        break;
                    }
                    other => {
                        let error = match other {
                            Ok((status, body)) => format!("{status} {body}"),
                            Err(e) => e.to_string(),
                        };
                        self.recorder.record(&Record::ProduceFailed {
                            instance_id: instance.into(),
                            source_ids: source_ids.clone(),
                            error: error.clone(),
                            t_us: now_us(),
                        });
                        if Instant::now() > deadline {
                            bail!("producing to {instance}: {error}");
                        }
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                }
            }
            i += size;
        }
        Ok(())
    }
}

fn short_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..10].to_owned()
}

impl Run {
    /// A fresh world for `config`; `motor_db_server` is the server URL
    /// Motor gets (a proxy's, or the same as `config.pg_server`).
    pub async fn start(config: RunConfig) -> anyhow::Result<Self> {
        let server = config.pg_server.clone();
        Self::start_via(config, &server).await
    }

    pub async fn start_via(config: RunConfig, motor_db_server: &str) -> anyhow::Result<Self> {
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
        };
        recorder.record(&Record::Meta {
            scenario: config.scenario.clone(),
            started_us: now_us(),
            settings,
        });
        let prefix = format!("f{id}");
        let api = format!("127.0.0.1:{}", services::free_port());
        let motor_db_url = format!("{motor_db_server}/{db_name}");
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
            ("RUST_LOG", "warn".into()),
        ];
        if let Some(secs) = config.give_up_secs {
            vars.push(("MOTOR_RETRY_GIVE_UP_SECS", secs.to_string()));
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

    /// One HTTP call to Motor's API; the JSON answer (or Null).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(u16, Value)> {
        let mut request = self
            .http
            .request(method, format!("http://{}{path}", self.api))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    async fn call_ok(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Value,
    ) -> anyhow::Result<Value> {
        let (status, answer) = self.call(method, path, token, Some(body)).await?;
        if !(200..300).contains(&status) {
            bail!("{path}: {status} {answer}");
        }
        Ok(answer)
    }

    /// Waits for the API to answer `/healthz`.
    pub async fn wait_api(&self, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            let ok = self
                .http
                .get(format!("http://{}/healthz", self.api))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the API did not come up on {}", self.api);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An app allowed to call loopback, `instances` instances, a key with
    /// every scope, and the attempt timeout of this run.
    pub async fn setup_tenant(&mut self, instances: usize) -> anyhow::Result<()> {
        let app = self
            .call_ok(
                Method::POST,
                "/v1/admin/apps",
                ADMIN_TOKEN,
                json!({"nombre": self.config.scenario, "destinos_permitidos": ["127.0.0.1"]}),
            )
            .await?;
        let app = app["id"].as_str().context("app id")?.to_owned();
        let mut ids = Vec::new();
        for i in 0..instances {
            let instance = self
                .call_ok(
                    Method::POST,
                    &format!("/v1/admin/apps/{app}/instances"),
                    ADMIN_TOKEN,
                    json!({"nombre": format!("instance {i}")}),
                )
                .await?;
            ids.push(instance["id"].as_str().context("instance id")?.to_owned());
        }
        let key = self
            .call_ok(
                Method::POST,
                &format!("/v1/admin/apps/{app}/keys"),
                ADMIN_TOKEN,
                json!({"nombre": "faults", "scopes": ["events:write", "events:read",
                       "subscriptions:manage", "deliveries:replay"], "instancias": []}),
            )
            .await?;
        self.call_ok(
            Method::PATCH,
            "/v1/admin/settings",
            ADMIN_TOKEN,
            json!({"webhooks.timeout_segundos": self.config.timeout_secs}),
        )
        .await?;
        self.tenant = Some(Tenant {
            app,
            instances: ids,
            token: key["token"].as_str().context("key token")?.to_owned(),
        });
        Ok(())
    }

    pub fn tenant(&self) -> &Tenant {
        self.tenant.as_ref().expect("setup_tenant first")
    }

    /// A subscription to `receiver` (which then trusts its secret); its id.
    pub async fn subscribe(
        &self,
        receiver: &Receiver,
        ordenado: bool,
        instancias: &[String],
    ) -> anyhow::Result<String> {
        let created = self
            .call_ok(
                Method::POST,
                "/v1/subscriptions",
                &self.tenant().token,
                json!({"nombre": receiver.name(), "url": receiver.url(),
                       "ordenado": ordenado, "instancias": instancias}),
            )
            .await?;
        receiver.trust(
            created["secreto"]["key_id"].as_str().context("key_id")?,
            created["secreto"]["valor"].as_str().context("valor")?,
        );
        Ok(created["suscripcion"]["id"]
            .as_str()
            .context("subscription id")?
            .to_owned())
    }

    /// Rotates a subscription's secret; the receiver trusts the new one
    /// too (the old one signs alongside it during the window).
    pub async fn rotate(&self, receiver: &Receiver, sub: &str) -> anyhow::Result<()> {
        let rotated = self
            .call_ok(
                Method::POST,
                &format!("/v1/subscriptions/{sub}/rotate"),
                &self.tenant().token,
                json!({}),
            )
            .await?;
        receiver.trust(
            rotated["secreto"]["key_id"].as_str().context("key_id")?,
            rotated["secreto"]["valor"].as_str().context("valor")?,
        );
        self.action("rotate", sub, "");
        Ok(())
    }

    /// Sets a subscription's `estado` (`activa` reactivates a suspended one).
    pub async fn set_estado(&self, sub: &str, estado: &str) -> anyhow::Result<()> {
        self.call_ok(
            Method::PATCH,
            &format!("/v1/subscriptions/{sub}"),
            &self.tenant().token,
            json!({"estado": estado}),
        )
        .await?;
        self.action(
            if estado == "activa" {
                "reactivate"
            } else {
                estado
            },
            sub,
            "",
        );
        Ok(())
    }

    /// A replay of seqs `from..=to` of `instance` to `sub`. A 5xx is
    /// retried with the same `Idempotency-Key`, as a client would (and
    /// recorded as a `replay_failed` action).
    pub async fn replay(
        &self,
        sub: &str,
        instance: &str,
        from: i64,
        to: i64,
    ) -> anyhow::Result<()> {
        let key = short_id();
        for _ in 0..5 {
            let response = self
                .http
                .post(format!(
                    "http://{}/v1/subscriptions/{sub}/replays",
                    self.api
                ))
                .bearer_auth(&self.tenant().token)
                .header("Idempotency-Key", &key)
                .json(
                    &json!({"instancia_id": instance, "desde_seq": from, "hasta_seq": to,
                              "motivo": "fault matrix"}),
                )
                .send()
                .await?;
            let status = response.status().as_u16();
            let body = response.text().await?;
            match status {
                202 => {
                    self.action("replay", sub, &body);
                    return Ok(());
                }
                500..=599 => {
                    self.action("replay_failed", sub, &format!("{status} {body}"));
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                _ => bail!("replay: {status} {body}"),
            }
        }
        bail!("replay: 5 answers 5xx in a row")
    }

    /// A producer for this run's tenant (cloneable, for a task of its own).
    pub fn producer(&self) -> Producer {
        Producer {
            api: self.api.clone(),
            http: self.http.clone(),
            token: self.tenant().token.clone(),
            recorder: self.recorder.clone(),
        }
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
        let mut admin =
            PgConnection::connect(&format!("{}/postgres", self.config.pg_server)).await?;
        admin
            .execute(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.db_name).as_str())
            .await?;
        let report = check(&History::read(&self.dir)?)?;
        eprintln!(
            "[{}] {:.1} s; history in {}\n{report}",
            self.config.scenario,
            self.started.elapsed().as_secs_f64(),
            self.dir.display()
        );
        Ok(report)
    }
}
