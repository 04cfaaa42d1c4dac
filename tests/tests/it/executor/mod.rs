//! The executor API (issue 32, items 3–4): claim and report with their
//! ledger events, deferral, leases, expiry, scopes, the long-poll, the
//! instance state, the sweeper's two command jobs, and the example
//! executor run as a process against `motor serve`. Commands are made
//! through `motor_store::commands::insert`, as the producer API does.

mod claim;
mod example;
mod poll;
mod state;
mod sweeper;

use motor_domain::{
    command::{CommandId, IdempotencyKey, NewCommand, RawOperation, RawOptions, RawSend},
    time, AppId, InstanceId,
};
use motor_store::Pool;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::util::{key, TestMotor};

/// A key with only `commands:execute`.
pub async fn executor_key(m: &TestMotor, app: AppId) -> String {
    key(&m.db.pool, app, &["commands:execute"], &[]).await
}

/// Stores a send (`en_cola`, due now) and commits it.
pub async fn send(
    pool: &Pool,
    app: AppId,
    instance: InstanceId,
    text: &str,
    options: RawOptions<'_>,
) -> CommandId {
    let content = json!({ "texto": text });
    let now = time::now_millis();
    let new = NewCommand::send(
        RawSend {
            chat: Some("5491100000000@s.whatsapp.net"),
            content: Some(&content),
            options,
        },
        now,
    )
    .unwrap();
    insert(pool, app, instance, &new, Some(text)).await
}

/// Stores a command of `kind` (`aceptado`) and commits it.
pub async fn operation(pool: &Pool, app: AppId, instance: InstanceId, kind: &str) -> CommandId {
    let parameters = json!({ "op": "join" });
    let new = NewCommand::operation(
        RawOperation {
            kind: Some(kind),
            parameters: Some(&parameters),
            options: RawOptions::default(),
        },
        time::now_millis(),
    )
    .unwrap();
    insert(pool, app, instance, &new, None).await
}

async fn insert(
    pool: &Pool,
    app: AppId,
    instance: InstanceId,
    new: &NewCommand,
    key: Option<&str>,
) -> CommandId {
    let key = key.map(|k| IdempotencyKey::parse(k).unwrap());
    let mut tx = pool.begin().await.unwrap();
    let stored = motor_store::commands::insert(
        &mut tx,
        app,
        instance,
        new,
        key.as_ref(),
        time::now_millis(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    stored.command.id
}

/// POST `path` with `body` (none when `Null`) under `token`.
pub async fn post(m: &TestMotor, token: &str, path: &str, body: Value) -> (StatusCode, Value) {
    let mut req = m.http.post(m.url(path)).bearer_auth(token);
    if !body.is_null() {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

pub async fn claim(m: &TestMotor, token: &str, id: CommandId) -> (StatusCode, Value) {
    post(
        m,
        token,
        &format!("/v1/executor/commands/{id}/claim"),
        Value::Null,
    )
    .await
}

pub async fn report(m: &TestMotor, token: &str, id: CommandId, body: Value) -> (StatusCode, Value) {
    post(
        m,
        token,
        &format!("/v1/executor/commands/{id}/report"),
        body,
    )
    .await
}

/// The command as stored.
pub async fn stored(pool: &Pool, id: CommandId) -> motor_store::commands::Command {
    motor_store::commands::get(pool, None, id)
        .await
        .unwrap()
        .expect("the command exists")
}

/// The instance's ledger, in seq order: (seq, type, command_id, data,
/// generation).
pub async fn ledger(pool: &Pool, instance: InstanceId) -> Vec<Value> {
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT envelope::text FROM events WHERE instance_id = $1 ORDER BY seq")
            .bind(uuid::Uuid::from(instance))
            .fetch_all(pool)
            .await
            .unwrap();
    rows.into_iter()
        .map(|(e,)| serde_json::from_str(&e).unwrap())
        .collect()
}

/// The events of `ledger` citing `id`, as their types.
pub fn types_for(ledger: &[Value], id: CommandId) -> Vec<String> {
    ledger
        .iter()
        .filter(|e| e["command_id"] == id.to_string())
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}
