//! Which retry ladder decides a delivery's next attempt. A delivery keeps
//! the ladder it started with: its first failed attempt writes the ladder
//! of its subscription's contract on its row (`escalera`), and every later
//! failure reads that one back, whatever the subscription's contract has
//! become meanwhile.
//!
//! `motor@1` is the operator's [`RetryPolicy`] (production: the same
//! ladder to the millisecond, a property test in the domain proves it; a
//! test shortens it with `MOTOR_RETRY_SCHEDULE_MS`). The other ladders
//! are the domain's table, or a test's stand-in for one
//! (`MOTOR_TEST_LADDERS`, [`Ladder::parse_stand_in`]).

use std::time::Duration;

use motor_domain::{
    contract::{Ladder, LadderId, MOTOR_V1},
    delivery::{Decision, Jitter, Outcome, RetryPolicy, Tier},
    time::Timestamp,
};

/// The ladders one dispatcher decides with.
#[derive(Debug, Clone)]
pub struct Ladders {
    policy: RetryPolicy,
    stand_ins: Vec<Ladder>,
}

/// A stand-in that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("motor@1 is the retry policy: shorten it with MOTOR_RETRY_SCHEDULE_MS")]
pub struct MotorStandIn;

impl Ladders {
    /// The operator's policy for `motor@1`, the domain's table for the
    /// rest.
    pub fn new(policy: RetryPolicy) -> Self {
        Self {
            policy,
            stand_ins: Vec::new(),
        }
    }

    /// Replaces built-in ladders by short ones with their ids (tests).
    pub fn with_stand_ins(mut self, stand_ins: Vec<Ladder>) -> Result<Self, MotorStandIn> {
        if stand_ins.iter().any(|l| l.id() == MOTOR_V1.id()) {
            return Err(MotorStandIn);
        }
        self.stand_ins = stand_ins;
        Ok(self)
    }

    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// What follows the `attempt`-th attempt of a delivery created at
    /// `created_at` whose ladder is `ladder`.
    pub fn decide(
        &self,
        ladder: LadderId,
        created_at: Timestamp,
        now: Timestamp,
        attempt: u32,
        outcome: Outcome,
        draw: Jitter,
    ) -> Decision {
        match self.ladder(ladder) {
            None => self.policy.decide(created_at, now, attempt, outcome, draw),
            Some(l) => l.decide(
                created_at,
                now,
                attempt,
                outcome,
                draw,
                self.retry_after_cap(),
            ),
        }
    }

    /// The ladder `id` names; `None` for `motor@1` (the policy).
    fn ladder(&self, id: LadderId) -> Option<&Ladder> {
        if id == MOTOR_V1.id() {
            return None;
        }
        self.stand_ins
            .iter()
            .find(|l| l.id() == id)
            .or_else(|| Ladder::by_id(id))
    }

    fn retry_after_cap(&self) -> Duration {
        self.policy.retry_after_cap()
    }

    /// The longest wait a delay tier holds: the longest tier's delay under
    /// the policy plus its ±20 % jitter band (so no `motor@1` retry, and
    /// no `Retry-After` capped at 1 h, is ever longer). A retry that waits
    /// longer is parked in Postgres, not held by a consumer
    /// (`motor_store::deliveries::record_attempt_parking`): Visito's 2 h,
    /// 8 h and 24 h, Asixto's longest draws.
    pub fn park_after(&self) -> Duration {
        let longest = self.policy.tier_delay(Tier::H1);
        longest + longest / 5
    }
}

#[cfg(test)]
mod tests {
    use motor_domain::{
        contract::{JitterMode, Limit, ASIXTO_V1, VISITO_V1},
        delivery::ErrorCode,
        time,
    };

    use super::*;

    fn retry() -> Outcome {
        Outcome::Retry {
            error: ErrorCode::Http(500),
            retry_after: None,
        }
    }

    fn wait(d: Decision) -> Duration {
        match d {
            Decision::Retry { wait, .. } => wait,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn motor_is_the_policy_and_the_rest_their_ladder_or_stand_in() {
        let t0 = time::parse("2026-12-03T12:00:00Z").unwrap();
        let short = RetryPolicy::new(
            [1, 2, 3, 4, 5, 6].map(Duration::from_millis),
            Duration::from_secs(3600),
            Duration::from_secs(60),
        )
        .unwrap();
        let ladders = Ladders::new(short.clone());
        assert_eq!(
            ladders.decide(MOTOR_V1.id(), t0, t0, 2, retry(), Jitter::NONE),
            short.decide(t0, t0, 2, retry(), Jitter::NONE),
            "motor@1 follows the operator's policy"
        );
        assert_eq!(
            wait(ladders.decide(VISITO_V1.id(), t0, t0, 2, retry(), Jitter::NONE)),
            Duration::from_secs(300),
            "visito@1's second wait"
        );
        let stand_in = Ladder::new(
            VISITO_V1.id(),
            vec![Duration::from_millis(300), Duration::from_millis(600)],
            JitterMode::Symmetric { percent: 0 },
            Limit::MaxAttempts(3),
        )
        .unwrap();
        let ladders = ladders.with_stand_ins(vec![stand_in]).unwrap();
        assert_eq!(
            wait(ladders.decide(VISITO_V1.id(), t0, t0, 2, retry(), Jitter::NONE)),
            Duration::from_millis(600)
        );
        assert!(matches!(
            ladders.decide(VISITO_V1.id(), t0, t0, 3, retry(), Jitter::NONE),
            Decision::Fail { .. }
        ));
        let motor = Ladder::new(
            MOTOR_V1.id(),
            vec![Duration::from_millis(1)],
            JitterMode::HalfToFull,
            Limit::MaxAttempts(1),
        )
        .unwrap();
        assert_eq!(
            Ladders::new(short).with_stand_ins(vec![motor]).unwrap_err(),
            MotorStandIn
        );
    }

    /// Which waits each ladder parks in Postgres instead of a tier, in
    /// production: none of `motor@1`'s (every draw and every capped
    /// `Retry-After`), Visito's from its 2 h step, Asixto's longest draws.
    #[test]
    fn only_waits_longer_than_the_longest_tier_are_parked() {
        let ladders = Ladders::new(RetryPolicy::production());
        let park_after = ladders.park_after();
        assert_eq!(park_after, Duration::from_secs(72 * 60));
        let t0 = time::parse("2026-12-03T12:00:00Z").unwrap();
        let parked = |id, attempt, draw: f64| {
            wait(ladders.decide(id, t0, t0, attempt, retry(), Jitter::from_unit(draw))) > park_after
        };
        for attempt in 1..=80 {
            for draw in [0.0, 0.5, 0.999_999] {
                assert!(!parked(MOTOR_V1.id(), attempt, draw), "{attempt} {draw}");
            }
        }
        let with_retry_after = Outcome::Retry {
            error: ErrorCode::Http(429),
            retry_after: Some(Duration::from_secs(10 * 3600)),
        };
        let capped = wait(ladders.decide(MOTOR_V1.id(), t0, t0, 1, with_retry_after, Jitter::NONE));
        assert!(capped <= park_after, "{capped:?}");
        // Visito: 1 min, 5 min, 30 min held; 2 h, 8 h, 24 h parked.
        let visito: Vec<bool> = (1..=6).map(|n| parked(VISITO_V1.id(), n, 0.5)).collect();
        assert_eq!(visito, [false, false, false, true, true, true]);
        // Asixto's 1 h 30 min step: parked above 72 min only; 3 h and 5 h
        // always (their shortest draws are 1 h 30 min and 2 h 30 min).
        assert!(!parked(ASIXTO_V1.id(), 4, 0.0) && parked(ASIXTO_V1.id(), 4, 0.999));
        assert!(parked(ASIXTO_V1.id(), 5, 0.0) && parked(ASIXTO_V1.id(), 6, 0.0));
        assert!((1..=3).all(|n| !parked(ASIXTO_V1.id(), n, 0.999)));
        // A test's short tiers park what is longer than the shortened 1 h.
        let short = RetryPolicy::new(
            [100, 200, 300, 400, 500, 600].map(Duration::from_millis),
            Duration::from_secs(3600),
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(Ladders::new(short).park_after(), Duration::from_millis(720));
    }
}
