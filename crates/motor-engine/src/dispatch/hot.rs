//! Hot lanes: the ordered lanes a chain of this process is running, and
//! the parked first attempts commits of this process handed to them.
//!
//! A commit that creates a delivery behind an open one of its lane parks
//! it with no job: the finish of the one before it claims it. A finish in
//! flight while that commit was could not see it, so the commit's process
//! used to check each such lane after its commit (`claim_freed`, one
//! transaction that share-locks the lane's head, then waits 2, 4, 8, 16 ms
//! for a finish in flight): at 500 events/s on one lane, one more commit
//! per event on the lane's head, which the head's own finish then waited
//! for. When a chain of this process runs the lane, that chain sees every
//! such delivery anyway: the ones handed before it submits a record are
//! seen by that record's snapshot (their commit came first); the ones
//! handed while a record is in flight are kept here until the chain
//! records again (seen then) or ends (checked then, once its finish is
//! durable, by the same `claim_freed`, which finds the lane free and
//! claims them with no wait). A lane no chain of this process runs gets
//! the check after the commit, as before.
//!
//! One handed while the chain's record is under way hurries that record,
//! which may be lingering for others to share its commit (`recorder`).
//! And a lane whose last chain here ended moments ago ([`RECENT`]) is
//! busy: its next chain's records do not linger (at 100 events/s on one
//! lane, each event would otherwise find the record before it still
//! lingering, be parked behind it, and wait for it).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use motor_domain::{
    delivery::{DeliveryId, Lane},
    subscription::SubscriptionId,
    InstanceId,
};

/// An ordered lane: (subscription, instance, lane).
pub(super) type LaneKey = (SubscriptionId, InstanceId, Lane);

#[derive(Default)]
struct Hot {
    /// Chains of this process on the lane (one, but for a moment when a
    /// stale claim and its successor overlap).
    chains: usize,
    /// Parked first attempts handed since the chain's last record began.
    parked: Vec<DeliveryId>,
    /// A record of the lane's chain is under way.
    recording: bool,
}

/// Where a parked first attempt a commit handed went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kept {
    /// No chain of this process runs its lane: the caller checks it.
    No,
    /// Kept for the lane's chain, which is attempting.
    ForChain,
    /// Kept for the lane's chain, whose record is under way: that record
    /// should commit now.
    BehindRecord,
}

/// A lane whose last chain ended this recently is busy.
pub(super) const RECENT: Duration = Duration::from_millis(25);

/// Lanes whose end is remembered, past which the old ends are forgotten
/// (at most once every [`RECENT`]).
const ENDED_MAX: usize = 4_096;

#[derive(Default)]
struct Lanes {
    running: HashMap<LaneKey, Hot>,
    /// When lanes' last chains here ended.
    ended: HashMap<LaneKey, Instant>,
    forgot_at: Option<Instant>,
}

impl Lanes {
    fn ended(&mut self, lane: LaneKey, now: Instant) {
        self.ended.insert(lane, now);
        if self.ended.len() > ENDED_MAX
            && self
                .forgot_at
                .is_none_or(|at| now.saturating_duration_since(at) >= RECENT)
        {
            self.ended
                .retain(|_, at| now.saturating_duration_since(*at) < RECENT);
            self.forgot_at = Some(now);
        }
    }
}

#[derive(Default)]
pub(super) struct HotLanes {
    lanes: Mutex<Lanes>,
}

impl HotLanes {
    /// A chain starts on `lane` at `now`: whether the lane is busy (its
    /// last chain here ended within [`RECENT`]).
    pub(super) fn enter(&self, lane: LaneKey, now: Instant) -> bool {
        let mut lanes = self.lanes.lock().expect("not poisoned");
        let busy = lanes
            .ended
            .get(&lane)
            .is_some_and(|at| now.saturating_duration_since(*at) < RECENT);
        lanes.running.entry(lane).or_default().chains += 1;
        busy
    }

    /// A commit handed `parked` (the lowest new delivery of `lane`, parked
    /// behind an open one): kept for the lane's chain when one runs here;
    /// [`Kept::No`] when none does, and the caller checks it.
    pub(super) fn hand(&self, lane: &LaneKey, parked: DeliveryId) -> Kept {
        match self
            .lanes
            .lock()
            .expect("not poisoned")
            .running
            .get_mut(lane)
        {
            Some(hot) => {
                hot.parked.push(parked);
                if hot.recording {
                    Kept::BehindRecord
                } else {
                    Kept::ForChain
                }
            }
            None => Kept::No,
        }
    }

    /// What was handed to `lane` so far, taken by its chain right before
    /// it submits a record (whose snapshot will see them); the record is
    /// under way until [`Self::recorded`].
    pub(super) fn take(&self, lane: &LaneKey) -> Vec<DeliveryId> {
        self.lanes
            .lock()
            .expect("not poisoned")
            .running
            .get_mut(lane)
            .map(|hot| {
                hot.recording = true;
                std::mem::take(&mut hot.parked)
            })
            .unwrap_or_default()
    }

    /// What was handed to `lane` so far, taken by its chain, which claims
    /// it after a record that claimed no next (the record is not under
    /// way: what comes meanwhile is kept for the chain, with no hurry).
    pub(super) fn handed(&self, lane: &LaneKey) -> Vec<DeliveryId> {
        self.lanes
            .lock()
            .expect("not poisoned")
            .running
            .get_mut(lane)
            .map(|hot| std::mem::take(&mut hot.parked))
            .unwrap_or_default()
    }

    /// The chain's record returned; it gives back what it took and the
    /// record did not settle (the record claimed no next: it may have
    /// missed them).
    pub(super) fn recorded(&self, lane: &LaneKey, unsettled: Vec<DeliveryId>) {
        if let Some(hot) = self
            .lanes
            .lock()
            .expect("not poisoned")
            .running
            .get_mut(lane)
        {
            hot.recording = false;
            hot.parked.extend(unsettled);
        }
    }

    /// A chain on `lane` ends at `now`: what was handed to it and not
    /// settled, to check now, when it was the lane's last chain (else the
    /// others keep it).
    pub(super) fn leave(&self, lane: &LaneKey, now: Instant) -> Vec<DeliveryId> {
        let mut lanes = self.lanes.lock().expect("not poisoned");
        let Some(hot) = lanes.running.get_mut(lane) else {
            return Vec::new();
        };
        hot.chains = hot.chains.saturating_sub(1);
        if hot.chains > 0 {
            return Vec::new();
        }
        let left = lanes.running.remove(lane).map(|hot| hot.parked);
        lanes.ended(lane.clone(), now);
        left.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane() -> LaneKey {
        (SubscriptionId::new(), InstanceId::new(), Lane::Live)
    }

    #[test]
    fn a_lane_without_a_chain_takes_nothing() {
        let hot = HotLanes::default();
        assert_eq!(hot.hand(&lane(), DeliveryId::new()), Kept::No);
    }

    #[test]
    fn what_a_running_chain_was_handed_is_taken_or_left_to_check_at_its_end() {
        let hot = HotLanes::default();
        let (l, other) = (lane(), lane());
        let (a, b, c) = (DeliveryId::new(), DeliveryId::new(), DeliveryId::new());
        hot.enter(l.clone(), Instant::now());
        assert_eq!(hot.hand(&l, a), Kept::ForChain);
        assert_eq!(hot.hand(&other, b), Kept::No, "another lane is not running");
        assert_eq!(hot.take(&l), [a], "taken before a record");
        // The record claimed no next: given back, then the end checks it
        // with what came meanwhile.
        assert_eq!(
            hot.hand(&l, b),
            Kept::BehindRecord,
            "the record is under way"
        );
        hot.recorded(&l, vec![a]);
        assert_eq!(hot.leave(&l, Instant::now()), [b, a]);
        assert_eq!(hot.hand(&l, c), Kept::No, "the lane is no longer running");
    }

    #[test]
    fn a_chain_claiming_what_its_record_missed_keeps_the_lane() {
        let hot = HotLanes::default();
        let l = lane();
        let (a, b) = (DeliveryId::new(), DeliveryId::new());
        hot.enter(l.clone(), Instant::now());
        assert!(hot.take(&l).is_empty());
        assert_eq!(hot.hand(&l, a), Kept::BehindRecord);
        // The record claimed no next; the chain claims what it missed.
        hot.recorded(&l, Vec::new());
        assert_eq!(hot.handed(&l), [a]);
        assert_eq!(
            hot.hand(&l, b),
            Kept::ForChain,
            "kept for the chain while it claims, with no record to hurry"
        );
        // Nothing claimed: the chain ends, and its end checks what came.
        assert_eq!(hot.leave(&l, Instant::now()), [b]);
        assert!(hot.handed(&l).is_empty(), "the lane is no longer running");
    }

    #[test]
    fn a_delivery_handed_during_a_record_hurries_it_and_not_the_next_attempt() {
        let hot = HotLanes::default();
        let l = lane();
        hot.enter(l.clone(), Instant::now());
        assert!(hot.take(&l).is_empty());
        let behind = DeliveryId::new();
        assert_eq!(hot.hand(&l, behind), Kept::BehindRecord);
        // The record claimed a next and settled what it took.
        hot.recorded(&l, Vec::new());
        assert_eq!(
            hot.hand(&l, DeliveryId::new()),
            Kept::ForChain,
            "attempting again"
        );
        assert_eq!(hot.take(&l).len(), 2, "the next record sees both");
    }

    #[test]
    fn a_lane_whose_last_chain_ended_moments_ago_is_busy() {
        let hot = HotLanes::default();
        let (l, other) = (lane(), lane());
        let t = Instant::now();
        assert!(!hot.enter(l.clone(), t), "never ran here");
        assert!(hot.leave(&l, t + RECENT).is_empty());
        assert!(hot.enter(l.clone(), t + RECENT * 2 - Duration::from_millis(1)));
        assert!(!hot.enter(other, t + RECENT), "another lane");
        hot.leave(&l, t + RECENT * 2);
        assert!(!hot.enter(l, t + RECENT * 3), "ended long enough ago");
    }

    #[test]
    fn old_ends_are_forgotten_past_the_bound() {
        let hot = HotLanes::default();
        let t = Instant::now();
        for _ in 0..=ENDED_MAX {
            let l = lane();
            hot.enter(l.clone(), t);
            hot.leave(&l, t);
        }
        let later = t + RECENT;
        let l = lane();
        hot.enter(l.clone(), later);
        hot.leave(&l, later);
        assert_eq!(
            hot.lanes.lock().unwrap().ended.len(),
            1,
            "only the recent end"
        );
    }

    #[test]
    fn the_last_chain_of_a_lane_checks_what_was_left() {
        let hot = HotLanes::default();
        let l = lane();
        let a = DeliveryId::new();
        hot.enter(l.clone(), Instant::now());
        hot.enter(l.clone(), Instant::now());
        assert_eq!(hot.hand(&l, a), Kept::ForChain);
        assert!(
            hot.leave(&l, Instant::now()).is_empty(),
            "another chain keeps it"
        );
        assert_eq!(hot.hand(&l, DeliveryId::new()), Kept::ForChain);
        assert_eq!(hot.leave(&l, Instant::now()).len(), 2);
        assert!(hot.leave(&l, Instant::now()).is_empty(), "nothing left");
    }
}
