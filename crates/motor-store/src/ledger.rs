//! The ledger: appending events with a gapless per-instance `seq`, and
//! reading pages of it.
//!
//! `seq` is taken from `instances.last_seq` under that row's lock, in the
//! transaction that inserts the events and their outbox rows, so numbers
//! follow commit order with no gaps or repeats. A `source_id` already in the
//! ledger returns the stored event and consumes no number.

use std::collections::HashMap;

use motor_domain::{
    envelope::{Envelope, SCHEMA_VERSION},
    ledger::LedgerQuery,
    time, EventId, InstanceId, NewEvent,
};
use sqlx::{types::Json, PgConnection, PgExecutor, Row};
use uuid::Uuid;

use crate::{deliveries, Result, StoreError};

/// Kafka topic suffix of ledger events (`{prefix}.events`).
pub const EVENTS_TOPIC: &str = "events";

/// An instance whose row this transaction holds locked.
#[derive(Debug, Clone, Copy)]
pub struct LockedInstance {
    pub id: InstanceId,
    pub generation: i64,
    pub last_seq: i64,
}

/// The result of an append, in request order.
#[derive(Debug, Clone)]
pub struct Appended {
    /// Stored envelope JSON of every requested event, new or existing.
    pub envelopes: Vec<String>,
    /// How many events were new (the rest were known `source_id`s).
    pub stored: usize,
}

/// Locks the instance row for the rest of the transaction.
pub async fn lock_instance(conn: &mut PgConnection, id: InstanceId) -> Result<LockedInstance> {
    let row = sqlx::query("SELECT generation, last_seq FROM instances WHERE id = $1 FOR UPDATE")
        .bind(Uuid::from(id))
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound("instance"))?;
    Ok(LockedInstance {
        id,
        generation: row.get("generation"),
        last_seq: row.get("last_seq"),
    })
}

/// Appends events to an instance's ledger inside the caller's transaction:
/// the library call for producers that write events together with their own
/// data. Commit the transaction and the events are accepted.
///
/// ```ignore
/// let mut tx = pool.begin().await?;
/// my_table_update(&mut tx).await?;
/// motor_store::ledger::append(&mut tx, instance, &events).await?;
/// tx.commit().await?;
/// ```
pub async fn append(
    conn: &mut PgConnection,
    instance: InstanceId,
    events: &[NewEvent],
) -> Result<Appended> {
    let locked = lock_instance(conn, instance).await?;
    append_locked(conn, locked, events).await
}

/// [`append`] for a caller that already holds the instance lock.
pub async fn append_locked(
    conn: &mut PgConnection,
    instance: LockedInstance,
    events: &[NewEvent],
) -> Result<Appended> {
    let known = known_sources(&mut *conn, instance.id, events).await?;
    let received_at = time::now_millis();

    let mut envelopes = Vec::with_capacity(events.len());
    let mut first_in_request: HashMap<&str, usize> = HashMap::new();
    let mut rows = NewRows::default();
    let mut seq = instance.last_seq;
    for event in events {
        if let Some(source) = event.source_id.as_deref() {
            if let Some(stored) = known.get(source) {
                envelopes.push(stored.clone());
                continue;
            }
            if let Some(&first) = first_in_request.get(source) {
                envelopes.push(envelopes[first].clone());
                continue;
            }
            first_in_request.insert(source, envelopes.len());
        }
        seq += 1;
        let envelope = Envelope {
            schema_version: SCHEMA_VERSION,
            event_id: EventId::new(),
            instance_id: instance.id,
            seq,
            event_type: event.event_type.as_str().to_owned(),
            occurred_at: event.occurred_at.unwrap_or(received_at),
            received_at,
            generation: instance.generation,
            origin: event.origin,
            command_id: event.command_id.clone(),
            data: event.data.clone(),
        };
        let json = envelope.to_json();
        rows.push(&envelope, event.source_id.clone(), &json);
        envelopes.push(json);
    }

    let stored = rows.seqs.len();
    if stored > 0 {
        rows.insert(&mut *conn, instance.id, received_at, seq)
            .await?;
        deliveries::fan_out(&mut *conn, instance.id, instance.last_seq, seq).await?;
    }
    Ok(Appended { envelopes, stored })
}

async fn known_sources(
    conn: &mut PgConnection,
    instance: InstanceId,
    events: &[NewEvent],
) -> Result<HashMap<String, String>> {
    let sources: Vec<&str> = events
        .iter()
        .filter_map(|e| e.source_id.as_deref())
        .collect();
    if sources.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = sqlx::query(
        "SELECT source_id, envelope FROM events WHERE instance_id = $1 AND source_id = ANY($2)",
    )
    .bind(Uuid::from(instance))
    .bind(&sources)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| (row.get("source_id"), row.get("envelope")))
        .collect())
}

/// Column arrays for one multi-row insert of events and outbox records.
#[derive(Default)]
struct NewRows {
    seqs: Vec<i64>,
    event_ids: Vec<Uuid>,
    types: Vec<String>,
    sources: Vec<Option<String>>,
    envelopes: Vec<String>,
    headers: Vec<Json<serde_json::Value>>,
}

impl NewRows {
    fn push(&mut self, envelope: &Envelope, source: Option<String>, json: &str) {
        self.seqs.push(envelope.seq);
        self.event_ids.push(Uuid::from(envelope.event_id));
        self.types.push(envelope.event_type.clone());
        self.sources.push(source);
        self.envelopes.push(json.to_owned());
        self.headers.push(Json(serde_json::json!({
            "event_id": envelope.event_id.to_string(),
            "instance_id": envelope.instance_id.to_string(),
            "seq": envelope.seq.to_string(),
            "type": envelope.event_type,
        })));
    }

    /// Inserts the events, their `{prefix}.events` outbox records (the
    /// envelope's bytes, in seq order) and the instance's new `last_seq`, in one
    /// statement: the instance's lock is held for as few round trips as
    /// possible.
    async fn insert(
        self,
        conn: &mut PgConnection,
        instance: InstanceId,
        received_at: time::Timestamp,
        last_seq: i64,
    ) -> Result<()> {
        sqlx::query(
            "WITH new AS (
                 SELECT * FROM UNNEST($3::bigint[], $4::uuid[], $5::text[], $6::text[], $7::text[],
                                      $8::jsonb[], $13::bytea[])
                      WITH ORDINALITY AS t(seq, event_id, type, source_id, envelope, headers, payload, n)
             ), stored AS (
                 INSERT INTO events (instance_id, seq, event_id, type, source_id, received_at, envelope)
                 SELECT $1, seq, event_id, type, source_id, $2, envelope FROM new
             ), published AS (
                 INSERT INTO outbox (shard, topic, key, payload, headers)
                 SELECT $9, $10, $11, payload, headers FROM new ORDER BY n
             )
             UPDATE instances SET last_seq = $12 WHERE id = $1",
        )
        .bind(Uuid::from(instance))
        .bind(received_at)
        .bind(&self.seqs)
        .bind(&self.event_ids)
        .bind(&self.types)
        .bind(&self.sources)
        .bind(&self.envelopes)
        .bind(&self.headers)
        .bind(motor_domain::outbox_shard(instance))
        .bind(EVENTS_TOPIC)
        .bind(instance.to_string())
        .bind(last_seq)
        .bind(self.envelopes.iter().map(|e| e.as_bytes()).collect::<Vec<&[u8]>>())
        .execute(&mut *conn)
        .await?;
        Ok(())
    }
}

/// A page of the ledger: `(seq, envelope)` in seq order, and whether more
/// matching events follow.
pub async fn read_page(
    db: impl PgExecutor<'_>,
    instance: InstanceId,
    query: &LedgerQuery,
) -> Result<(Vec<(i64, String)>, bool)> {
    let types: Vec<&str> = query.types.iter().map(|t| t.as_str()).collect();
    let rows = sqlx::query(
        "SELECT seq, envelope FROM events
         WHERE instance_id = $1 AND seq > $2 AND (cardinality($3::text[]) = 0 OR type = ANY($3))
         ORDER BY seq LIMIT $4",
    )
    .bind(Uuid::from(instance))
    .bind(query.after_seq)
    .bind(&types)
    .bind(query.limit + 1)
    .fetch_all(db)
    .await?;
    let has_more = rows.len() as i64 > query.limit;
    let page = rows
        .into_iter()
        .take(query.limit as usize)
        .map(|row| (row.get("seq"), row.get("envelope")))
        .collect();
    Ok((page, has_more))
}
