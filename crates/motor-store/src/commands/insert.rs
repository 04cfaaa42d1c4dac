//! Storing new commands: one request, or a batch of them in one
//! transaction (the API's group commit, `motor_app::commands::accept`).
//! The requests' instances are locked first, in id order (the event
//! intake's order, so the two never deadlock): requests for one instance
//! are serialised, and fifty identical ones make one command. Then each
//! request, in its order: its instance's owner, the Idempotency-Key (a
//! repeat answers the stored command even after a relink, or the command
//! an earlier request of the same batch stored), `generacion_esperada`.
//! A request refused by a check writes nothing; what passes is written in
//! two statements whatever the batch holds (`rows`): the rows with their
//! `{prefix}.commands` records, then `command.accepted` (sends and remote
//! operations) through the ledger's batch append.

use std::collections::HashMap;

use motor_domain::{
    command::{events::EventFacts, CommandEvent, CommandId, IdempotencyKey, NewCommand},
    outbox::CommandJob,
    time::Timestamp,
    AppId, InstanceId, NewEvent,
};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{
    rows::{NewRow, NewRows},
    Command, CommandError, CommandRow,
};
use crate::{
    ledger::{self, LockedInstance, Request},
    StoreError,
};

/// A stored command and whether this request stored it.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub command: Command,
    /// `false` when the Idempotency-Key found the command of an earlier,
    /// identical request.
    pub created: bool,
}

/// One request to store a command: `new` for `instance` of `app`, under
/// `key` if it has one, stamped `now` (a send's `next_try` too).
#[derive(Debug, Clone, Copy)]
pub struct Acceptance<'a> {
    pub app: AppId,
    pub instance: InstanceId,
    pub new: &'a NewCommand,
    pub key: Option<&'a IdempotencyKey>,
    pub now: Timestamp,
}

/// Stores `new` for `instance` of `app`, with its event and outbox record,
/// in the caller's transaction; `now` stamps it (and is a send's
/// `next_try`). Refuses an instance of another app as
/// [`CommandError::InstanceNotFound`], the same key with another request
/// as [`CommandError::KeyConflict`] and a stale `generacion_esperada` as
/// [`CommandError::GenerationMismatch`]. A batch of one: see
/// [`insert_batch`].
pub async fn insert(
    conn: &mut PgConnection,
    app: AppId,
    instance: InstanceId,
    new: &NewCommand,
    key: Option<&IdempotencyKey>,
    now: Timestamp,
) -> Result<Accepted, CommandError> {
    let request = Acceptance {
        app,
        instance,
        new,
        key,
        now,
    };
    insert_batch(conn, &[request])
        .await?
        .pop()
        .expect("one request, one answer")
}

/// What a request of a batch comes to, before the batch's writes.
enum Plan {
    Refused(CommandError),
    /// The key's command, stored by an earlier transaction.
    Stored(Box<Command>),
    /// A new command: the `n`th of the batch's new rows.
    New(usize),
    /// The same key as the earlier request that makes new row `n`.
    Repeat(usize),
}

/// Stores `requests` in the caller's transaction, each answered in its
/// order as [`insert`] would answer it alone, as if they had come one
/// after the other. A request refused by a check (its own error) writes
/// nothing, and the others are stored; a database error fails the whole
/// batch (roll the transaction back: none of them happened).
pub async fn insert_batch(
    conn: &mut PgConnection,
    requests: &[Acceptance<'_>],
) -> Result<Vec<Result<Accepted, CommandError>>, StoreError> {
    let (owners, mut locked) = lock(&mut *conn, requests).await?;
    // The keys of the requests whose instance is locked and the app's.
    let keys: Vec<KeyAt<'_>> = requests
        .iter()
        .filter(|r| owners.get(&r.instance) == Some(&r.app))
        .filter_map(|r| Some((r.app, r.instance, r.key?.as_str())))
        .collect();
    let mut stored = by_keys(&mut *conn, &keys).await?;

    let mut rows = NewRows::default();
    // Keys this batch stores a command under: (app, instance, key) → the
    // new row and its request's fingerprint.
    let mut in_batch: HashMap<(AppId, InstanceId, &str), (usize, [u8; 32])> = HashMap::new();
    let mut plans = Vec::with_capacity(requests.len());
    for request in requests {
        let plan = match (owners.get(&request.instance), locked.get(&request.instance)) {
            (Some(owner), Some(instance)) if *owner == request.app => {
                plan(request, instance, &mut stored, &mut in_batch, &mut rows)
            }
            _ => Plan::Refused(CommandError::InstanceNotFound),
        };
        plans.push(plan);
    }

    let created = rows.insert(&mut *conn).await?;
    append_accepted(&mut *conn, &mut locked, &created).await?;
    Ok(plans
        .into_iter()
        .map(|plan| match plan {
            Plan::Refused(e) => Err(e),
            Plan::Stored(command) => Ok(Accepted {
                command: *command,
                created: false,
            }),
            Plan::New(n) => Ok(Accepted {
                command: created[n].clone(),
                created: true,
            }),
            Plan::Repeat(n) => Ok(Accepted {
                command: created[n].clone(),
                created: false,
            }),
        })
        .collect())
}

/// One request's checks after its instance's owner: its key (stored
/// before, or by an earlier request of this batch), then
/// `generacion_esperada`; a request that passes becomes a new row.
fn plan<'a>(
    request: &Acceptance<'a>,
    instance: &LockedInstance,
    stored: &mut HashMap<(AppId, InstanceId, String), (Command, Vec<u8>)>,
    in_batch: &mut HashMap<(AppId, InstanceId, &'a str), (usize, [u8; 32])>,
    rows: &mut NewRows,
) -> Plan {
    let fingerprint = request.new.fingerprint();
    if let Some(key) = request.key {
        let at = (request.app, request.instance, key.as_str().to_owned());
        if let Some((command, hash)) = stored.get(&at) {
            return if hash[..] == fingerprint.0 {
                Plan::Stored(Box::new(command.clone()))
            } else {
                Plan::Refused(CommandError::KeyConflict {
                    existing: command.id,
                })
            };
        }
        if let Some((n, hash)) = in_batch.get(&(request.app, request.instance, key.as_str())) {
            return if *hash == fingerprint.0 {
                Plan::Repeat(*n)
            } else {
                Plan::Refused(CommandError::KeyConflict {
                    existing: rows.id(*n),
                })
            };
        }
    }
    if let Some(expected) = request.new.options.expected_generation {
        if expected != instance.generation {
            return Plan::Refused(CommandError::GenerationMismatch {
                expected,
                actual: instance.generation,
            });
        }
    }
    let n = rows.push(NewRow {
        id: CommandId::new(),
        app: request.app,
        instance: request.instance,
        new: request.new,
        generation: instance.generation,
        key: request.key.map(IdempotencyKey::as_str),
        hash: fingerprint.0,
        now: request.now,
    });
    if let Some(key) = request.key {
        in_batch.insert(
            (request.app, request.instance, key.as_str()),
            (n, fingerprint.0),
        );
    }
    Plan::New(n)
}

/// The app of each locked instance.
type Owners = HashMap<InstanceId, AppId>;

/// Locks the requests' instances in id order; answers each one's app and
/// lock. An unknown instance is simply missing (its requests are refused).
async fn lock(
    conn: &mut PgConnection,
    requests: &[Acceptance<'_>],
) -> Result<(Owners, HashMap<InstanceId, LockedInstance>), StoreError> {
    let mut ids: Vec<Uuid> = requests.iter().map(|r| Uuid::from(r.instance)).collect();
    ids.sort();
    ids.dedup();
    let entry = |id: Uuid, app: Uuid, generation: i64, last_seq: i64| {
        let id = InstanceId::from_uuid(id);
        let locked = LockedInstance {
            id,
            generation,
            last_seq,
        };
        ((id, AppId::from_uuid(app)), (id, locked))
    };
    if let [id] = ids[..] {
        // One instance, as at low load: `id = $1` is planned once per
        // connection (see `ledger::append_batch`).
        let row = sqlx::query!(
            "SELECT id, app_id, generation, last_seq FROM instances WHERE id = $1
             FOR NO KEY UPDATE",
            id
        )
        .fetch_optional(&mut *conn)
        .await?;
        return Ok(row
            .map(|r| entry(r.id, r.app_id, r.generation, r.last_seq))
            .into_iter()
            .unzip());
    }
    let rows = sqlx::query!(
        "SELECT id, app_id, generation, last_seq FROM instances WHERE id = ANY($1)
         ORDER BY id FOR NO KEY UPDATE",
        &ids,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| entry(r.id, r.app_id, r.generation, r.last_seq))
        .unzip())
}

/// An Idempotency-Key where it is looked up: (app, instance, key).
type KeyAt<'a> = (AppId, InstanceId, &'a str);

/// The commands stored under `keys`, with their requests' fingerprints,
/// by (app, instance, key). One statement when there are keys, a second
/// only when a key was found.
async fn by_keys(
    conn: &mut PgConnection,
    keys: &[KeyAt<'_>],
) -> Result<HashMap<(AppId, InstanceId, String), (Command, Vec<u8>)>, StoreError> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let apps: Vec<Uuid> = keys.iter().map(|k| Uuid::from(k.0)).collect();
    let instances: Vec<Uuid> = keys.iter().map(|k| Uuid::from(k.1)).collect();
    let keys: Vec<&str> = keys.iter().map(|k| k.2).collect();
    let found = sqlx::query!(
        "SELECT c.id, c.request_hash
         FROM UNNEST($1::uuid[], $2::uuid[], $3::text[]) AS k(app_id, instance_id, idempotency_key)
         JOIN commands c ON c.app_id = k.app_id AND c.instance_id = k.instance_id
                        AND c.idempotency_key = k.idempotency_key",
        &apps,
        &instances,
        &keys as &[&str],
    )
    .fetch_all(&mut *conn)
    .await?;
    if found.is_empty() {
        return Ok(HashMap::new());
    }
    let hashes: HashMap<Uuid, Vec<u8>> =
        found.into_iter().map(|r| (r.id, r.request_hash)).collect();
    let ids: Vec<Uuid> = hashes.keys().copied().collect();
    let rows = sqlx::query_as!(
        CommandRow,
        "SELECT id, app_id, instance_id, tipo AS kind, chat, contenido AS content,
                parametros AS parameters, status, next_try, error_code, stage, server_code,
                provider_message_id, aceptado_en AS accepted_at, expires_at, correlation_id,
                generacion_esperada AS expected_generation, generation, idempotency_key,
                reclamos AS claims, reservado_hasta AS lease_until, creado_en AS created_at,
                actualizado_en AS updated_at
         FROM commands WHERE id = ANY($1)",
        &ids,
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut by_key = HashMap::with_capacity(rows.len());
    for row in rows {
        let command = Command::try_from(row)?;
        let key = command.idempotency_key.clone().unwrap_or_default();
        let hash = hashes[&Uuid::from(command.id)].clone();
        by_key.insert((command.app_id, command.instance_id, key), (command, hash));
    }
    Ok(by_key)
}

/// Appends `command.accepted` for each of the `created` commands whose
/// kind has it (sends and remote operations), in their order, through the
/// ledger's batch append: one statement however many.
async fn append_accepted(
    conn: &mut PgConnection,
    locked: &mut HashMap<InstanceId, LockedInstance>,
    created: &[Command],
) -> Result<(), StoreError> {
    let events: Vec<(InstanceId, NewEvent)> = created
        .iter()
        .filter(|c| c.kind.appends_accepted())
        .map(|c| {
            let event = CommandEvent::Accepted.to_event(&EventFacts {
                chat: c.chat.as_deref(),
                correlation_id: c.correlation_id.as_deref(),
                ..EventFacts::of(c.id, c.kind)
            });
            (c.instance_id, event)
        })
        .collect();
    if events.is_empty() {
        return Ok(());
    }
    let requests: Vec<Request<'_>> = events
        .iter()
        .map(|(instance, event)| Request {
            instance: *instance,
            events: std::slice::from_ref(event),
        })
        .collect();
    ledger::append_batch_locked(&mut *conn, locked, &requests, None).await?;
    Ok(())
}

/// The command stored under `key` for `instance` of `app`, when it asked
/// for the same as `new` (its fingerprint); the same key with another
/// request is [`CommandError::KeyConflict`], an unknown key `None`.
/// Stores nothing: for a repeat that fails a check which depends on the
/// time it arrives (an `expires_at` now past), since a key is resolved
/// before every other check.
pub async fn find_repeat(
    conn: &mut PgConnection,
    app: AppId,
    instance: InstanceId,
    new: &NewCommand,
    key: &IdempotencyKey,
) -> Result<Option<Command>, CommandError> {
    let mut found = by_keys(conn, &[(app, instance, key.as_str())]).await?;
    match found.remove(&(app, instance, key.as_str().to_owned())) {
        None => Ok(None),
        Some((command, hash)) if hash == new.fingerprint().0 => Ok(Some(command)),
        Some((command, _)) => Err(CommandError::KeyConflict {
            existing: command.id,
        }),
    }
}

/// The `{prefix}.commands` record's content for `command`.
pub(super) fn job(command: &Command) -> CommandJob {
    CommandJob {
        command_id: command.id,
        instance_id: command.instance_id,
        kind: command.kind,
        next_try: command.next_try,
    }
}
