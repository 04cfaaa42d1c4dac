//! The transactional outbox. Writers insert records in the transaction that
//! decides them; the relay reads the shards it owns in id order, publishes,
//! and deletes what the broker acknowledged.

use motor_domain::{outbox_shard, InstanceId, OUTBOX_SHARDS};
use sqlx::{types::Json, PgConnection, PgExecutor, Row};

use crate::Result;

/// Advisory-lock class of outbox shards (`pg_try_advisory_lock(class, shard)`).
const SHARD_LOCK_CLASS: i32 = 0x4d54_5231; // "MTR1"

/// One record bound for `{prefix}.{topic}`.
#[derive(Debug, Clone)]
pub struct OutboxRecord {
    pub id: i64,
    pub topic: String,
    pub key: String,
    pub payload: Vec<u8>,
    pub headers: Vec<(String, String)>,
}

/// Inserts records that share a topic and an instance key, in order.
pub async fn insert_many(
    conn: &mut PgConnection,
    topic: &str,
    instance: InstanceId,
    payloads: &[Vec<u8>],
    headers: &[Json<serde_json::Value>],
) -> Result<()> {
    sqlx::query(
        "INSERT INTO outbox (shard, topic, key, payload, headers)
         SELECT $1, $2, $3, payload, headers
         FROM UNNEST($4::bytea[], $5::jsonb[]) WITH ORDINALITY AS t(payload, headers, n)
         ORDER BY n",
    )
    .bind(outbox_shard(instance))
    .bind(topic)
    .bind(instance.to_string())
    .bind(payloads)
    .bind(headers)
    .execute(conn)
    .await?;
    Ok(())
}

/// The oldest records of the given shards, in id order.
pub async fn fetch(
    db: impl PgExecutor<'_>,
    shards: &[i32],
    limit: i64,
) -> Result<Vec<OutboxRecord>> {
    let rows = sqlx::query(
        "SELECT id, topic, key, payload, headers FROM outbox
         WHERE shard = ANY($1) ORDER BY id LIMIT $2",
    )
    .bind(shards)
    .bind(limit)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let Json(headers): Json<serde_json::Map<String, serde_json::Value>> =
                row.get("headers");
            OutboxRecord {
                id: row.get("id"),
                topic: row.get("topic"),
                key: row.get("key"),
                payload: row.get("payload"),
                headers: headers
                    .into_iter()
                    .map(|(k, v)| match v {
                        serde_json::Value::String(s) => (k, s),
                        other => (k, other.to_string()),
                    })
                    .collect(),
            }
        })
        .collect())
}

/// Deletes published records.
pub async fn delete(db: impl PgExecutor<'_>, ids: &[i64]) -> Result<u64> {
    let done = sqlx::query("DELETE FROM outbox WHERE id = ANY($1)")
        .bind(ids)
        .execute(db)
        .await?;
    Ok(done.rows_affected())
}

/// Records waiting to be published.
pub async fn pending(db: impl PgExecutor<'_>) -> Result<i64> {
    Ok(sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(db)
        .await?)
}

/// Tries to take a shard for this session; held until released or until the
/// connection closes (so a killed relay frees its shards at once).
pub async fn try_lock_shard(conn: &mut PgConnection, shard: i32) -> Result<bool> {
    Ok(sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
        .bind(SHARD_LOCK_CLASS)
        .bind(shard)
        .fetch_one(conn)
        .await?)
}

pub async fn unlock_shard(conn: &mut PgConnection, shard: i32) -> Result<()> {
    sqlx::query("SELECT pg_advisory_unlock($1, $2)")
        .bind(SHARD_LOCK_CLASS)
        .bind(shard)
        .execute(conn)
        .await?;
    Ok(())
}

/// How many relay sessions are connected to this database (each relay's
/// lock connection carries `application_name = relay_app_name`), so each
/// can take its fair share of [`OUTBOX_SHARDS`].
pub async fn live_relays(db: impl PgExecutor<'_>, relay_app_name: &str) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = $1",
    )
    .bind(relay_app_name)
    .fetch_one(db)
    .await?)
}

/// The fair share of shards for one of `relays` relays.
pub fn fair_share(relays: i64) -> usize {
    let relays = relays.max(1) as usize;
    (OUTBOX_SHARDS as usize).div_ceil(relays)
}
