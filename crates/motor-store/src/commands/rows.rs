//! The new commands of an accept, as column arrays: one statement stores
//! every row and its `{prefix}.commands` record, however many the batch
//! holds (`insert::insert_batch` decides which rows there are).

use motor_domain::{
    command::{CommandId, CommandStatus, NewCommand, Payload},
    outbox::{CommandJob, OutboxRecord},
    time::Timestamp,
    AppId, InstanceId,
};
use serde_json::Value;
use sqlx::{types::Json, PgConnection};
use uuid::Uuid;

use super::{Command, CommandRow};
use crate::{outbox, StoreError};

/// One new command, as its checks left it.
pub(super) struct NewRow<'a> {
    pub id: CommandId,
    pub app: AppId,
    pub instance: InstanceId,
    pub new: &'a NewCommand,
    /// The instance's generation now (under its lock).
    pub generation: i64,
    pub key: Option<&'a str>,
    /// The request's fingerprint.
    pub hash: [u8; 32],
    pub now: Timestamp,
}

/// Column arrays of the new commands and of their outbox records, in the
/// order they were pushed (the relay publishes an instance's records in
/// that order).
#[derive(Default)]
pub(super) struct NewRows {
    ids: Vec<Uuid>,
    apps: Vec<Uuid>,
    instances: Vec<Uuid>,
    kinds: Vec<&'static str>,
    chats: Vec<Option<String>>,
    contents: Vec<Option<Value>>,
    parameters: Vec<Option<Value>>,
    statuses: Vec<&'static str>,
    next_tries: Vec<Option<Timestamp>>,
    expires: Vec<Option<Timestamp>>,
    correlations: Vec<Option<String>>,
    expected: Vec<Option<i64>>,
    generations: Vec<i64>,
    keys: Vec<Option<String>>,
    hashes: Vec<Vec<u8>>,
    times: Vec<Timestamp>,
    records: outbox::Columns,
}

impl NewRows {
    /// Adds `row`; answers its index (the order of [`NewRows::insert`]'s
    /// answer).
    pub fn push(&mut self, row: NewRow<'_>) -> usize {
        let kind = row.new.kind();
        let status = kind.initial_status();
        let next_try = (status == CommandStatus::Queued).then_some(row.now);
        let (content, parameters) = match &row.new.payload {
            Payload::Send { content, .. } => (Some(Value::Object(content.clone())), None),
            Payload::Operation { parameters, .. } => {
                (None, Some(Value::Object(parameters.clone())))
            }
        };
        self.ids.push(Uuid::from(row.id));
        self.apps.push(Uuid::from(row.app));
        self.instances.push(Uuid::from(row.instance));
        self.kinds.push(kind.as_str());
        self.chats.push(row.new.chat().map(str::to_owned));
        self.contents.push(content);
        self.parameters.push(parameters);
        self.statuses.push(status.as_str());
        self.next_tries.push(next_try);
        self.expires.push(row.new.options.expires_at);
        self.correlations
            .push(row.new.options.correlation_id.clone());
        self.expected.push(row.new.options.expected_generation);
        self.generations.push(row.generation);
        self.keys.push(row.key.map(str::to_owned));
        self.hashes.push(row.hash.to_vec());
        self.times.push(row.now);
        self.records.push(OutboxRecord::command(&CommandJob {
            command_id: row.id,
            instance_id: row.instance,
            kind,
            next_try,
        }));
        self.ids.len() - 1
    }

    /// The id of the `n`th row.
    pub fn id(&self, n: usize) -> CommandId {
        CommandId::from_uuid(self.ids[n])
    }

    /// Inserts the rows and their outbox records in one statement;
    /// answers the stored commands in push order.
    pub async fn insert(&self, conn: &mut PgConnection) -> Result<Vec<Command>, StoreError> {
        if self.ids.is_empty() {
            return Ok(Vec::new());
        }
        let records = &self.records;
        // The outbox's own INSERT (`outbox::insert`) as a CTE: a
        // data-modifying WITH runs to completion whether or not it is read.
        let rows = sqlx::query_as!(
            CommandRow,
            "WITH records AS (
                 INSERT INTO outbox (shard, topic, key, payload, headers)
                 SELECT shard, topic, key, payload, headers
                 FROM UNNEST($17::int[], $18::text[], $19::text[], $20::bytea[], $21::jsonb[])
                      WITH ORDINALITY AS t(shard, topic, key, payload, headers, n)
                 ORDER BY n
             )
             INSERT INTO commands (id, app_id, instance_id, tipo, chat, contenido, parametros,
                                   status, next_try, expires_at, correlation_id,
                                   generacion_esperada, generation, idempotency_key,
                                   request_hash, creado_en, actualizado_en)
             SELECT id, app_id, instance_id, tipo, chat, contenido, parametros, status, next_try,
                    expires_at, correlation_id, generacion_esperada, generation,
                    idempotency_key, request_hash, creado_en, creado_en
             FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[],
                         $6::jsonb[], $7::jsonb[], $8::text[], $9::timestamptz[],
                         $10::timestamptz[], $11::text[], $12::int8[], $13::int8[],
                         $14::text[], $15::bytea[], $16::timestamptz[])
                  AS t(id, app_id, instance_id, tipo, chat, contenido, parametros, status,
                       next_try, expires_at, correlation_id, generacion_esperada, generation,
                       idempotency_key, request_hash, creado_en)
             RETURNING id, app_id, instance_id, tipo AS kind, chat, contenido AS content,
                       parametros AS parameters, status, next_try, error_code, stage,
                       server_code, provider_message_id, aceptado_en AS accepted_at,
                       expires_at, correlation_id,
                       generacion_esperada AS expected_generation, generation,
                       idempotency_key, reclamos AS claims, reservado_hasta AS lease_until,
                       creado_en AS created_at, actualizado_en AS updated_at",
            &self.ids,
            &self.apps,
            &self.instances,
            &self.kinds as &[&str],
            &self.chats as &[Option<String>],
            &self.contents as &[Option<Value>],
            &self.parameters as &[Option<Value>],
            &self.statuses as &[&str],
            &self.next_tries as &[Option<Timestamp>],
            &self.expires as &[Option<Timestamp>],
            &self.correlations as &[Option<String>],
            &self.expected as &[Option<i64>],
            &self.generations,
            &self.keys as &[Option<String>],
            &self.hashes,
            &self.times,
            &records.shards,
            &records.topics as &[&str],
            &records.keys,
            &records.payloads,
            &records.headers as &[Json<_>],
        )
        .fetch_all(&mut *conn)
        .await?;
        // RETURNING promises no order: put the rows back in push order.
        let mut by_id = std::collections::HashMap::with_capacity(rows.len());
        for row in rows {
            by_id.insert(row.id, Command::try_from(row)?);
        }
        self.ids
            .iter()
            .map(|id| {
                by_id.remove(id).ok_or_else(|| {
                    StoreError::Database(sqlx::Error::Protocol(format!(
                        "the insert of command {id} returned no row"
                    )))
                })
            })
            .collect()
    }
}
