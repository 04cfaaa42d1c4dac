//! The retry schedule and the give-up horizon: given an attempt's
//! [`Outcome`], what happens next and when. The dispatcher records the
//! [`Decision`] in the same transaction as the attempt.
//!
//! Where the contract is silent:
//! - Jitter is ±20 % on every step, the 1 h one too, so a scheduled wait lies
//!   in [0.8, 1.2] × nominal and can reach 72 min. The 1 h cap binds the
//!   receiver's `Retry-After`, not Motor's own schedule: the wait is
//!   `max(scheduled, min(retry_after, 1 h))`, so a `Retry-After` never
//!   shortens the schedule and never by itself stretches a wait past 1 h.
//! - Waits are whole milliseconds, rounded up, never below what was asked.
//! - The horizon is measured from the delivery's creation, as the contract
//!   says, and checked only when an attempt fails in a retryable way: at or
//!   after `created_at + 72 h` that failure ends the delivery `fallida` with
//!   `<code>_agotada`. A delivery that sat `pendiente` for 72 h (paused or
//!   suspended subscription) therefore gets no retry after a retryable
//!   failure of its next attempt. Non-retryable failures keep their own code
//!   (a 404 is `http_404`, never `http_404_agotada`), and a 401/403 suspends
//!   whatever its age.
//! - Attempts are numbered from 1 (`intentos_detalle[].numero`); 0 is read
//!   as 1.

use std::time::Duration;

use rand::Rng;

use super::{
    outcome::{ErrorCode, LastError, Outcome},
    state::DeliveryState,
    tier::{largest_not_above, Tier},
};
use crate::{subscription::SuspensionReason, time::Timestamp};

/// The random part of one wait: a number in [0, 1), drawn by the caller so
/// tests can fix it. 0 gives the shortest wait (-20 %), 0.5 the nominal one.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Jitter(f64);

impl Jitter {
    /// No jitter: exactly the nominal delay.
    pub const NONE: Jitter = Jitter(0.5);

    /// Takes `unit` clamped into [0, 1); NaN is [`Jitter::NONE`].
    pub fn from_unit(unit: f64) -> Self {
        if unit.is_nan() {
            Jitter::NONE
        } else {
            Jitter(unit.clamp(0.0, 1.0 - f64::EPSILON / 2.0))
        }
    }

    /// A uniformly random jitter.
    pub fn random(rng: &mut impl Rng) -> Self {
        Jitter(rng.gen::<f64>())
    }

    pub const fn unit(self) -> f64 {
        self.0
    }
}

/// A retry policy is not usable as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("tier delays must be at least 1 ms and whole milliseconds")]
    DelayNotWholeMillis,
    #[error("tier delays must grow strictly from one tier to the next")]
    DelaysNotIncreasing,
    #[error("the Retry-After cap must be whole milliseconds")]
    CapNotWholeMillis,
    #[error("the give-up horizon must be positive")]
    ZeroHorizon,
    #[error("delays, cap and horizon must each be under 10 years")]
    TooLong,
}

/// The retry schedule, the `Retry-After` cap and the give-up horizon.
/// [`RetryPolicy::production`] is the contract; tests build short ones with
/// [`RetryPolicy::new`] so a whole schedule runs in seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    tier_delays: [Duration; 6],
    retry_after_cap: Duration,
    give_up_after: Duration,
}

/// How far each wait strays from its nominal delay, either way.
pub const JITTER_SPREAD_PERCENT: u64 = 20;

impl RetryPolicy {
    /// The contract: 1 s, 5 s, 30 s, 2 min, 10 min, then 1 h; `Retry-After`
    /// honoured up to 1 h; give up 72 h after creation.
    pub fn production() -> Self {
        Self {
            tier_delays: Tier::ALL.map(Tier::nominal),
            retry_after_cap: Duration::from_secs(3600),
            give_up_after: Duration::from_secs(72 * 3600),
        }
    }

    /// A policy with the given nominal delay for each tier (in
    /// [`Tier::ALL`] order: step `n` waits `tier_delays[n - 1]`, the last for
    /// ever after), `Retry-After` cap and horizon. Delays are whole
    /// milliseconds and strictly increasing. A cap above one hour changes
    /// nothing for values from [`super::parse_retry_after`], which are
    /// already capped at [`super::RETRY_AFTER_CAP`].
    pub fn new(
        tier_delays: [Duration; 6],
        retry_after_cap: Duration,
        give_up_after: Duration,
    ) -> Result<Self, PolicyError> {
        const TEN_YEARS: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
        if tier_delays.iter().any(|d| *d >= TEN_YEARS)
            || retry_after_cap >= TEN_YEARS
            || give_up_after >= TEN_YEARS
        {
            return Err(PolicyError::TooLong);
        }
        let whole_ms = |d: Duration| Duration::from_millis(d.as_millis() as u64) == d;
        if tier_delays
            .iter()
            .any(|d| *d < Duration::from_millis(1) || !whole_ms(*d))
        {
            return Err(PolicyError::DelayNotWholeMillis);
        }
        if tier_delays.windows(2).any(|w| w[0] >= w[1]) {
            return Err(PolicyError::DelaysNotIncreasing);
        }
        if !whole_ms(retry_after_cap) {
            return Err(PolicyError::CapNotWholeMillis);
        }
        if give_up_after.is_zero() {
            return Err(PolicyError::ZeroHorizon);
        }
        Ok(Self {
            tier_delays,
            retry_after_cap,
            give_up_after,
        })
    }

    /// The nominal delay of `tier` under this policy.
    pub fn tier_delay(&self, tier: Tier) -> Duration {
        self.tier_delays[tier.index()]
    }

    pub fn retry_after_cap(&self) -> Duration {
        self.retry_after_cap
    }

    pub fn give_up_after(&self) -> Duration {
        self.give_up_after
    }

    /// The schedule's tier after the `attempt`-th failed attempt.
    pub fn step_tier(&self, attempt: u32) -> Tier {
        let step = attempt.max(1) as usize - 1;
        Tier::ALL[step.min(Tier::ALL.len() - 1)]
    }

    /// The nominal wait after the `attempt`-th failed attempt.
    pub fn nominal(&self, attempt: u32) -> Duration {
        self.tier_delay(self.step_tier(attempt))
    }

    /// The scheduled wait after the `attempt`-th failed attempt: the nominal
    /// delay ±20 %, in [0.8, 1.2] × nominal.
    pub fn scheduled(&self, attempt: u32, jitter: Jitter) -> Duration {
        let nominal = self.nominal(attempt).as_millis() as u64;
        let spread = nominal * JITTER_SPREAD_PERCENT / 100;
        // (2u - 1) is in [-1, 1): the offset is in [-spread, spread].
        let offset = ((2.0 * jitter.unit() - 1.0) * spread as f64).floor() as i64;
        Duration::from_millis(nominal.saturating_add_signed(offset))
    }

    /// The wait before the next attempt: the schedule, stretched (never
    /// shortened) by a `Retry-After` capped at this policy's cap.
    pub fn wait(&self, attempt: u32, retry_after: Option<Duration>, jitter: Jitter) -> Duration {
        let scheduled = self.scheduled(attempt, jitter);
        match retry_after {
            Some(asked) => scheduled.max(ceil_millis(asked.min(self.retry_after_cap))),
            None => scheduled,
        }
    }

    /// The tier a wait that the schedule did not choose is parked in: the
    /// largest tier whose delay under this policy is not above it.
    pub fn tier_for_wait(&self, wait: Duration) -> Tier {
        largest_not_above(wait, |t| self.tier_delay(t))
    }

    /// Whether a retryable failure at `now` ends the delivery: `now` is at
    /// or past `created_at` + the horizon.
    pub fn exhausted(&self, created_at: Timestamp, now: Timestamp) -> bool {
        (now - created_at)
            .to_std()
            .is_ok_and(|age| age >= self.give_up_after)
    }

    /// What follows the `attempt`-th attempt of a delivery created at
    /// `created_at`, whose result came at `now`.
    pub fn decide(
        &self,
        created_at: Timestamp,
        now: Timestamp,
        attempt: u32,
        outcome: Outcome,
        jitter: Jitter,
    ) -> Decision {
        match outcome {
            Outcome::Delivered => Decision::Delivered,
            Outcome::Suspend { reason, error } => Decision::Suspend { reason, error },
            Outcome::Fail { error } => Decision::Fail {
                error: LastError::new(error),
            },
            Outcome::Retry { error, .. } if self.exhausted(created_at, now) => Decision::Fail {
                error: LastError::exhausted(error),
            },
            Outcome::Retry { error, retry_after } => {
                let scheduled = self.scheduled(attempt, jitter);
                let wait = self.wait(attempt, retry_after, jitter);
                let step = self.step_tier(attempt);
                let tier = if wait > scheduled {
                    step.max(self.tier_for_wait(wait))
                } else {
                    step
                };
                Decision::Retry {
                    error,
                    next_attempt: attempt.max(1).saturating_add(1),
                    wait,
                    due_at: add(now, wait),
                    tier,
                }
            }
        }
    }
}

/// What the dispatcher does after one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Mark it `entregada`; release the next delivery of its lane.
    Delivered,
    /// Suspend the subscription with `motivo` and open an alert; the delivery
    /// stays `pendiente` with `ultimo_error` = `error`, and its lane waits.
    Suspend {
        reason: SuspensionReason,
        error: ErrorCode,
    },
    /// Keep it `pendiente` (`proximo_intento_en` = `due_at`) and send a job
    /// for attempt `next_attempt` to `tier`, not to be handled before
    /// `due_at` = now + `wait`.
    Retry {
        error: ErrorCode,
        next_attempt: u32,
        wait: Duration,
        due_at: Timestamp,
        tier: Tier,
    },
    /// Mark it `fallida`, publish it to the DLQ, release its lane.
    Fail { error: LastError },
}

impl Decision {
    /// The delivery's state after this decision.
    pub const fn state(&self) -> DeliveryState {
        match self {
            Decision::Delivered => DeliveryState::Delivered,
            Decision::Suspend { .. } | Decision::Retry { .. } => DeliveryState::Pending,
            Decision::Fail { .. } => DeliveryState::Failed,
        }
    }

    /// What `ultimo_error` becomes; `None` once delivered.
    pub const fn last_error(&self) -> Option<LastError> {
        match self {
            Decision::Delivered => None,
            Decision::Suspend { error, .. } | Decision::Retry { error, .. } => {
                Some(LastError::new(*error))
            }
            Decision::Fail { error } => Some(*error),
        }
    }
}

fn ceil_millis(d: Duration) -> Duration {
    let ms = d.as_nanos().div_ceil(1_000_000);
    Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

/// `now + wait`, saturating at the largest representable time.
fn add(now: Timestamp, wait: Duration) -> Timestamp {
    chrono::TimeDelta::from_std(wait)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
}

#[cfg(test)]
mod tests;
