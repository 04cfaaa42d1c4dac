//! The ledger: appending events with a gapless per-instance `seq`, and
//! reading pages of it.
//!
//! `seq` is taken from `instances.last_seq` under that row's lock, in the
//! transaction that inserts the events and their outbox rows, so numbers
//! follow commit order with no gaps or repeats. A `source_id` already in the
//! ledger returns the stored event and consumes no number.

use std::collections::HashMap;

mod appender;
pub mod redact;
pub mod stream;
mod write;

use motor_domain::{ledger::LedgerQuery, InstanceId, NewEvent};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

pub use appender::{Appender, Ways};
use write::Numbering;

use crate::{
    deliveries::{Handed, Taking},
    Result, StoreError,
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
    /// The types of the new events, in order (the per-type metrics).
    pub new_types: Vec<String>,
    /// First attempts for this process's dispatcher, with
    /// [`append_locked_handing`]; empty otherwise.
    pub handed: Handed,
}

/// Locks the instance row for the rest of the transaction.
pub async fn lock_instance(conn: &mut PgConnection, id: InstanceId) -> Result<LockedInstance> {
    let row = sqlx::query!(
        "SELECT generation, last_seq FROM instances WHERE id = $1 FOR NO KEY UPDATE",
        Uuid::from(id)
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(StoreError::NotFound("instance"))?;
    Ok(LockedInstance {
        id,
        generation: row.generation,
        last_seq: row.last_seq,
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
/// attempts straight after the commit: with `taking`, the heads of free
/// ordered lanes and the deliveries of unordered subscriptions are claimed
/// in the fan-out and returned, with the jobs of crowded ones, in
/// [`Appended::handed`]. Hand them over only
/// after the transaction commits.
pub async fn append_locked_handing(
    conn: &mut PgConnection,
    instance: LockedInstance,
    events: &[NewEvent],
    taking: Option<&Taking>,
) -> Result<Appended> {
    let (mut appended, handed) = write::append_locked_all(
        conn,
        &mut HashMap::from([(instance.id, instance)]),
        &[Request {
            instance: instance.id,
            events,
        }],
        taking,
        Numbering::Locked,
    )
    .await?;
    let mut one = appended.pop().expect("one request, one answer");
    one.handed = handed;
    Ok(one)
}

/// One producer request of a batch.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub instance: InstanceId,
    pub events: &'a [NewEvent],
}

/// Appends the requests of a batch in the caller's transaction — group
/// commit: many producers' requests, one commit. Locks their instances in
/// id order (so two batches never deadlock), then stores every new event,
/// its outbox record and each instance's new `last_seq` and fans out, in
/// one statement whatever the number of instances. Requests of
/// one instance get consecutive seqs in request order. Answers one
/// [`Appended`] per request (its `handed` empty) and what the whole batch
/// hands over (see [`append_locked_handing`]).
pub async fn append_batch(
    conn: &mut PgConnection,
    requests: &[Request<'_>],
    taking: Option<&Taking>,
) -> Result<(Vec<Appended>, Handed)> {
    let (appended, _) = append_batch_reading(conn, requests, taking).await?;
    Ok(appended)
}

/// [`append_batch`], also answering each instance as the batch left it.
async fn append_batch_reading(
    conn: &mut PgConnection,
    requests: &[Request<'_>],
    taking: Option<&Taking>,
) -> Result<((Vec<Appended>, Handed), HashMap<InstanceId, LockedInstance>)> {
    let mut ids: Vec<Uuid> = requests.iter().map(|r| Uuid::from(r.instance)).collect();
    ids.sort();
    ids.dedup();
    let mut locked: HashMap<InstanceId, LockedInstance> = if let [id] = ids[..] {
        // A batch of one instance, as at low load: `id = $1` is planned
        // once per connection, where `id = ANY($1)` was planned anew at
        // every call (its custom plan, sure of one row, always looked
        // cheaper than a generic one).
        let one = lock_instance(conn, InstanceId::from_uuid(id)).await?;
        HashMap::from([(one.id, one)])
    } else {
        sqlx::query!(
            "SELECT id, generation, last_seq FROM instances WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE",
            &ids,
        )
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(|row| {
            let id = InstanceId::from_uuid(row.id);
            (
                id,
                LockedInstance {
                    id,
                    generation: row.generation,
                    last_seq: row.last_seq,
                },
            )
        })
        .collect()
    };
    if locked.len() != ids.len() {
        return Err(StoreError::NotFound("instance"));
    }
    let appended =
        write::append_locked_all(conn, &mut locked, requests, taking, Numbering::Locked).await?;
    Ok((appended, locked))
}

/// [`append_batch`] for a caller that already holds every request's
/// instance locked, in id order, in `locked` (each `last_seq` moves on as
/// its events are numbered): the commands' accept, which checks each
/// request under the locks before it knows which events to append.
pub async fn append_batch_locked(
    conn: &mut PgConnection,
    locked: &mut HashMap<InstanceId, LockedInstance>,
    requests: &[Request<'_>],
    taking: Option<&Taking>,
) -> Result<(Vec<Appended>, Handed)> {
    write::append_locked_all(conn, locked, requests, taking, Numbering::Locked).await
}

/// A page of the ledger: `(seq, envelope)` in seq order, and whether more
/// matching events follow.
pub async fn read_page(
    db: impl PgExecutor<'_>,
    instance: InstanceId,
    query: &LedgerQuery,
) -> Result<(Vec<(i64, String)>, bool)> {
    let types: Vec<&str> = query.types.iter().map(|t| t.as_str()).collect();
    let rows = sqlx::query!(
        "SELECT seq, envelope FROM events
         WHERE instance_id = $1 AND seq > $2 AND (cardinality($3::text[]) = 0 OR type = ANY($3))
         ORDER BY seq LIMIT $4",
        Uuid::from(instance),
        query.after_seq,
        &types as &[&str],
        query.limit + 1,
    )
    .fetch_all(db)
    .await?;
    let has_more = rows.len() as i64 > query.limit;
    let page = rows
        .into_iter()
        .take(query.limit as usize)
        .map(|row| (row.seq, row.envelope))
        .collect();
    Ok((page, has_more))
}
