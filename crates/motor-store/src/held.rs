//! A pool connection kept by one worker between its transactions (the
//! group commits of the intake, the recorder and the commands' accept),
//! instead of taken from the pool and given back for each.
//!
//! Why: sqlx checks a connection with a round trip to Postgres (a `Sync`
//! and its `ReadyForQuery`) when it leaves the pool (`test_before_acquire`)
//! and again, always, when it comes back. At a low rate, where every batch
//! is one request, that is two more wake-ups of a backend for a batch of
//! four statements, and a backend's messages to and from its client
//! (`sendto`, `recvfrom`) were a quarter of Postgres's CPU samples at 200
//! events/s (docs/BENCHMARKS.md, 2026-12-02 06:10). What keeping it must
//! not lose, and how it is kept:
//! - a connection that sat idle is checked before use as the pool checks
//!   it: one idle for [`IDLE_FOR`] (or the gap a worker asked to be kept
//!   across, [`Held::kept_across`]) goes back to the pool and a fresh one
//!   is taken (the pool pings it), so a server restart while the worker
//!   was idle costs no batch;
//! - the pool's `before_acquire` drops connections made before a move to
//!   another primary: one is never kept longer than [`HOLD_FOR`], so a
//!   worker follows a failover within that;
//! - a connection whose batch failed is closed, not kept nor given back
//!   (its state is unknown: a transaction may be open on it).
//!
//! A worker may also ask that its statements keep their generic plans
//! ([`Held::with_generic_plans`]: the intake's append).

use std::time::{Duration, Instant};

use sqlx::{pool::PoolConnection, Executor, PgConnection, Postgres};

use crate::{Pool, Result};

/// A connection unused this long goes back to the pool before the next
/// batch (whose acquire pings a connection as before).
pub const IDLE_FOR: Duration = Duration::from_millis(250);

/// A connection is kept at most this long after it was taken.
pub const HOLD_FOR: Duration = Duration::from_secs(1);

/// One worker's kept connection (none until the first [`Held::conn`]).
pub struct Held {
    pool: Pool,
    kept: Option<Kept>,
    /// Whether the session is set to keep generic plans while kept.
    generic: bool,
    /// How long the kept connection may sit unused ([`IDLE_FOR`] unless
    /// [`Held::kept_across`] says otherwise).
    idle_for: Duration,
}

struct Kept {
    conn: PoolConnection<Postgres>,
    taken_at: Instant,
    used_at: Instant,
}

impl Held {
    pub fn new(pool: Pool) -> Self {
        Self {
            pool,
            kept: None,
            generic: false,
            idle_for: IDLE_FOR,
        }
    }

    /// Keeps the connection across gaps of up to `gap` between batches
    /// (at least [`IDLE_FOR`], at most [`HOLD_FOR`]): for a worker that
    /// comes back at a known pace, whose failed batch costs it nothing but
    /// that batch. The relay's idle polls are 250 ms apart when it shares
    /// its process with the API, which [`IDLE_FOR`] sent back to the pool
    /// before every poll: a ping on the way in and one on the way out, two
    /// round trips for the poll's one (docs/BENCHMARKS.md, 2026-12-07
    /// 20:08).
    pub fn kept_across(mut self, gap: Duration) -> Self {
        self.idle_for = idle_across(gap);
        self
    }

    /// Its statements run with the generic plan Postgres made for them
    /// once per session (`plan_cache_mode = force_generic_plan`, set on
    /// the session when it is taken and reset before it goes back to the
    /// pool; a session that cannot be reset is closed, as is one still
    /// kept when this is dropped, so no other statement of the pool runs
    /// with it).
    ///
    /// Why: Postgres plans a prepared statement again at every run when it
    /// judges its generic plan dearer than a custom one, and it judges an
    /// array parameter to hold 10 elements. The append (one statement of a
    /// dozen joins) runs with arrays of one to a few events, so with many
    /// instances, whose index probes cost more, each append was planned
    /// again: 13,286 plans in 13,275 appends of the shapes bench's many
    /// tenants (10,000 instances), 0.62 ms of planning each, against 54
    /// plans with 500 instances (docs/BENCHMARKS.md, 2026-12-06 17:10).
    /// The generic plan is the custom one's shape, with the arrays' sizes
    /// left open (the plans test checks it with many tenants).
    pub fn with_generic_plans(mut self) -> Self {
        self.generic = true;
        self
    }

    /// The connection to run the next batch on: the kept one while it is
    /// fresh ([`IDLE_FOR`] or [`Held::kept_across`]'s gap, [`HOLD_FOR`]),
    /// else one taken from the pool now. Pass the batch's result through
    /// [`Held::outcome`].
    pub async fn conn(&mut self) -> Result<&mut PgConnection> {
        let now = Instant::now();
        if self
            .kept
            .as_ref()
            .is_some_and(|k| !keep(k.taken_at, k.used_at, now, self.idle_for))
        {
            self.give_back().await;
        }
        if self.kept.is_none() {
            let mut conn = self.pool.acquire().await?;
            if self.generic {
                if let Err(e) = conn.execute(GENERIC_PLANS).await {
                    conn.close_on_drop();
                    return Err(e.into());
                }
            }
            self.kept = Some(Kept {
                conn,
                taken_at: now,
                used_at: now,
            });
        }
        let kept = self.kept.as_mut().expect("kept above");
        kept.used_at = now;
        Ok(&mut kept.conn)
    }

    /// Gives the kept connection back to the pool now (which pings it on
    /// the way in), as [`Held::conn`] does with one kept too long: reset
    /// first if this worker keeps generic plans, or closed if that fails.
    pub async fn give_back(&mut self) {
        let Some(mut kept) = self.kept.take() else {
            return;
        };
        if self.generic && kept.conn.execute(ANY_PLANS).await.is_err() {
            kept.conn.close_on_drop();
        }
    }

    /// The batch on the kept connection failed: the connection is closed
    /// (never given back: a transaction may still be open on it).
    pub fn failed(&mut self) {
        if let Some(mut kept) = self.kept.take() {
            kept.conn.close_on_drop();
        }
    }

    /// A batch's outcome, passed on: a failure first closes the connection
    /// ([`Held::failed`]).
    pub fn outcome<T>(&mut self, result: Result<T>) -> Result<T> {
        if result.is_err() {
            self.failed();
        }
        result
    }
}

impl Drop for Held {
    /// A session set to keep generic plans is closed rather than given
    /// back as it is (no reset can be sent from here).
    fn drop(&mut self) {
        if let (true, Some(kept)) = (self.generic, self.kept.as_mut()) {
            kept.conn.close_on_drop();
        }
    }
}

/// Sets a session to keep its prepared statements' generic plans.
const GENERIC_PLANS: &str = "SET plan_cache_mode = force_generic_plan";

/// Sets it back to Postgres's choice at every run.
const ANY_PLANS: &str = "RESET plan_cache_mode";

/// How long a connection kept across `gap` may sit unused: `gap`, but
/// never less than [`IDLE_FOR`] (a relay alone in its process polls 50 ms
/// apart: asked for 100 ms, it must not keep less than any other worker)
/// nor past [`HOLD_FOR`].
fn idle_across(gap: Duration) -> Duration {
    gap.clamp(IDLE_FOR, HOLD_FOR)
}

/// Whether a connection taken at `taken_at` and last used at `used_at` may
/// still be used at `now` without going back to the pool, when it may sit
/// unused `idle_for`.
fn keep(taken_at: Instant, used_at: Instant, now: Instant, idle_for: Duration) -> bool {
    now.saturating_duration_since(used_at) < idle_for
        && now.saturating_duration_since(taken_at) < HOLD_FOR
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_kept_while_used_often_and_for_a_second_at_most() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let keep = |taken, used, now| keep(taken, used, now, IDLE_FOR);
        assert!(keep(t, t, t));
        assert!(keep(t, t, t + ms(5)), "the next batch of a steady rate");
        assert!(keep(t, t + ms(900), t + ms(999)));
        assert!(!keep(t, t, t + IDLE_FOR), "idle: back to the pool");
        assert!(
            !keep(t, t + ms(995), t + HOLD_FOR),
            "busy, but held a second: taken again (a failover moves it)"
        );
    }

    /// A worker kept across longer gaps (the relay's idle polls, 250 ms
    /// apart) keeps its connection over them, still for a second at most.
    #[test]
    fn a_connection_kept_across_a_pace_outlives_its_gaps_but_not_a_second() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let relay = idle_across(ms(300));
        assert!(keep(t, t, t + ms(260), relay), "across a poll's gap");
        assert!(!keep(t, t, t + ms(260), IDLE_FOR), "not by default");
        assert!(!keep(t, t, t + ms(300), relay));
        assert!(
            !keep(t, t + ms(900), t + HOLD_FOR, relay),
            "a second at most"
        );
        assert_eq!(idle_across(ms(5_000)), HOLD_FOR, "never past a second");
        assert_eq!(
            idle_across(ms(100)),
            IDLE_FOR,
            "never less than the default"
        );
    }
}
