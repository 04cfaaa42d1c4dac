//! The choices inside a chain's steps, as plain functions of what they
//! are given (time passed in): when a claim renews its lease, what a
//! `Retry-After` holds, whether a record claims the next delivery or may
//! linger, and a job's budget.

use std::time::{Duration, Instant};

use motor_domain::delivery::Outcome;

use super::super::{unordered::Running, Runs, LEASE_MARGIN, UNORDERED_PER_SUBSCRIPTION};

/// A claim held this long before its attempt starts (waiting for a slot
/// of its unordered subscription) renews its lease first: the lease is
/// the timeout plus [`LEASE_MARGIN`], so the attempt and its record still
/// have half the margin.
pub(super) const RENEW_AFTER: Duration = Duration::from_millis(LEASE_MARGIN.as_millis() as u64 / 2);

/// Attempts of one lane a consumer's job may chain (each head's finish
/// claiming the next delivery), and for how long, before the lane goes on
/// in a task of its own: the job's consumer slot and offset are then free,
/// and the lane does not wait for a job queued behind the backlog of its
/// partition. A chain already in a task of its own has no bound.
pub(super) const CHAIN_MAX: usize = 100;
pub(super) const CHAIN_FOR: Duration = Duration::from_secs(1);

/// Whether a claim made at `claimed_at` has waited long enough by `now` to
/// renew its lease before its attempt.
pub(in crate::dispatch) fn renew_due(claimed_at: Instant, now: Instant) -> bool {
    now.saturating_duration_since(claimed_at) >= RENEW_AFTER
}

/// The wait a receiver's `Retry-After` asked for (429 and 503 only, as
/// classified), which holds the whole subscription if the attempt retries.
pub(super) fn hold_for(outcome: &Outcome) -> Option<Duration> {
    match outcome {
        Outcome::Retry {
            retry_after: Some(wait),
            ..
        } => Some(*wait),
        _ => None,
    }
}

/// Until when a hold of `wait` from `now` lasts.
pub(super) fn hold_until(
    now: chrono::DateTime<chrono::Utc>,
    wait: Duration,
) -> chrono::DateTime<chrono::Utc> {
    now + chrono::TimeDelta::from_std(wait).unwrap_or(chrono::TimeDelta::MAX)
}

/// Whether the record claims the lane's next delivery: not at shutdown,
/// and not when more chains of an unordered subscription run than may
/// claim ahead (this one then leaves the crowd).
pub(super) fn claims_next(stopping: bool, running: Option<&mut Running>) -> bool {
    !(stopping || running.is_some_and(|r| r.leaves_crowded()))
}

/// Whether a delivered record may linger for others to share its commit
/// (`recorder`): an ordered lane's, or an unordered subscription's while
/// `unordered_chains` — its chains running in this process, this one
/// included — are no more than its request slots (each chain holds one of
/// its tasks until its record returns: a busy subscription would run out
/// of them); only when the chain is not busy (it claimed this delivery
/// with the record before, or waited for a request slot: a backlog moves
/// at its records' pace; or a lane
/// whose events come moments apart, which would find each record before
/// them still lingering), and only when the chain was handed no later
/// delivery of its lane (it waits behind this record).
pub(super) fn lingers(
    ordered_lane: bool,
    unordered_chains: Option<usize>,
    busy: bool,
    handed: usize,
) -> bool {
    let few = |chains: usize| chains <= UNORDERED_PER_SUBSCRIPTION;
    (ordered_lane || unordered_chains.is_some_and(few)) && !busy && handed == 0
}

/// Whether a chain that made `attempts` over `elapsed` has used a job's
/// budget (a detached chain has none).
pub(super) fn past_budget(runs: Runs, attempts: usize, elapsed: Duration) -> bool {
    runs == Runs::InJob && (attempts >= CHAIN_MAX || elapsed >= CHAIN_FOR)
}

#[cfg(test)]
mod tests {
    use motor_domain::{delivery::ErrorCode, subscription::SubscriptionId};

    use super::*;
    use crate::dispatch::unordered::{Busy, Unordered, UNORDERED_CHAINS};

    #[test]
    fn a_claim_renews_its_lease_after_half_the_margin() {
        let claimed_at = Instant::now();
        assert!(!renew_due(claimed_at, claimed_at));
        assert!(!renew_due(
            claimed_at,
            claimed_at + RENEW_AFTER - Duration::from_millis(1)
        ));
        assert!(renew_due(claimed_at, claimed_at + RENEW_AFTER));
        assert_eq!(RENEW_AFTER, LEASE_MARGIN / 2);
        // A clock read before the claim (not monotonic across threads in
        // theory) does not renew.
        assert!(!renew_due(claimed_at + Duration::from_secs(1), claimed_at));
    }

    #[test]
    fn only_a_retry_with_retry_after_holds() {
        let wait = Duration::from_secs(7);
        let error = ErrorCode::Timeout;
        assert_eq!(
            hold_for(&Outcome::Retry {
                error,
                retry_after: Some(wait)
            }),
            Some(wait)
        );
        assert_eq!(
            hold_for(&Outcome::Retry {
                error,
                retry_after: None
            }),
            None
        );
        assert_eq!(hold_for(&Outcome::Delivered), None);
        assert_eq!(hold_for(&Outcome::Fail { error }), None);
    }

    #[test]
    fn a_hold_lasts_its_wait() {
        let now = chrono::Utc::now();
        assert_eq!(
            hold_until(now, Duration::from_millis(1_500)),
            now + chrono::TimeDelta::milliseconds(1_500)
        );
        assert_eq!(hold_until(now, Duration::ZERO), now);
    }

    #[test]
    fn the_next_is_claimed_unless_stopping_or_crowded() {
        assert!(claims_next(false, None));
        assert!(!claims_next(true, None));
        let unordered = Unordered::new(SubscriptionId::new(), Busy::default());
        let mut first = unordered.running();
        assert!(claims_next(false, Some(&mut first)));
        assert!(!claims_next(true, Some(&mut first)));
        // One chain past the bound: the one deciding leaves the crowd, for
        // good, and the others go on claiming.
        let mut crowd: Vec<Running> = (0..UNORDERED_CHAINS).map(|_| unordered.running()).collect();
        assert!(!claims_next(false, Some(&mut first)));
        assert!(claims_next(false, Some(&mut crowd[0])));
        assert!(!claims_next(false, Some(&mut first)), "left for good");
    }

    #[test]
    fn a_first_record_with_nothing_behind_it_lingers_unless_its_subscription_is_busy() {
        assert!(lingers(true, None, false, 0));
        assert!(!lingers(true, None, true, 0), "a busy lane");
        assert!(!lingers(true, None, false, 1), "a delivery waits behind it");
        assert!(
            lingers(false, Some(1), false, 0),
            "an unordered chain alone"
        );
        assert!(lingers(false, Some(UNORDERED_PER_SUBSCRIPTION), false, 0));
        assert!(
            !lingers(false, Some(UNORDERED_PER_SUBSCRIPTION + 1), false, 0),
            "more unordered chains than slots"
        );
        assert!(
            !lingers(false, Some(1), true, 0),
            "an unordered chain that claimed ahead"
        );
        assert!(!lingers(false, None, false, 0), "neither");
    }

    #[test]
    fn a_job_chains_within_its_budget_and_a_task_of_its_own_has_none() {
        let quick = Duration::from_millis(10);
        assert!(!past_budget(Runs::InJob, 1, quick));
        assert!(!past_budget(Runs::InJob, CHAIN_MAX - 1, quick));
        assert!(past_budget(Runs::InJob, CHAIN_MAX, quick));
        assert!(past_budget(Runs::InJob, 1, CHAIN_FOR));
        assert!(!past_budget(Runs::Detached, CHAIN_MAX * 10, CHAIN_FOR * 10));
    }
}
