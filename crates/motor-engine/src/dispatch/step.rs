//! A chain and its steps. [`Dispatcher::chain`] attempts a claimed delivery,
//! then the next ones its records claim, as a loop over four steps:
//!
//! - **gate**: an unordered subscription's slot, the lease renewed after a
//!   long wait for it, a token of the subscription's rate;
//! - **attempt**: the request itself (`attempt::make`);
//! - **settle**: the outcome becomes a decision (the domain's policy),
//!   recorded with what follows (the group commit for delivered attempts),
//!   and a `Retry-After` holds the subscription;
//! - **follow**: the next delivery the record claimed, in this task or, past
//!   a job's budget, in a task of its own.
//!
//! The choices inside the steps are plain functions of what they are given
//! (time passed in), in `choices` with their tests; the steps that touch
//! Postgres are covered by the system tests (dispatch::, deliveries::,
//! health::).

mod choices;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use motor_domain::{
    contract::{LadderId, MOTOR_V1},
    delivery::{Decision, Jitter, Outcome},
    subscription::SubscriptionId,
};
use motor_store::deliveries::{self, Attempt, Claimed, Next, Recorded};
use tokio::sync::OwnedSemaphorePermit;
use tracing::Instrument;

pub(super) use self::choices::renew_due;
use self::choices::{claims_next, hold_for, hold_until, lingers, past_budget};
use super::{
    attempt,
    hot::LaneKey,
    observe,
    unordered::{Running, Unordered},
    Dispatcher, Runs, Slot,
};
use crate::Result;

/// What a chain carries from one attempt to the next.
struct Chain {
    /// An unordered subscription's request slot, or a key's lane's slot of
    /// its subscription's keys in flight, held from the gate until the
    /// request is answered (none for other lanes).
    slot: Option<OwnedSemaphorePermit>,
    unordered: Option<Arc<Unordered>>,
    /// Counts this chain among its unordered subscription's while it lives.
    running: Option<Running>,
    runs: Runs,
    started: Instant,
    /// When the delivery in hand was claimed: a claim reaches its chain
    /// right after its statement.
    claimed_at: Instant,
    /// Attempts made so far.
    attempts: usize,
    /// The ordered lane this chain entered (`Dispatcher::hot`), left when
    /// it ends or handed on with the lane past a job's budget.
    lane: Option<LaneKey>,
    /// The lane is busy — the delivery in hand was claimed by the record
    /// before it (a backlog), or the lane's last chain here ended moments
    /// ago (`hot::RECENT`), or it waited for a request slot of its
    /// unordered subscription (a backlog too): its records do not linger
    /// (`recorder`).
    busy: bool,
}

/// A 429 or 503 with `Retry-After` holds the whole subscription: what to
/// hold, taken before the record (which may keep the claim).
struct Hold {
    subscription: SubscriptionId,
    delivery: motor_domain::delivery::DeliveryId,
    attempt: u32,
    wait: Duration,
}

impl Dispatcher {
    /// Attempts a claimed delivery, then — while the next delivery (of its
    /// lane, or of its unordered subscription) can be claimed in the same
    /// record — the next ones. An unordered subscription's `slot` is given
    /// back as soon as the request is answered and taken again before the
    /// next attempt: the bound counts requests in flight, not claims or
    /// records. One that waited for its slot is a backlog's (`Chain::busy`).
    pub(super) async fn chain(
        self: &Arc<Self>,
        claimed: Claimed,
        (slot, waited): Slot,
        runs: Runs,
    ) -> Result<()> {
        let (lane, busy) = self.enter(&claimed);
        self.chain_in(claimed, slot, runs, lane, busy || waited)
            .await
    }

    /// An ordered lane's chain enters it in [`Self::hot`]: from then on
    /// the lane's parked first attempts handed by this process's commits
    /// are the chain's to see. With whether the lane is busy (its last
    /// chain here ended moments ago).
    pub(super) fn enter(&self, claimed: &Claimed) -> (Option<LaneKey>, bool) {
        if !claimed.ordered {
            return (None, false);
        }
        let lane = (
            claimed.subscription_id,
            claimed.instance_id,
            claimed.lane.clone(),
        );
        let busy = self.hot.enter(lane.clone(), Instant::now());
        (Some(lane), busy)
    }

    /// [`Self::chain`] once its lane was entered (`lane`); leaves it at the
    /// end, checking what was handed to it and not seen by a record (its
    /// finish is durable by then: `claim_freed` finds the lane free).
    /// `busy`: its lane is (`Chain::busy`).
    pub(super) async fn chain_in(
        self: &Arc<Self>,
        claimed: Claimed,
        slot: Option<OwnedSemaphorePermit>,
        runs: Runs,
        lane: Option<LaneKey>,
        busy: bool,
    ) -> Result<()> {
        let unordered = (!claimed.ordered).then(|| self.unordered(claimed.subscription_id));
        let mut chain = Chain {
            slot,
            running: unordered.as_ref().map(|u| u.running()),
            unordered,
            runs,
            started: Instant::now(),
            claimed_at: Instant::now(),
            attempts: 0,
            lane,
            busy,
        };
        let ended = self.run(&mut chain, Box::new(claimed)).await;
        if let Some(lane) = chain.lane.take() {
            let left = self.hot.leave(&lane, Instant::now());
            if !left.is_empty() {
                self.take_freed(&left).await;
            }
        }
        ended
    }

    /// The loop of [`Self::chain`]'s steps.
    async fn run(self: &Arc<Self>, chain: &mut Chain, mut claimed: Box<Claimed>) -> Result<()> {
        loop {
            if !self.gate(chain, &mut claimed).await? {
                return Ok(());
            }
            let (attempt, outcome, span) = self.attempt(chain, &mut claimed).await?;
            // What commits handed the lane so far: this record's snapshot
            // sees them. Given back unless it claimed a next (then the
            // chain goes on and its later records see them too).
            let seen = match &chain.lane {
                Some(lane) => self.hot.take(lane),
                None => Vec::new(),
            };
            let chains = chain.unordered.as_ref().map(|u| u.chains());
            let patient = lingers(chain.lane.is_some(), chains, chain.busy, seen.len());
            let recorded = self
                .settle(chain, claimed, attempt, outcome, span, patient)
                .await;
            if let Some(lane) = &chain.lane {
                let claimed_next = matches!(&recorded, Ok(Recorded::Done { next: Some(_), .. }));
                self.hot
                    .recorded(lane, if claimed_next { Vec::new() } else { seen });
            }
            let recorded = recorded?;
            let next = match self.follow(chain, recorded) {
                Some(next) => Some(next),
                None => self.freed(chain).await,
            };
            match next {
                Some(next) => claimed = next,
                None => return Ok(()),
            }
        }
    }

    /// An ordered chain whose record claimed no next: the first attempts
    /// commits handed its lane that the record did not see, claimed if the
    /// lane is free (`claim_freed`), and the chain goes on with the one
    /// claimed. The chain keeps the lane meanwhile, so what commits hand
    /// it during the claim waits for the chain too, where a lane without
    /// a chain has each commit check its own, often finding the lane busy
    /// (the TLS shape, 40,000 events: 4,898 checks, 2,540 of which claimed
    /// nothing; with the lane kept, 3,829 and 1,302; docs/BENCHMARKS.md,
    /// 2026-12-06 05:39).
    ///
    /// `None` when nothing was handed or nothing could be claimed: the
    /// chain ends, and its lane's end checks what came since (`chain_in`).
    async fn freed(self: &Arc<Self>, chain: &mut Chain) -> Option<Box<Claimed>> {
        let lane = chain.lane.as_ref()?;
        let handed = self.hot.handed(lane);
        if handed.is_empty() {
            return None;
        }
        // One at most: the lowest of the lane's, when it is free (any
        // other would be another lane's, and runs in a task of its own).
        let mut claimed = self.claim_freed(&handed).await.into_iter();
        let next = claimed.next();
        for other in claimed {
            self.detach(other);
        }
        self.go_on(chain, Box::new(next?))
    }

    /// Gate: whether the claimed delivery may be attempted now. Takes its
    /// unordered subscription's slot, renews a lease that waited long for
    /// it, and takes a token of the subscription's rate. `false`: the claim
    /// was lost, or went back to wait for a token; the chain ends.
    async fn gate(&self, chain: &mut Chain, claimed: &mut Claimed) -> Result<bool> {
        if let (None, Some(unordered)) = (&chain.slot, &chain.unordered) {
            let (slot, waited) = unordered.slot_or_wait().await;
            chain.slot = slot;
            chain.busy |= waited;
        }
        // A key's lane (`clave` ordering) takes one of its subscription's
        // slots for keys in flight; other lanes take none.
        if chain.slot.is_none() && claimed.lane.key().is_some() {
            let bound = self.cache.settings(&self.pool).await?.keys_in_flight;
            let bound = usize::try_from(bound).unwrap_or(1);
            chain.slot = Some(self.keys.slot(claimed.subscription_id, bound).await);
        }
        Ok(self.keep_lease(&mut chain.claimed_at, claimed).await?
            && self.take_rate(claimed).await?)
    }

    /// A claim that waited long for its slot might not see its attempt
    /// recorded before its lease ends, and another process could then send
    /// it too: it renews the lease first (and counts from the renewal);
    /// `false` when it was lost meanwhile (not attempted).
    async fn keep_lease(&self, claimed_at: &mut Instant, claimed: &mut Claimed) -> Result<bool> {
        if !renew_due(*claimed_at, Instant::now()) {
            return Ok(true);
        }
        let lease = self.lease().await?;
        match deliveries::renew(&self.pool, claimed, lease).await? {
            Some(until) => {
                claimed.lease_until = until;
                *claimed_at = Instant::now();
                Ok(true)
            }
            None => {
                tracing::debug!(delivery = %claimed.delivery_id, "claim lost while waiting for a slot; not attempted");
                Ok(false)
            }
        }
    }

    /// A subscription with `max_por_segundo` needs a token; without one the
    /// claim goes back until one will be there (`false`).
    async fn take_rate(&self, claimed: &Claimed) -> Result<bool> {
        let Some(rate) = claimed.max_per_second else {
            return Ok(true);
        };
        let Some(wait) =
            motor_store::throttle::take_token(&self.pool, claimed.subscription_id, rate).await?
        else {
            return Ok(true);
        };
        // Its new job must not be taken for the chain's copy.
        self.chained
            .lock()
            .expect("not poisoned")
            .take((claimed.delivery_id, claimed.attempt));
        motor_store::throttle::give_back(&self.pool, claimed.delivery_id, claimed.attempt, wait)
            .await?;
        Ok(false)
    }

    /// Attempt: the request, in its own span; the slot is given back as
    /// soon as it is answered (or failed).
    async fn attempt(
        &self,
        chain: &mut Chain,
        claimed: &mut Claimed,
    ) -> Result<(Attempt, Outcome, tracing::Span)> {
        chain.attempts += 1;
        let span = observe::span(claimed);
        let made = attempt::make(self, claimed, chain.claimed_at)
            .instrument(span.clone())
            .await;
        drop(chain.slot.take());
        let (attempt, outcome) = made?;
        Ok((attempt, outcome, span))
    }

    /// Settle: decide, record with what follows (claiming the lane's next
    /// delivery unless the chain should end), count, and hold the
    /// subscription after a `Retry-After`. A `patient` delivered record
    /// may linger for others to share its commit.
    async fn settle(
        &self,
        chain: &mut Chain,
        claimed: Box<Claimed>,
        attempt: Attempt,
        outcome: Outcome,
        span: tracing::Span,
        patient: bool,
    ) -> Result<Recorded> {
        let hold = hold_for(&outcome).map(|wait| Hold {
            subscription: claimed.subscription_id,
            delivery: claimed.delivery_id,
            attempt: claimed.attempt,
            wait,
        });
        let decision = self.decide(&claimed, outcome).await?;
        let observed = observe::Observation::of(span, &claimed, &attempt, &decision);
        // A head that ends its attempt claims the next delivery of its lane
        // in the same transaction and this task makes that attempt at once,
        // so a lane with a backlog moves at the receiver's pace. At shutdown
        // the next one is released through its job.
        // A fan-out's chain claims none ahead (`Runs::FanOut`).
        let next = if chain.runs != Runs::FanOut
            && claims_next(self.stopping.is_cancelled(), chain.running.as_mut())
        {
            Next::Claim(self.lease().await?)
        } else {
            Next::Release
        };
        let recorded = self
            .record(claimed, attempt, &decision, next, patient)
            .await?;
        self.metrics.delivery_attempts.inc();
        if let (Some(hold), Decision::Retry { .. }) = (hold, &decision) {
            motor_store::throttle::hold(
                &self.pool,
                hold.subscription,
                hold.delivery,
                hold.attempt,
                hold_until(chrono::Utc::now(), hold.wait),
            )
            .await?;
        }
        observed.count(&self.metrics);
        Ok(recorded)
    }

    /// The outcome as a decision. A retryable failure asks the delivery's
    /// ladder: the one it started with, or — at its first failure — its
    /// subscription's contract's, which its row keeps from then on. Other
    /// outcomes mean the same under every ladder.
    async fn decide(&self, claimed: &Claimed, outcome: Outcome) -> Result<Decision> {
        let ladder = match outcome {
            Outcome::Retry { .. } => self.ladder_of(claimed).await?,
            _ => MOTOR_V1.id(),
        };
        let draw = Jitter::random(&mut rand::thread_rng());
        Ok(self.ladders.decide(
            ladder,
            claimed.created_at,
            chrono::Utc::now(),
            claimed.attempt,
            outcome,
            draw,
        ))
    }

    /// The ladder a delivery keeps (written on its row at its first failure).
    async fn ladder_of(&self, claimed: &Claimed) -> Result<LadderId> {
        let contract = self
            .cache
            .signing(
                &self.pool,
                claimed.subscription_id,
                claimed.subscription_version,
            )
            .await?
            .contract;
        let wanted = contract.spec().ladder.id();
        let kept = deliveries::keep_ladder(&self.pool, claimed.delivery_id, wanted).await?;
        Ok(kept.parse().unwrap_or_else(|e| {
            tracing::error!(error = %e, delivery = %claimed.delivery_id, "a delivery's stored ladder is unknown to this build; using its contract's");
            wanted
        }))
    }

    /// Records the attempt and its decision: a delivered one through the
    /// group commit, any other in a transaction of its own. The relay is
    /// woken when the record may have written outbox records (a released
    /// lane, a retry, a DLQ record).
    async fn record(
        &self,
        claimed: Box<Claimed>,
        attempt: Attempt,
        decision: &Decision,
        next: Next,
        patient: bool,
    ) -> Result<Recorded> {
        if let Decision::Delivered = decision {
            let recorded = self
                .recorder
                .delivered(claimed, attempt, next, patient)
                .await?;
            if let (
                Recorded::Done {
                    released: Some(_), ..
                },
                Some(relay),
            ) = (&recorded, &self.relay)
            {
                relay.awaited();
            }
            return Ok(recorded);
        }
        let recorded = deliveries::record_attempt_parking(
            &self.pool,
            &claimed,
            &attempt,
            decision,
            next,
            self.ladders.park_after(),
        )
        .await?;
        if let Some(relay) = &self.relay {
            relay.awaited();
        }
        Ok(recorded)
    }

    /// Follow: the next delivery the record claimed, to attempt in this
    /// task (`Some`), or none. Bounded in a job, so a job does not hold its
    /// consumer's offsets (or a shutdown) for long: past the bound the lane
    /// goes on in a task of its own.
    fn follow(self: &Arc<Self>, chain: &mut Chain, recorded: Recorded) -> Option<Box<Claimed>> {
        let Recorded::Done {
            next: Some(next), ..
        } = recorded
        else {
            return None;
        };
        self.chained
            .lock()
            .expect("not poisoned")
            .remember((next.delivery_id, next.attempt));
        if let Some(unordered) = &chain.unordered {
            unordered.claimed(next.delivery_id);
        }
        self.go_on(chain, next)
    }

    /// The chain goes on with `next`: in this task, or past a job's budget
    /// in a task of its own, which takes the lane with it.
    fn go_on(self: &Arc<Self>, chain: &mut Chain, next: Box<Claimed>) -> Option<Box<Claimed>> {
        if past_budget(chain.runs, chain.attempts, chain.started.elapsed()) {
            // The lane goes on in that task, which leaves it at its end.
            let lane = chain.lane.take();
            self.detach_in(*next, lane, true, Runs::Detached);
            return None;
        }
        chain.claimed_at = Instant::now();
        chain.busy = true;
        Some(next)
    }
}
