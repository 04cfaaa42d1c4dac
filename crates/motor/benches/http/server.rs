//! Motor under test: the `motor` binary as its own process (`motor serve`,
//! every role) on a fresh database and its own topic prefix, set up through
//! the operator API. Motor's tuning variables (`MOTOR_DATABASE_POOL`,
//! `MOTOR_DISPATCH_IN_FLIGHT`, `RUST_LOG`) pass through from the
//! environment.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::process::{Child, Command};
use uuid::Uuid;

use crate::{common::BenchDb, receiver::Hook};

pub struct Motor {
    child: Child,
    /// `http://127.0.0.1:{port}`, the API.
    pub base: String,
    /// Motor's stderr.
    pub log: PathBuf,
    /// Its topic prefix (`MOTOR_TOPIC_PREFIX`).
    pub prefix: String,
    /// The operator's token (`MOTOR_ADMIN_TOKEN`).
    pub admin_token: String,
    client: reqwest::Client,
}

/// The app the benchmark posts to: its key, and four sets of instances —
/// `ordered` (one ordered subscription, `orden: instancia`, covers them),
/// `keyed` (as many, one `orden: clave` subscription), `unordered` (one
/// unordered subscription) and `intake` (no subscription).
pub struct Tenant {
    pub token: String,
    pub ordered: Vec<Uuid>,
    pub keyed: Vec<Uuid>,
    pub unordered: Vec<Uuid>,
    pub intake: Vec<Uuid>,
}

impl Motor {
    /// Starts `binary serve` on `db` and waits until `/readyz` answers.
    pub async fn start(binary: &Path, db: &BenchDb) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let log = std::env::temp_dir().join(format!("motor-bench-{}.log", db.run_id));
        let admin_token = Uuid::new_v4().simple().to_string();
        let prefix = format!("bench{}h", db.run_id);
        let child = Command::new(binary)
            .arg("serve")
            .env("MOTOR_DATABASE_URL", &db.url)
            .env("MOTOR_KAFKA_BROKERS", &db.brokers)
            .env("MOTOR_TOPIC_PREFIX", &prefix)
            .env("MOTOR_HTTP_ADDR", format!("127.0.0.1:{port}"))
            .env("MOTOR_ADMIN_TOKEN", &admin_token)
            .env("MOTOR_MASTER_KEY", "bench-master-key-0123456789abcdef0123")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut motor = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
            prefix,
            admin_token,
            client: reqwest::Client::new(),
        };
        motor.wait_ready().await;
        motor
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("motor is running")
    }

    async fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("motor exited ({status}); see {}", self.log.display());
            }
            let ready = self.client.get(format!("{}/readyz", self.base)).send();
            if matches!(ready.await, Ok(r) if r.status() == StatusCode::OK) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "motor not ready after 60 s; see {}",
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An app allowing the receiver, `instances` ordered instances, as
    /// many keyed ones, one unordered and `instances` for intake, a key,
    /// and the three subscriptions.
    pub async fn tenant(&self, receiver: SocketAddr, instances: usize) -> Tenant {
        let app = self
            .post(
                "/v1/admin/apps",
                &self.admin_token,
                json!({"nombre": "bench", "destinos_permitidos": ["127.0.0.1"]}),
            )
            .await;
        let app = app["id"].as_str().unwrap().to_owned();
        let ordered = self.instances(&app, instances, "ordered").await;
        let keyed = self.instances(&app, instances, "keyed").await;
        let unordered = self.instances(&app, 1, "unordered").await;
        let intake = self.instances(&app, instances, "intake").await;
        let key = self
            .post(
                &format!("/v1/admin/apps/{app}/keys"),
                &self.admin_token,
                json!({"nombre": "bench", "scopes": ["events:write", "subscriptions:manage"]}),
            )
            .await;
        let token = key["token"].as_str().unwrap().to_owned();
        for (hook, covered, orden) in [
            (Hook::Ordered, &ordered, "instancia"),
            (Hook::Keyed, &keyed, "clave"),
            (Hook::Unordered, &unordered, "ninguno"),
        ] {
            let body = json!({
                "nombre": hook.path(),
                "url": format!("http://{receiver}/hook/{}", hook.path()),
                "instancias": covered,
                "orden": orden,
            });
            self.post("/v1/subscriptions", &token, body).await;
        }
        Tenant {
            token,
            ordered,
            keyed,
            unordered,
            intake,
        }
    }

    pub async fn instances(&self, app: &str, n: usize, name: &str) -> Vec<Uuid> {
        let mut ids = Vec::with_capacity(n);
        for i in 0..n {
            let path = format!("/v1/admin/apps/{app}/instances");
            let body = json!({"nombre": format!("{name}-{i}")});
            let created = self.post(&path, &self.admin_token, body).await;
            ids.push(created["id"].as_str().unwrap().parse().unwrap());
        }
        ids
    }

    /// POSTs `body` under `token` and expects 201.
    pub async fn post(&self, path: &str, token: &str, body: Value) -> Value {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let answer: Value = response.json().await.unwrap_or_default();
        assert_eq!(status, StatusCode::CREATED, "POST {path}: {answer}");
        answer
    }

    /// SIGTERM, then up to 20 s to drain before SIGKILL.
    pub async fn stop(mut self) {
        let pid = self.pid().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status().await;
        if tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .is_err()
        {
            eprintln!("motor did not stop within 20 s of SIGTERM; killing it");
            let _ = self.child.kill().await;
        }
    }
}
