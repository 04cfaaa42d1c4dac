//! A process's own appends (the intake's group commits) in one round trip
//! where they can be.
//!
//! The usual append is a transaction of four round trips: `BEGIN`, the
//! instances' lock (which reads each one's generation and `last_seq`),
//! the append statement and `COMMIT`. At a low rate every batch is one
//! request, and each round trip wakes a backend and this process: that,
//! more than the statements' work, is what an event costs there
//! (docs/SCALING.md, "At a low rate"). But the process that appended to
//! an instance last already knows what the lock would read. So an
//! [`Appender`] numbers a batch of such instances from what it last wrote
//! and sends the append statement alone, outside a transaction block:
//! its own transaction, committed when it returns. The statement locks
//! the instances itself and writes nothing unless each is still as the
//! batch was numbered from and none of the batch's `source_id`s is
//! stored (`deliveries/sql/append.sql`, its `expected`); else it fails
//! with [`STALE`]. Then somebody else wrote to one of them (another
//! process, the commands' accept, a library caller, a relink): the batch
//! is appended the usual way, and its instances are left to the usual way
//! for [`CONTENDED_FOR`], so that two writers of one instance do not each
//! pay a failed statement per batch.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use motor_domain::InstanceId;
use sqlx::{Connection, PgConnection};

use super::{write, Appended, LockedInstance, Numbering, Request};
use crate::{
    deliveries::{Handed, Taking},
    Result, StoreError,
};

/// The SQLSTATE of `motor_append_stale()` (migration 0025): an instance
/// was written to since the batch was numbered; nothing was written.
pub const STALE: &str = "MTA01";

/// How long a batch's instances are appended the usual way after an
/// optimistic append of theirs found one written to by somebody else. A
/// minute, so that an instance with two writers costs at most one failed
/// statement (and one `ERROR` line in Postgres's log) a minute.
pub const CONTENDED_FOR: Duration = Duration::from_secs(60);

/// Instances remembered at most; past it the memory starts again (the
/// next batch of each is appended the usual way, once).
const MAX_KNOWN: usize = 65_536;

/// Appends batches, remembering each instance as its last batch left it.
/// One per worker: batches go one after the other.
#[derive(Default)]
pub struct Appender {
    known: HashMap<InstanceId, Known>,
    ways: Ways,
}

/// How an [`Appender`]'s batches went, counted since it started.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Ways {
    /// Appended in one statement.
    pub one_statement: u64,
    /// Appended in a transaction that locked the instances first.
    pub locked: u64,
    /// Tried in one statement, found an instance written to since, and
    /// then appended in a transaction (counted in `locked` too).
    pub stale: u64,
}

enum Known {
    /// What this appender's last batch left the instance at.
    Wrote { generation: i64, last_seq: i64 },
    /// Somebody else writes to it too: the usual way until then.
    Contended { until: Instant },
}

impl Appender {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the batch, committed when this returns: in one statement
    /// when every instance is known, else (or when that finds one written
    /// to since) in a transaction on `conn`, as
    /// [`append_batch`](super::append_batch).
    pub async fn append(
        &mut self,
        conn: &mut PgConnection,
        requests: &[Request<'_>],
        taking: Option<&Taking>,
    ) -> Result<(Vec<Appended>, Handed)> {
        let now = Instant::now();
        if let Some(mut locked) = self.expected(requests) {
            match write::append_locked_all(conn, &mut locked, requests, taking, Numbering::Expected)
                .await
            {
                Ok(appended) => {
                    self.wrote(locked.values(), now);
                    self.ways.one_statement += 1;
                    return Ok(appended);
                }
                Err(e) if is_stale(&e) => {
                    self.contended(requests, now);
                    self.ways.stale += 1;
                }
                Err(e) => return Err(e),
            }
        }
        let mut tx = conn.begin().await?;
        let (appended, locked) = super::append_batch_reading(&mut tx, requests, taking).await?;
        tx.commit().await?;
        self.wrote(locked.values(), now);
        self.ways.locked += 1;
        Ok(appended)
    }

    /// How its batches went so far.
    pub fn ways(&self) -> Ways {
        self.ways
    }

    /// Every request's instance as this appender last left it, when it
    /// knows them all (and every request has an event to number).
    fn expected(&self, requests: &[Request<'_>]) -> Option<HashMap<InstanceId, LockedInstance>> {
        let mut expected = HashMap::new();
        for request in requests {
            if request.events.is_empty() {
                return None;
            }
            let Some(Known::Wrote {
                generation,
                last_seq,
            }) = self.known.get(&request.instance)
            else {
                return None;
            };
            expected.insert(
                request.instance,
                LockedInstance {
                    id: request.instance,
                    generation: *generation,
                    last_seq: *last_seq,
                },
            );
        }
        Some(expected)
    }

    fn wrote<'a>(&mut self, instances: impl Iterator<Item = &'a LockedInstance>, now: Instant) {
        if self.known.len() >= MAX_KNOWN {
            self.known.clear();
        }
        for instance in instances {
            if matches!(self.known.get(&instance.id), Some(Known::Contended { until }) if *until > now)
            {
                continue;
            }
            self.known.insert(
                instance.id,
                Known::Wrote {
                    generation: instance.generation,
                    last_seq: instance.last_seq,
                },
            );
        }
    }

    fn contended(&mut self, requests: &[Request<'_>], now: Instant) {
        for request in requests {
            self.known.insert(
                request.instance,
                Known::Contended {
                    until: now + CONTENDED_FOR,
                },
            );
        }
    }
}

/// Whether `error` is the append statement's [`STALE`].
fn is_stale(error: &StoreError) -> bool {
    matches!(error, StoreError::Database(sqlx::Error::Database(e)) if e.code().as_deref() == Some(STALE))
}
