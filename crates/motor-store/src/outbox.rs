//! The transactional outbox. Writers insert records in the transaction that
//! decides them (the ledger's append its events' records, each naming its
//! event rather than holding its envelope); the relay reads the shards it
//! owns in id order, publishes, and deletes what the broker acknowledged.

use motor_domain::{
    outbox::{event_headers, OutboxRecord},
    EventId, OUTBOX_SHARDS,
};
use sqlx::{types::Json, PgConnection, PgExecutor};

use crate::Result;

/// Advisory-lock class of outbox shards (`pg_try_advisory_lock(class, shard)`).
const SHARD_LOCK_CLASS: i32 = 0x4d54_5231; // "MTR1"

/// A record read back for publishing: bound for `{prefix}.{topic}`.
#[derive(Debug, Clone)]
pub struct PendingRecord {
    pub id: i64,
    /// The [`Topic`](motor_domain::outbox::Topic) suffix it was written with.
    pub topic: String,
    pub key: String,
    pub payload: Vec<u8>,
    pub headers: Vec<(String, String)>,
}

/// Records as column arrays, for one multi-row insert (`$1…$5` of
/// [`insert`], and of a command's statements).
#[derive(Debug, Default)]
pub(crate) struct Columns {
    pub shards: Vec<i32>,
    pub topics: Vec<&'static str>,
    pub keys: Vec<String>,
    pub payloads: Vec<Vec<u8>>,
    pub headers: Vec<Json<serde_json::Map<String, serde_json::Value>>>,
}

impl Columns {
    pub fn push(&mut self, record: OutboxRecord) {
        self.shards.push(record.shard());
        self.topics.push(record.topic.suffix());
        self.keys.push(record.instance.to_string());
        self.payloads.push(record.payload);
        self.headers.push(Json(
            record
                .headers
                .into_iter()
                .map(|(k, v)| (k.to_owned(), serde_json::Value::String(v)))
                .collect(),
        ));
    }

    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }
}

impl FromIterator<OutboxRecord> for Columns {
    fn from_iter<I: IntoIterator<Item = OutboxRecord>>(records: I) -> Self {
        let mut columns = Columns::default();
        for record in records {
            columns.push(record);
        }
        columns
    }
}

/// Inserts records in the given order (the relay publishes each
/// instance's records in id order).
pub async fn insert(
    conn: &mut PgConnection,
    records: impl IntoIterator<Item = OutboxRecord>,
) -> Result<()> {
    let columns: Columns = records.into_iter().collect();
    if columns.is_empty() {
        return Ok(());
    }
    sqlx::query!(
        "INSERT INTO outbox (shard, topic, key, payload, headers)
         SELECT shard, topic, key, payload, headers
         FROM UNNEST($1::int[], $2::text[], $3::text[], $4::bytea[], $5::jsonb[])
              WITH ORDINALITY AS t(shard, topic, key, payload, headers, n)
         ORDER BY n",
        &columns.shards,
        &columns.topics as &[&str],
        &columns.keys,
        &columns.payloads,
        &columns.headers as &[Json<_>],
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The oldest records of the given shards, in id order, once the records
/// `published` earlier are deleted, leaving out the records `in_flight`
/// (published, not yet acknowledged): one statement (and one round trip) a
/// relay round, where a delete after each publish and a read took two.
/// An event's record comes back with its envelope and headers, read from
/// the ledger ([`FETCH_AFTER`]).
pub async fn fetch_after(
    db: impl PgExecutor<'_>,
    shards: &[i32],
    limit: i64,
    published: &[i64],
    in_flight: &[i64],
) -> Result<Vec<PendingRecord>> {
    let rows = sqlx::query_file!(
        "src/outbox/fetch_after.sql",
        shards,
        limit,
        published,
        in_flight,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let (payload, headers) = match (row.payload, row.envelope) {
                (Some(payload), _) => {
                    let Json(headers) = row.headers;
                    let headers = headers
                        .into_iter()
                        .map(|(k, v)| match v {
                            serde_json::Value::String(s) => (k, s),
                            other => (k, other.to_string()),
                        })
                        .collect();
                    (payload, headers)
                }
                (None, Some(envelope)) => {
                    // Never None here: the ledger's columns are NOT NULL,
                    // and the key was cast to a uuid to find the event.
                    let headers = event_headers(
                        EventId::from_uuid(row.event_id?),
                        row.key.parse().ok()?,
                        row.event_seq?,
                        row.event_type.as_deref()?,
                    );
                    let headers = headers
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect();
                    (envelope.into_bytes(), headers)
                }
                // Left out by the statement.
                (None, None) => return None,
            };
            Some(PendingRecord {
                id: row.id,
                topic: row.topic,
                key: row.key,
                payload,
                headers,
            })
        })
        .collect())
}

/// The text of [`fetch_after`]'s statement, for the test of hot statements'
/// plans.
#[doc(hidden)]
pub const FETCH_AFTER: &str = include_str!("outbox/fetch_after.sql");

/// Deletes published records.
pub async fn delete(db: impl PgExecutor<'_>, ids: &[i64]) -> Result<u64> {
    let done = sqlx::query!("DELETE FROM outbox WHERE id = ANY($1)", ids)
        .execute(db)
        .await?;
    Ok(done.rows_affected())
}

/// Records waiting to be published.
pub async fn pending(db: impl PgExecutor<'_>) -> Result<i64> {
    Ok(
        sqlx::query_scalar!(r#"SELECT count(*) AS "count!" FROM outbox"#)
            .fetch_one(db)
            .await?,
    )
}

/// Tries to take a shard for this session; held until released or until the
/// connection closes (so a killed relay frees its shards at once).
pub async fn try_lock_shard(conn: &mut PgConnection, shard: i32) -> Result<bool> {
    Ok(sqlx::query_scalar!(
        r#"SELECT pg_try_advisory_lock($1, $2) AS "locked!""#,
        SHARD_LOCK_CLASS,
        shard
    )
    .fetch_one(conn)
    .await?)
}

pub async fn unlock_shard(conn: &mut PgConnection, shard: i32) -> Result<()> {
    sqlx::query_scalar!("SELECT pg_advisory_unlock($1, $2)", SHARD_LOCK_CLASS, shard)
        .fetch_one(conn)
        .await?;
    Ok(())
}

/// How many relay sessions are connected to this database (each relay's
/// lock connection carries `application_name = relay_app_name`), so each
/// can take its fair share of [`OUTBOX_SHARDS`].
pub async fn live_relays(db: impl PgExecutor<'_>, relay_app_name: &str) -> Result<i64> {
    Ok(sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM pg_stat_activity
           WHERE datname = current_database() AND application_name = $1"#,
        relay_app_name,
    )
    .fetch_one(db)
    .await?)
}

/// The fair share of shards for one of `relays` relays.
pub fn fair_share(relays: i64) -> usize {
    let relays = relays.max(1) as usize;
    (OUTBOX_SHARDS as usize).div_ceil(relays)
}
