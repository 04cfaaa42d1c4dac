//! What one sweeper remembers of the lanes between its passes
//! ([`LaneHints`]): each known lane probed from where its head was, the
//! key ranges between them walked, one slice of the subscriptions a pass.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use motor_domain::delivery::DeliveryId;
use sqlx::{Acquire, Postgres};
use uuid::Uuid;

use crate::{interval, Result};

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

    /// [`super::due_lane_heads`], with each known lane probed from its
    /// hint and the rest of the index walked in between; the hints move to
    /// what this pass found.
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
        // The server, and the statement's settings, in one round trip.
        let (server,): (String,) = sqlx::query_as(DUE_LANE_HEADS_SETUP)
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

/// What [`super::due_lane_heads`] sets in its transaction before its
/// statement, in the round trip that reads the server's postmaster start
/// (the plans test runs it as its setup and ignores what it reads).
pub(super) const DUE_LANE_HEADS_SETUP: &str = "SELECT pg_postmaster_start_time()::text, \
     set_config('enable_bitmapscan', 'off', true), \
     set_config('enable_sort', 'off', true)";
