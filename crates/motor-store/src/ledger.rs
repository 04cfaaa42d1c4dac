//! The ledger: appending events with a gapless per-instance `seq`, and
//! reading pages of it.
//!
//! `seq` is taken from `instances.last_seq` under that row's lock, in the
//! transaction that inserts the events and their outbox rows, so numbers
//! follow commit order with no gaps or repeats. A `source_id` already in the
//! ledger returns the stored event and consumes no number.

use std::{collections::HashMap, time::Duration};

use motor_domain::{
    envelope::{Envelope, SCHEMA_VERSION},
    ledger::LedgerQuery,
    outbox::OutboxRecord,
    time, EventId, InstanceId, NewEvent,
};
use sqlx::{PgConnection, PgExecutor, Row};
use uuid::Uuid;

use crate::{
    deliveries::{self, Handed},
    outbox, Result, StoreError,
};

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
    /// First attempts for this process's dispatcher, with
    /// [`append_locked_handing`]; empty otherwise.
    pub handed: Handed,
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
    append_locked_handing(conn, instance, events, None).await
}

/// [`append_locked`] for a process whose own dispatcher takes first
/// attempts straight after the commit: with `lease`, the heads of free
/// ordered lanes are claimed in the fan-out and returned, with the jobs of
/// unordered subscriptions, in [`Appended::handed`]. Hand them over only
/// after the transaction commits.
pub async fn append_locked_handing(
    conn: &mut PgConnection,
    instance: LockedInstance,
    events: &[NewEvent],
    lease: Option<Duration>,
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
    let mut handed = Handed::default();
    if stored > 0 {
        let first_seq = instance.last_seq + 1;
        rows.insert(&mut *conn, instance.id, received_at, seq)
            .await?;
        (_, handed) =
            deliveries::fan_out(&mut *conn, instance.id, instance.last_seq, seq, lease).await?;
        for claimed in &mut handed.claimed {
            claimed.envelope = rows.envelopes[(claimed.seq - first_seq) as usize].clone();
        }
    }
    Ok(Appended {
        envelopes,
        stored,
        handed,
    })
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

/// Column arrays for one multi-row insert of events and their outbox
/// records.
#[derive(Default)]
struct NewRows {
    seqs: Vec<i64>,
    event_ids: Vec<Uuid>,
    types: Vec<String>,
    sources: Vec<Option<String>>,
    envelopes: Vec<String>,
    records: outbox::Columns,
}

impl NewRows {
    fn push(&mut self, envelope: &Envelope, source: Option<String>, json: &str) {
        self.seqs.push(envelope.seq);
        self.event_ids.push(Uuid::from(envelope.event_id));
        self.types.push(envelope.event_type.clone());
        self.sources.push(source);
        self.envelopes.push(json.to_owned());
        self.records.push(OutboxRecord::event(envelope, json));
    }

    /// Inserts the events, their `{prefix}.events` outbox records (the
    /// envelope's bytes, in seq order) and the instance's new `last_seq`, in one
    /// statement: the instance's lock is held for as few round trips as
    /// possible.
    async fn insert(
        &self,
        conn: &mut PgConnection,
        instance: InstanceId,
        received_at: time::Timestamp,
        last_seq: i64,
    ) -> Result<()> {
        let records = &self.records;
        sqlx::query(&format!(
            "WITH stored AS (
                 INSERT INTO events (instance_id, seq, event_id, type, source_id, received_at, envelope)
                 SELECT $6, seq, event_id, type, source_id, $7, envelope
                 FROM UNNEST($8::bigint[], $9::uuid[], $10::text[], $11::text[], $12::text[])
                      AS t(seq, event_id, type, source_id, envelope)
             ), published AS (
                 {}
             )
             UPDATE instances SET last_seq = $13 WHERE id = $6",
            outbox::INSERT_FROM_COLUMNS
        ))
        .bind(&records.shards)
        .bind(&records.topics)
        .bind(&records.keys)
        .bind(&records.payloads)
        .bind(&records.headers)
        .bind(Uuid::from(instance))
        .bind(received_at)
        .bind(&self.seqs)
        .bind(&self.event_ids)
        .bind(&self.types)
        .bind(&self.sources)
        .bind(&self.envelopes)
        .bind(last_seq)
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
