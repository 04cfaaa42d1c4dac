//! The append itself, for one request or a batch: envelopes numbered from
//! each locked instance's `last_seq`, known `source_id`s answered with the
//! stored envelope, then two statements whatever the batch holds — the
//! known sources (only when the batch names any), and the events with
//! their outbox records, new `last_seq`s and fan-out.

use std::collections::HashMap;

use motor_domain::{
    contract::Environment,
    envelope::{Envelope, SCHEMA_VERSION},
    outbox::outbox_shard,
    time, EventId, InstanceId,
};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{Appended, LockedInstance, Request};
use crate::{
    deliveries::{self, Handed, Taking},
    Result,
};

/// How the instances in a batch's `locked` map were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Numbering {
    /// Locked by this transaction: the `source_id`s already stored are
    /// read under the locks and answered with their envelopes.
    Locked,
    /// Known from this process's last append to each, not locked: the
    /// append statement, run on its own, locks them and writes nothing
    /// unless they are still as given and none of the batch's
    /// `source_id`s is stored (`deliveries/sql/append.sql`, `expected`).
    Expected,
}

/// Appends `requests` for the instances in `locked` (their `last_seq`
/// moves on as events are numbered), read as `numbering` says.
pub(super) async fn append_locked_all(
    conn: &mut PgConnection,
    locked: &mut HashMap<InstanceId, LockedInstance>,
    requests: &[Request<'_>],
    taking: Option<&Taking>,
    numbering: Numbering,
) -> Result<(Vec<Appended>, Handed)> {
    let known = match numbering {
        Numbering::Locked => known_sources(&mut *conn, requests).await?,
        Numbering::Expected => HashMap::new(),
    };
    let received_at = time::now_millis();
    let before: HashMap<InstanceId, i64> = locked.values().map(|l| (l.id, l.last_seq)).collect();

    let mut answers = Vec::with_capacity(requests.len());
    // A source_id seen earlier in this batch answers with that envelope.
    let mut first_in_batch: HashMap<(InstanceId, &str), String> = HashMap::new();
    let mut rows = NewRows::default();
    for request in requests {
        let instance = locked
            .get_mut(&request.instance)
            .expect("every request's instance is locked");
        let mut envelopes = Vec::with_capacity(request.events.len());
        let mut stored = 0;
        let mut new_types = Vec::new();
        for event in request.events {
            if let Some(source) = event.source_id.as_deref() {
                if let Some(envelope) = known
                    .get(&(instance.id, source.to_owned()))
                    .or_else(|| first_in_batch.get(&(instance.id, source)))
                {
                    envelopes.push(envelope.clone());
                    continue;
                }
            }
            instance.last_seq += 1;
            let envelope = Envelope {
                schema_version: SCHEMA_VERSION,
                event_id: EventId::new(),
                instance_id: instance.id,
                seq: instance.last_seq,
                event_type: event.event_type.as_str().to_owned(),
                occurred_at: event.occurred_at.unwrap_or(received_at),
                received_at,
                generation: instance.generation,
                origin: event.origin,
                command_id: event.command_id.clone(),
                data: event.data.clone(),
            };
            let json = envelope.to_json();
            if let Some(source) = event.source_id.as_deref() {
                first_in_batch.insert((instance.id, source), json.clone());
            }
            rows.push(
                &envelope,
                event.source_id.clone(),
                event.environment,
                event.order_key.as_ref().map(|k| k.as_str().to_owned()),
                &json,
            );
            envelopes.push(json);
            new_types.push(envelope.event_type);
            stored += 1;
        }
        answers.push(Appended {
            envelopes,
            stored,
            new_types,
            handed: Handed::default(),
        });
    }

    let mut handed = Handed::default();
    if rows.seqs.is_empty() {
        return Ok((answers, handed));
    }
    // Each instance that got events, and its new last_seq.
    let (numbered, last_seqs): (Vec<Uuid>, Vec<i64>) = locked
        .values()
        .filter(|l| l.last_seq > before[&l.id])
        .map(|l| (Uuid::from(l.id), l.last_seq))
        .unzip();
    let expected = match numbering {
        Numbering::Locked => Expected::default(),
        Numbering::Expected => Expected::of(locked, &before, &rows),
    };
    let fanned_out = rows
        .insert(
            &mut *conn,
            received_at,
            &numbered,
            &last_seqs,
            taking,
            &expected,
        )
        .await?;
    handed = deliveries::hand_over(&mut *conn, fanned_out).await?;
    let stored_at: HashMap<(InstanceId, i64), usize> = rows
        .instances
        .iter()
        .zip(&rows.seqs)
        .enumerate()
        .map(|(i, (instance, seq))| ((InstanceId::from_uuid(*instance), *seq), i))
        .collect();
    for claimed in &mut handed.claimed {
        claimed.envelope = rows.envelopes[stored_at[&(claimed.instance_id, claimed.seq)]].clone();
    }
    Ok((answers, handed))
}

/// Envelopes already stored for the requests' `source_id`s, by instance
/// and source.
async fn known_sources(
    conn: &mut PgConnection,
    requests: &[Request<'_>],
) -> Result<HashMap<(InstanceId, String), String>> {
    let (mut instances, mut sources) = (Vec::new(), Vec::new());
    for request in requests {
        for source in request.events.iter().filter_map(|e| e.source_id.as_deref()) {
            instances.push(Uuid::from(request.instance));
            sources.push(source);
        }
    }
    if sources.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = sqlx::query!(
        r#"SELECT e.instance_id, e.source_id AS "source_id!", e.envelope
           FROM UNNEST($1::uuid[], $2::text[]) AS k(instance_id, source_id)
           JOIN events e ON e.instance_id = k.instance_id AND e.source_id = k.source_id"#,
        &instances,
        &sources as &[&str],
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            (
                (InstanceId::from_uuid(row.instance_id), row.source_id),
                row.envelope,
            )
        })
        .collect())
}

/// A room as the append's `int` (no subscription has more).
fn room_of(room: u32) -> i32 {
    i32::try_from(room).unwrap_or(i32::MAX)
}

/// What an optimistic append expects of its instances (`append.sql`'s
/// $18-$22): each one's generation and last_seq as numbered from, and no
/// event stored with one of the batch's `source_id`s. Empty for a
/// transaction that holds the instances.
#[derive(Default)]
struct Expected {
    instances: Vec<Uuid>,
    last_seqs: Vec<i64>,
    generations: Vec<i64>,
    source_instances: Vec<Uuid>,
    sources: Vec<String>,
}

impl Expected {
    fn of(
        locked: &HashMap<InstanceId, LockedInstance>,
        before: &HashMap<InstanceId, i64>,
        rows: &NewRows,
    ) -> Self {
        let mut expected = Self::default();
        for instance in locked.values() {
            expected.instances.push(Uuid::from(instance.id));
            expected.last_seqs.push(before[&instance.id]);
            expected.generations.push(instance.generation);
        }
        for (instance, source) in rows.instances.iter().zip(&rows.sources) {
            if let Some(source) = source {
                expected.source_instances.push(*instance);
                expected.sources.push(source.clone());
            }
        }
        expected
    }
}

/// Column arrays for one multi-row insert of events and their outbox
/// records.
#[derive(Default)]
struct NewRows {
    instances: Vec<Uuid>,
    seqs: Vec<i64>,
    event_ids: Vec<Uuid>,
    types: Vec<String>,
    sources: Vec<Option<String>>,
    envelopes: Vec<String>,
    environments: Vec<&'static str>,
    order_keys: Vec<Option<String>>,
    /// The outbox shard of each event's instance, for its
    /// `{prefix}.events` record.
    shards: Vec<i32>,
}

impl NewRows {
    fn push(
        &mut self,
        envelope: &Envelope,
        source: Option<String>,
        environment: Environment,
        order_key: Option<String>,
        json: &str,
    ) {
        self.instances.push(Uuid::from(envelope.instance_id));
        self.seqs.push(envelope.seq);
        self.event_ids.push(Uuid::from(envelope.event_id));
        self.types.push(envelope.event_type.clone());
        self.sources.push(source);
        self.order_keys.push(order_key);
        self.envelopes.push(json.to_owned());
        self.environments.push(environment.as_str());
        self.shards.push(outbox_shard(envelope.instance_id));
    }

    /// Inserts the events, their `{prefix}.events` outbox records (each
    /// names its event, whose envelope the relay reads from the ledger; in
    /// seq order per instance) and the `last_seqs` of
    /// the `numbered` instances, and fans them out, in one
    /// statement (`deliveries/sql/append.sql`): the instances' locks are
    /// held for as few round trips as possible. With `taking`, the fan-out
    /// claims for this process's dispatcher (see [`deliveries::FannedOut`]).
    /// With a non-empty `expected`, it fails with `appender::STALE` and
    /// writes nothing when an instance is not as expected.
    async fn insert(
        &self,
        conn: &mut PgConnection,
        received_at: time::Timestamp,
        numbered: &[Uuid],
        last_seqs: &[i64],
        taking: Option<&Taking>,
        expected: &Expected,
    ) -> Result<Vec<deliveries::FannedOut>> {
        let (busy, rooms): (Vec<Uuid>, Vec<i32>) = taking
            .map(|t| {
                t.busy
                    .iter()
                    .map(|(s, room)| (Uuid::from(*s), room_of(*room)))
                    .unzip()
            })
            .unwrap_or_default();
        Ok(sqlx::query_file_as!(
            deliveries::FannedOut,
            "src/deliveries/sql/append.sql",
            &self.shards,
            received_at,
            &self.instances,
            &self.seqs,
            &self.event_ids,
            &self.types,
            &self.sources as &[Option<String>],
            &self.envelopes,
            numbered,
            last_seqs,
            taking.map(|t| crate::interval(t.lease)),
            &self.environments as &[&str],
            &self.order_keys as &[Option<String>],
            &expected.instances,
            &expected.last_seqs,
            &expected.generations,
            &expected.source_instances,
            &expected.sources,
            &busy,
            &rooms,
            taking.map_or(0, |t| room_of(t.room)),
        )
        .fetch_all(&mut *conn)
        .await?)
    }
}
