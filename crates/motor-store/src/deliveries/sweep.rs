//! Bringing lanes back: on reactivation ([`release_lane_heads`]) and when a
//! wake-up was lost ([`due_lane_heads`] then [`requeue`]), so progress never
//! depends on one message.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use motor_domain::{
    contract::{Contract, Retention},
    delivery::{DeliveryId, DeliveryJob, Lane},
    subscription::SubscriptionId,
};
use sqlx::{Acquire, PgConnection, Postgres};
use uuid::Uuid;

use super::{by_key, enqueue, uuids, JobRow};
use crate::{interval, Result};

/// Writes a job for the head of every lane of an `activa` subscription (for
/// an unordered one, for its 1,000 oldest due open deliveries: each of
/// their attempts claims the next one when it records, so the rest follow
/// at the receiver's pace, and a million parked deliveries never become a
/// million jobs in one transaction), skipping deliveries whose
/// lease is live (an attempt is in flight). Call it in the transaction that
/// makes the subscription `activa` again (PATCH, or the operator), after the
/// change. Jobs keep the delivery's own due time (a retry still waits its
/// schedule). Returns the jobs written. Sequential and bitmap scans stay
/// off for the rest of the transaction ([`super::BY_KEY_SETUP`]).
pub async fn release_lane_heads(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
) -> Result<Vec<DeliveryJob>> {
    release(conn, subscription, None).await
}

/// [`release_lane_heads`] for one lane only (every instance's part of it):
/// a replay calls it in the transaction that creates the replay's
/// deliveries, so an ordered replay gets one job per instance (its head)
/// and the rest follow as the heads finish; a subscription that is not
/// `activa` gets none (reactivation releases them).
pub async fn release_lane(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
    lane: Lane,
) -> Result<Vec<DeliveryJob>> {
    release(conn, subscription, Some(lane)).await
}

/// The lanes' heads are found by a walk over the subscription's lanes (one
/// index probe per lane, as in [`due_lane_heads`]), so an ordered
/// subscription with a million parked deliveries costs one probe per lane,
/// not one lane check per delivery. An unordered one releases at most
/// 1,000 (one range of `deliveries_open_due_by_subscription`), or for a
/// replay's lane every open delivery of that lane (at most the replay's
/// 10,000): its cost is its output. (`OFFSET 0` and `LIMIT` keep those
/// branches subqueries run only for the subscription that passed, so an
/// ordered subscription never reads its open deliveries there.)
async fn release(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
    lane: Option<Lane>,
) -> Result<Vec<DeliveryJob>> {
    by_key(conn).await?;
    let rows = sqlx::query_file_as!(
        JobRow,
        "src/deliveries/sql/release.sql",
        subscription.as_uuid(),
        lane.map(|l| l.to_string()),
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut jobs: Vec<DeliveryJob> = rows.into_iter().map(JobRow::next_job).collect();
    jobs.sort_by_key(|j| (*j.instance_id.as_uuid(), j.seq));
    enqueue(conn, &jobs).await?;
    Ok(jobs)
}

/// Deliveries that should be moving but may have no live job: `pendiente`,
/// subscription `activa`, head of their lane (any open one for an unordered
/// subscription), and either leased with the lease expired (the attempt's
/// process died) or unleased and due for at least `stale_after` (its job was
/// lost, or its park raced the head's finish). Oldest due first, at most
/// `limit`. Read-only: pass them to [`requeue`], which checks again.
///
/// A walk with no hints: the sweeper keeps a [`LaneHints`] between passes
/// and calls [`LaneHints::due_lane_heads`].
pub async fn due_lane_heads<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    stale_after: Duration,
    limit: i64,
) -> Result<Vec<DeliveryId>> {
    LaneHints::default()
        .due_lane_heads(db, stale_after, limit)
        .await
}

/// What one sweeper knows of the lanes between its passes: for each lane a
/// pass found, the seq its head is at or after. A lane's deliveries are
/// created in seq order (a live lane's under its instance's lock, a
/// replay's in one transaction) and never open again once finished, so its
/// lowest open seq only grows; from one pass to the next a lane's head is
/// found by one index probe from there, without reading the entries of the
/// deliveries it has finished (dead until a vacuum removes them: with
/// autovacuum off, a walk from the start of each lane read every delivery
/// drained so far, 767 ms mid-drain of a million parked deliveries).
///
/// A lane with no open delivery left keeps a hint past its instance's
/// `last_seq`, so that its drained entries are not read again when it
/// fills; one that no round finds with an open delivery for
/// [`FORGET_AFTER`] rounds is forgotten (a later walk finds it like a new
/// lane), whether or not its instance's `last_seq` moved meanwhile.
///
/// A pass walks one slice of the subscriptions, not all of them: from
/// where the last pass stopped, whole subscriptions in id order until
/// their known lanes (and known unordered subscriptions, one each) reach
/// the share of a pass ([`LANES_PER_PASS`]); the next pass goes on from
/// there, and the one that reaches the last subscription ends a round.
/// So a pass costs about the same with 100 tenants or 10,000 (a probe a
/// lane was 130–191 ms a pass at 10,000 lanes), and what grows with them
/// is the round: every lane is looked at once every `lanes / 1,000`
/// passes. With fewer known lanes than a share (and on the first pass, or
/// after the hints were forgotten, which knows none) a pass is a whole
/// round.
///
/// "Only grows" holds within one history. A failover to a standby that
/// had not received the last commits (asynchronous replication) rolls
/// history back: deliveries the old primary finished are `pendiente`
/// again at seqs below the hints, and new events take the lost seqs. A
/// probe from a hint never sees them, so those lanes stood still until
/// the process restarted (1,050 deliveries after 120 s in the
/// `postgres-failover-async` scenario). So the hints are kept only while
/// the server is the one they were learnt from: each pass reads the
/// server's `pg_postmaster_start_time()` (a promoted standby, a restored
/// or restarted server each have their own) and starts from no hints
/// when it changed.
#[derive(Debug)]
pub struct LaneHints {
    lanes: BTreeMap<LaneKey, Hint>,
    /// The `activa` unordered subscriptions a pass found: each counts as
    /// one lane toward a pass's share.
    unordered: BTreeSet<Uuid>,
    /// The subscription the next pass starts at (the nil uuid: a new
    /// round).
    next: Uuid,
    /// Rounds ended so far.
    rounds: u64,
    lanes_per_pass: usize,
    /// The subscriptions the last pass walked: from, and to (excluded;
    /// `None`, to the end).
    last: (Uuid, Option<Uuid>),
    /// The server the hints were learnt from (its postmaster's start).
    server: Option<String>,
}

impl Default for LaneHints {
    fn default() -> Self {
        Self::with_lanes_per_pass(LANES_PER_PASS)
    }
}

/// Ordered by subscription first: a slice of subscriptions is a range.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct LaneKey {
    subscription: Uuid,
    instance: Uuid,
    lane: String,
}

impl LaneKey {
    /// Before every lane of `subscription`.
    fn first_of(subscription: Uuid) -> Self {
        Self {
            subscription,
            instance: Uuid::nil(),
            lane: String::new(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Hint {
    seq: i64,
    /// The round since which the lane has had no open delivery and its
    /// hint has not moved (`None`: it has an open delivery).
    empty_since: Option<u64>,
}

/// Rounds (a pass each, about a second, until the known lanes outgrow a
/// pass's share) after which a lane that no round found with an open
/// delivery is forgotten.
pub const FORGET_AFTER: u64 = 300;

/// Known lanes a pass probes, about: a pass takes whole subscriptions
/// until it has this many (so one subscription with more lanes is one
/// pass of its own). About 13 µs a known lane (the backlog benchmark's
/// many tenants: 133 ms a pass over 10,030 lanes): 1,000 keep a pass
/// near 15 ms, well within the sweeper's 50 ms, and a round of 10,000
/// lanes takes ten passes, about 10 s.
pub const LANES_PER_PASS: usize = 1_000;

impl LaneHints {
    /// Hints whose passes each take about `lanes` known lanes (at least
    /// one subscription).
    pub fn with_lanes_per_pass(lanes: usize) -> Self {
        Self {
            lanes: BTreeMap::new(),
            unordered: BTreeSet::new(),
            next: Uuid::nil(),
            rounds: 0,
            lanes_per_pass: lanes.max(1),
            last: (Uuid::nil(), None),
            server: None,
        }
    }

    /// How many lanes it knows.
    pub fn len(&self) -> usize {
        self.lanes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }

    /// The subscriptions the last pass walked: from (included) and to
    /// (excluded; `None`: to the end, so that pass ended a round).
    pub fn last_slice(&self) -> (Uuid, Option<Uuid>) {
        self.last
    }

    /// Forgets every lane: the next pass walks the whole index, as the
    /// first one does. For a history that may have been rolled back on
    /// the same server (a restore in place); a change of server is noticed
    /// by the pass itself.
    pub fn forget(&mut self) {
        self.lanes.clear();
        self.unordered.clear();
        self.next = Uuid::nil();
    }

    /// Where the pass starting at `from` stops (excluded): the first
    /// subscription after those whose known lanes and known unordered
    /// subscriptions reach a pass's share; `None` when they run out first.
    fn slice_end(&self, from: Uuid) -> Option<Uuid> {
        let mut lanes = self
            .lanes
            .range(LaneKey::first_of(from)..)
            .map(|(key, _)| key.subscription)
            .peekable();
        let mut unordered = self.unordered.range(from..).copied().peekable();
        let mut taken = 0;
        loop {
            let next = match (lanes.peek(), unordered.peek()) {
                (None, None) => return None,
                (Some(&a), Some(&b)) => a.min(b),
                (Some(&a), None) | (None, Some(&a)) => a,
            };
            if taken >= self.lanes_per_pass {
                return Some(next);
            }
            while lanes.next_if_eq(&next).is_some() {
                taken += 1;
            }
            if unordered.next_if_eq(&next).is_some() {
                taken += 1;
            }
        }
    }

    /// [`due_lane_heads`], with each known lane probed from its hint and
    /// the rest of the index walked in between; the hints move to what this
    /// pass found.
    ///
    /// No part of a pass reads the backlog itself, nor the deliveries the
    /// known lanes finished before the last pass:
    /// - a known lane costs one probe from its hint (its head, or for one
    ///   with nothing open one more for its instance's `last_seq`);
    /// - the lanes no hint names are found by a walk over the key ranges
    ///   between known lanes, one probe per lane found (the first pass, with
    ///   no hints, walks the whole index: measured on 1,000,000 open
    ///   deliveries in 50 lanes, 1.4 ms, against 2.1 s for a `DISTINCT ON`
    ///   over them); each range is one index column's range under equal
    ///   leading columns, so that its end stops the scan at the next known
    ///   lane's first entry, dead or alive;
    /// - an unordered subscription's candidates are one range of
    ///   `deliveries_open_due_by_subscription` per `activa` subscription,
    ///   oldest due first, read up to `limit` (was: every open delivery of
    ///   every unordered subscription, then a sort — 1.6 s on 1,000,000).
    ///   "Open" is said as `proximo_intento <= …` (only `pendiente` rows
    ///   have one), not `estado = 'pendiente'`, so that no other index
    ///   matches: the global `deliveries_open_due` would read the other
    ///   subscriptions' rows in front of these.
    ///
    /// An unordered subscription with 8 or more leased deliveries among
    /// the oldest of that range is left alone: its chains are moving (each
    /// attempt that ends delivered claims the oldest due delivery nobody
    /// holds, so the chains work from the front of the range), and one
    /// process's 8 slots are busy with them. Re-enqueuing what they have not
    /// reached yet only made jobs that raced them (measured on a 500,000
    /// backlog draining: 250 requeued a pass, passes of 50–400 ms). With
    /// fewer leased (a crash took the rest) the stale ones are requeued as
    /// before.
    ///
    /// So that range ends at `now() - stale_after`, an unordered delivery
    /// whose lease expired is found once its due time is also `stale_after`
    /// old: at once when the lease is at least `stale_after` long (the
    /// dispatcher's is the send timeout plus 5 s, against the sweeper's
    /// 5 s), at most `stale_after` after the lease ran out otherwise. The
    /// rows due within the last `stale_after` (a burst's fresh jobs) are
    /// never read.
    ///
    /// Its transaction turns bitmap scans and sorts off, so that every
    /// probe reads its index in order: a bitmap scan returns rows in no
    /// order, so with one the planner reads every stale row of a
    /// subscription to sort them, and it chose that on a never-analysed
    /// table (0.7 s on 1,000,000 open deliveries, against 1 ms in index
    /// order); and with each probe taken for one row, a lane probe of
    /// `deliveries_lane_event_key` then a sort looked as cheap as
    /// `deliveries_open_lane` in order, and read every delivery of the
    /// lane's subscription (558 ms, 1.2 M buffers, for 18 lanes of 2,000,
    /// while the parked benchmark wrote its backlog; since migration 0013
    /// the key is led by the event and answers no lane probe). The window
    /// functions over the hints still sort: they have no other plan.
    pub async fn due_lane_heads<'c>(
        &mut self,
        db: impl Acquire<'c, Database = Postgres>,
        stale_after: Duration,
        limit: i64,
    ) -> Result<Vec<DeliveryId>> {
        let mut tx = db.begin().await?;
        let server: String = sqlx::query_scalar("SELECT pg_postmaster_start_time()::text")
            .fetch_one(&mut *tx)
            .await?;
        if self.server.as_deref() != Some(server.as_str()) {
            if self.server.is_some() && !self.lanes.is_empty() {
                tracing::info!(
                    lanes = self.lanes.len(),
                    "another Postgres server (a failover or a restart): lane hints forgotten"
                );
            }
            self.forget();
            self.server = Some(server);
        }
        let from = self.next;
        let to = self.slice_end(from);
        let max = Uuid::max();
        let slice = LaneKey::first_of(from)..LaneKey::first_of(to.unwrap_or(max));
        let (mut subscriptions, mut instances, mut lanes, mut seqs) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (key, hint) in self.lanes.range(slice) {
            subscriptions.push(key.subscription);
            instances.push(key.instance);
            lanes.push(key.lane.clone());
            seqs.push(hint.seq);
        }
        sqlx::query(DUE_LANE_HEADS_SETUP).execute(&mut *tx).await?;
        let rows = sqlx::query_file!(
            "src/deliveries/sql/due_lane_heads.sql",
            interval(stale_after),
            limit,
            &subscriptions,
            &instances,
            &lanes,
            &seqs,
            from,
            to.unwrap_or(max),
        )
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;

        // What this pass knew of its slice is replaced by what it found;
        // the rest stays for the passes after it.
        let mut known = self.lanes.split_off(&LaneKey::first_of(from));
        if let Some(to) = to {
            self.lanes
                .append(&mut known.split_off(&LaneKey::first_of(to)));
        }
        self.unordered
            .retain(|s| *s < from || to.is_some_and(|to| *s >= to));
        let round = self.rounds;
        let mut due = Vec::new();
        for row in rows {
            if row.due {
                if let Some(id) = row.id {
                    due.push((row.proximo_intento, id));
                }
            }
            let (Some(instance), Some(lane), Some(seq)) = (row.instance_id, row.lane, row.seq)
            else {
                if row.instance_id.is_none() {
                    self.unordered.insert(row.subscription_id);
                }
                continue;
            };
            let key = LaneKey {
                subscription: row.subscription_id,
                instance,
                lane,
            };
            // Counted from the first round that found the lane with nothing
            // open, even when its hint moved since: an empty lane's hint
            // follows its instance's `last_seq`, which a live instance moves
            // every pass, so a finished replay's lane was never forgotten
            // (42 lanes known after 45 minutes of the soak, one replay a
            // minute, each costing every pass a probe).
            let empty_since = match (row.id, known.get(&key)) {
                (Some(_), _) => None,
                (
                    None,
                    Some(Hint {
                        empty_since: Some(since),
                        ..
                    }),
                ) => Some(*since),
                (None, _) => Some(round),
            };
            if empty_since.is_none_or(|since| round - since < FORGET_AFTER) {
                self.lanes.insert(key, Hint { seq, empty_since });
            }
        }
        self.last = (from, to);
        match to {
            Some(to) => self.next = to,
            None => {
                self.next = Uuid::nil();
                self.rounds += 1;
            }
        }
        due.sort();
        due.truncate(usize::try_from(limit).unwrap_or(0));
        Ok(due
            .into_iter()
            .map(|(_, id)| DeliveryId::from_uuid(id))
            .collect())
    }
}

/// What [`due_lane_heads`] sets in its transaction before its statement.
pub(super) const DUE_LANE_HEADS_SETUP: &str =
    "SELECT set_config('enable_bitmapscan', 'off', true), \
     set_config('enable_sort', 'off', true)";

/// Writes a fresh job for each of `ids` that is still a due, unleased (or
/// lease-expired) lane head of an `activa` subscription, in one
/// transaction. Rows another transaction holds (a claim, a finish) are
/// skipped: they are moving. The requeued ones get `proximo_intento` = now
/// (never earlier than it was), so the sweeper leaves them alone for
/// `stale_after` while their job travels. Returns the jobs written.
///
/// Every row is reached by its primary key: the given rows are locked
/// first (one probe per id), the checks read the locked rows, and the
/// update takes the ids that passed. Never a join against the open
/// deliveries: an `id IN (… FOR UPDATE SKIP LOCKED)` semi join let the
/// planner re-run the locking subquery once per open delivery (13–138 s on
/// 21,000 open rows, while every claim of the locked ones waited).
/// Its transaction turns sequential and bitmap scans off
/// ([`super::BY_KEY_SETUP`]).
pub async fn requeue<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    ids: &[DeliveryId],
) -> Result<Vec<DeliveryJob>> {
    let mut tx = db.begin().await?;
    by_key(&mut tx).await?;
    let rows = sqlx::query_file_as!(JobRow, "src/deliveries/sql/requeue.sql", &uuids(ids))
        .fetch_all(&mut *tx)
        .await?;
    let mut jobs: Vec<DeliveryJob> = rows.into_iter().map(JobRow::next_job).collect();
    jobs.sort_by_key(|j| (*j.instance_id.as_uuid(), j.seq));
    enqueue(&mut tx, &jobs).await?;
    tx.commit().await?;
    Ok(jobs)
}

/// Retention: deletes up to `limit` `entregada` deliveries (with their
/// attempts) delivered more than `days` days ago, except those of
/// subscriptions whose contract keeps its own period ([`purge_contract`]),
/// and up to `limit` `cancelada` ones cancelled that long ago, except
/// those of subscriptions whose contract keeps its own period for them
/// ([`purge_contract_cancelled`]). `fallida` rows are never deleted here — they are the DLQ —
/// and `pendiente` ones are still owed. Returns how many were deleted.
///
/// Oldest first, from `deliveries_delivered`, then each by its primary
/// key: a pass reads what it deletes, however many rows are pending or
/// failed.
///
/// Its transaction turns sequential and bitmap scans off
/// ([`super::BY_KEY_SETUP`]).
pub async fn purge_delivered<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    days: i64,
    limit: i64,
) -> Result<u64> {
    let days = i32::try_from(days).unwrap_or(i32::MAX);
    let own = |period: fn(&Retention) -> Option<Duration>| -> Vec<&'static str> {
        Contract::ALL
            .into_iter()
            .filter(|c| period(&c.spec().retention).is_some())
            .map(Contract::as_str)
            .collect()
    };
    let own_delivered = own(|r| r.delivered);
    let own_cancelled = own(|r| r.cancelled);
    let mut tx = db.begin().await?;
    by_key(&mut tx).await?;
    let deleted = sqlx::query_file_scalar!(
        "src/deliveries/sql/purge_delivered.sql",
        days,
        limit,
        &own_delivered as &[&str]
    )
    .fetch_one(&mut *tx)
    .await?;
    // `cancelada` rows are finished the same way, from `cancelada_en`.
    let cancelled = sqlx::query_file_scalar!(
        "src/deliveries/sql/purge_cancelled.sql",
        days,
        limit,
        &own_cancelled as &[&str]
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(u64::try_from(deleted + cancelled).unwrap_or(0))
}

/// Retention of a contract that keeps its own periods
/// (`ContractSpec::retention`; Visito: 30 days after any finish): deletes
/// up to `limit` finished deliveries of its subscriptions, with their
/// attempts — `entregada` ones delivered longer ago than its `delivered`
/// period, `fallida` ones finished longer ago than its `failed` one (a
/// period it leaves to the operator, `None`, deletes nothing here: the
/// setting's pass and the DLQ's rule apply). Returns how many were
/// deleted.
pub async fn purge_contract<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    contract: Contract,
    limit: i64,
) -> Result<u64> {
    let retention = contract.spec().retention;
    if retention.delivered.is_none() && retention.failed.is_none() {
        return Ok(0);
    }
    // `None`: a period no row can pass.
    let never = interval(Duration::from_secs(1_000 * 365 * 24 * 3600));
    let period = |d: Option<Duration>| d.map_or(never, interval);
    let mut tx = db.begin().await?;
    by_key(&mut tx).await?;
    let deleted = sqlx::query_file_scalar!(
        "src/deliveries/sql/purge_contract.sql",
        contract.as_str(),
        period(retention.delivered),
        period(retention.failed),
        limit,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(u64::try_from(deleted).unwrap_or(0))
}

/// Retention of the `cancelada` rows of a contract that keeps its own
/// period for them (`Retention::cancelled`; Visito: 30 days after
/// `cancelada_en`): deletes up to `limit` of its subscriptions' cancelled
/// deliveries cancelled longer ago, with their attempts; nothing when the
/// contract leaves them to the operator ([`purge_delivered`] does).
/// Returns how many were deleted.
///
/// Its own statement, one subscription at a time through
/// `deliveries_cancelled_by_subscription` (migration 0022): a third
/// branch in [`purge_contract`]'s statement planned, young, a walk of the
/// table.
pub async fn purge_contract_cancelled<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    contract: Contract,
    limit: i64,
) -> Result<u64> {
    let Some(period) = contract.spec().retention.cancelled else {
        return Ok(0);
    };
    let mut tx = db.begin().await?;
    by_key(&mut tx).await?;
    let deleted = sqlx::query_file_scalar!(
        "src/deliveries/sql/purge_contract_cancelled.sql",
        contract.as_str(),
        interval(period),
        limit,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(u64::try_from(deleted).unwrap_or(0))
}
