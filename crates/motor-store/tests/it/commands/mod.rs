//! Commands against a real Postgres: every transition with its ledger
//! event, the idempotency and generation guards, and the races
//! (`races.rs`) and the sweeper's jobs (`sweep.rs`).

mod batch;
mod list;
mod races;
mod sweep;
mod transitions;

use chrono::{DateTime, SubsecRound, TimeDelta, Utc};
use motor_domain::{
    command::{
        CommandId, CommandStatus, IdempotencyKey, NewCommand, RawOperation, RawOptions, RawSend,
        Report,
    },
    time, AppId, InstanceId,
};
use motor_store::commands::{self, Accepted, Claimed, Command, CommandError};
use serde_json::{json, Value};
use sqlx::{Connection, Executor, PgConnection, PgPool};
use uuid::Uuid;

fn server_url() -> String {
    std::env::var("MOTOR_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// A fresh database with every migration, one app and one instance.
pub struct Db {
    name: String,
    pub pool: PgPool,
    pub app: AppId,
    pub instance: InstanceId,
}

impl Db {
    pub async fn new() -> Self {
        let name = format!(
            "motor_test_cmd_{}",
            &Uuid::new_v4().simple().to_string()[..12]
        );
        let mut admin = PgConnection::connect(&format!("{}/postgres", server_url()))
            .await
            .expect("postgres must be running");
        admin
            .execute(format!("CREATE DATABASE {name}").as_str())
            .await
            .unwrap();
        let pool = motor_store::connect(&format!("{}/{name}", server_url()), 20)
            .await
            .unwrap();
        motor_store::MIGRATOR.run(&pool).await.unwrap();
        let db = Self {
            name,
            pool,
            app: AppId::new(),
            instance: InstanceId::new(),
        };
        db.add_app(db.app).await;
        db.add_instance(db.app, db.instance).await;
        db
    }

    pub async fn add_app(&self, app: AppId) {
        sqlx::query("INSERT INTO apps (id, nombre) VALUES ($1, 'app')")
            .bind(Uuid::from(app))
            .execute(&self.pool)
            .await
            .unwrap();
    }

    pub async fn add_instance(&self, app: AppId, instance: InstanceId) {
        sqlx::query("INSERT INTO instances (id, app_id, nombre) VALUES ($1, $2, 'i')")
            .bind(Uuid::from(instance))
            .bind(Uuid::from(app))
            .execute(&self.pool)
            .await
            .unwrap();
    }

    pub async fn drop_it(self) {
        self.pool.close().await;
        let mut admin = PgConnection::connect(&format!("{}/postgres", server_url()))
            .await
            .unwrap();
        admin
            .execute(format!("DROP DATABASE {} WITH (FORCE)", self.name).as_str())
            .await
            .unwrap();
    }

    /// Inserts `new` in a transaction of its own and commits it.
    pub async fn insert(
        &self,
        new: &NewCommand,
        key: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Accepted, CommandError> {
        let key = key.map(|k| IdempotencyKey::parse(k).unwrap());
        let mut tx = self.pool.begin().await.unwrap();
        let accepted =
            commands::insert(&mut tx, self.app, self.instance, new, key.as_ref(), now).await?;
        tx.commit().await.unwrap();
        Ok(accepted)
    }

    pub async fn claim(
        &self,
        id: CommandId,
        lease_secs: u64,
        now: DateTime<Utc>,
    ) -> Result<Claimed, CommandError> {
        let mut tx = self.pool.begin().await.unwrap();
        let lease = std::time::Duration::from_secs(lease_secs);
        let claimed = commands::claim(&mut tx, self.app, id, lease, now).await;
        tx.commit().await.unwrap();
        claimed
    }

    /// Reports `report` on `id` under `lease`, in a transaction of its own
    /// (committed either way).
    pub async fn report(
        &self,
        id: CommandId,
        lease: Uuid,
        report: &Report,
        now: DateTime<Utc>,
    ) -> Result<Command, CommandError> {
        let mut tx = self.pool.begin().await.unwrap();
        let reported = commands::report(&mut tx, self.app, id, lease, report, now).await;
        tx.commit().await.unwrap();
        reported
    }

    /// A send to chat `549` with `text`, accepted under `key`.
    pub async fn sent(&self, text: &str, key: &str, now: DateTime<Utc>) -> Command {
        self.insert(&send("549", text, now), Some(key), now)
            .await
            .expect("the send is accepted")
            .command
    }

    /// Claims `id` and answers its lease; panics unless the claim took it.
    pub async fn claimed(&self, id: CommandId, now: DateTime<Utc>) -> (Command, Uuid) {
        match self.claim(id, 30, now).await.unwrap() {
            Claimed::Claimed { command, lease } => (command, lease),
            other => panic!("not claimed: {other:?}"),
        }
    }

    pub async fn get(&self, id: CommandId) -> Command {
        commands::get(&self.pool, Some(self.app), id)
            .await
            .unwrap()
            .expect("the command exists")
    }

    /// The instance's ledger: (seq, type, command_id, data), in seq order.
    pub async fn ledger(&self) -> Vec<(i64, String, Option<String>, Value)> {
        let rows: Vec<(i64, String)> =
            sqlx::query_as("SELECT seq, envelope FROM events WHERE instance_id = $1 ORDER BY seq")
                .bind(Uuid::from(self.instance))
                .fetch_all(&self.pool)
                .await
                .unwrap();
        rows.into_iter()
            .map(|(seq, envelope)| {
                let envelope: Value = serde_json::from_str(&envelope).unwrap();
                (
                    seq,
                    envelope["type"].as_str().unwrap().to_owned(),
                    envelope["command_id"].as_str().map(str::to_owned),
                    envelope["data"].clone(),
                )
            })
            .collect()
    }

    /// The `{prefix}.commands` records waiting in the outbox: (key, payload).
    pub async fn command_records(&self) -> Vec<(String, Value)> {
        let rows: Vec<(String, Vec<u8>)> =
            sqlx::query_as("SELECT key, payload FROM outbox WHERE topic = 'commands' ORDER BY id")
                .fetch_all(&self.pool)
                .await
                .unwrap();
        rows.into_iter()
            .map(|(key, payload)| (key, serde_json::from_slice(&payload).unwrap()))
            .collect()
    }

    pub async fn relink(&self) {
        sqlx::query("UPDATE instances SET generation = generation + 1 WHERE id = $1")
            .bind(Uuid::from(self.instance))
            .execute(&self.pool)
            .await
            .unwrap();
    }
}

/// A fixed "now" at millisecond precision (what Postgres keeps exactly).
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(3)
}

pub fn later(now: DateTime<Utc>, secs: i64) -> DateTime<Utc> {
    now + TimeDelta::seconds(secs)
}

pub fn send(chat: &str, text: &str, now: DateTime<Utc>) -> NewCommand {
    send_with(chat, text, RawOptions::default(), now)
}

pub fn send_with(
    chat: &str,
    text: &str,
    options: RawOptions<'_>,
    now: DateTime<Utc>,
) -> NewCommand {
    let content = json!({ "texto": text });
    NewCommand::send(
        RawSend {
            chat: Some(chat),
            content: Some(&content),
            options,
        },
        now,
    )
    .unwrap()
}

pub fn operation(kind: &str, now: DateTime<Utc>) -> NewCommand {
    let parameters = json!({ "operacion": "unirse", "grupo": "g1" });
    NewCommand::operation(
        RawOperation {
            kind: Some(kind),
            parameters: Some(&parameters),
            options: RawOptions::default(),
        },
        now,
    )
    .unwrap()
}

pub fn status(command: &Command) -> &'static str {
    command.status.as_str()
}

pub fn ts(t: DateTime<Utc>) -> String {
    time::format(&t)
}

pub fn is_illegal(e: &CommandError, from: CommandStatus) -> bool {
    matches!(e, CommandError::Illegal(i) if i.from == from)
}
