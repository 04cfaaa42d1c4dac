//! The dispatch and retry roles: jobs from `{prefix}.deliveries` (dispatch)
//! and the delay tiers `{prefix}.retry.*` (retry) become signed webhook
//! attempts.
//!
//! A job is only a pointer. For each one, once it is due, the dispatcher
//! claims the delivery in Postgres (state, attempt number, lease, and the
//! lane check for ordered subscriptions); a stale, duplicate, parked or
//! inactive job finds nothing and is dropped. A claimed delivery is signed
//! with the subscription's live keys and sent; the outcome becomes a
//! decision (the domain's retry policy) recorded in one transaction with
//! whatever must be sent next (retry job, released lane, DLQ record). A
//! process that dies mid-attempt leaves a lease the sweeper expires.

mod attempt;
mod cache;
mod chain;
mod consume;
mod freeing;
mod hot;
mod keyed;
mod ladders;
mod observe;
mod recorder;
mod step;
mod unordered;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use motor_destinations::Destinations;
use motor_domain::{
    delivery::{DeliveryId, DeliveryJob, RetryPolicy},
    seal::SealingKey,
    subscription::SubscriptionId,
};
use motor_metrics::Metrics;
use motor_store::{
    deliveries::{self, AfterCommit, Claim, Claimed, Handed, Skip, Taking},
    Pool,
};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

pub use self::consume::{run, DispatchConfig, Source};
pub use self::ladders::{Ladders, MotorStandIn};
pub use self::observe::ATTEMPT_SPAN_TARGET;
use self::{
    chain::Chained,
    recorder::Recorder,
    unordered::{Busy, Unordered},
};
use crate::{relay::RelayWake, Result};

/// Time a claim's lease adds to the attempt's timeout for recording the
/// outcome. A process that dies mid-attempt holds its delivery this much
/// longer than the timeout, then the sweeper hands it on.
pub const LEASE_MARGIN: Duration = Duration::from_secs(5);

/// Concurrent attempts per unordered subscription in one process.
pub const UNORDERED_PER_SUBSCRIPTION: usize = 8;

/// A claim that finds its job's own due time (to within this: Postgres
/// keeps microseconds) not yet reached by Postgres's clock waits for it
/// and claims again, up to [`EARLY_CLAIMS`] times and for at most
/// [`EARLY_MAX`] each; a job for an earlier due time is stale (the
/// delivery was deferred, and its new job will come) and is dropped.
const EARLY_MATCH: chrono::TimeDelta = chrono::TimeDelta::milliseconds(1);
const EARLY_CLAIMS: usize = 3;
const EARLY_MAX: Duration = Duration::from_secs(1);

/// A request slot of an unordered subscription (none for an ordered one),
/// and whether the job waited for it.
pub(super) type Slot = (Option<OwnedSemaphorePermit>, bool);

/// Where a chain runs: in a consumer's job (bounded: `step::choices::past_budget`)
/// or in a task of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runs {
    InJob,
    Detached,
    /// In a task of its own, from an unordered subscription's delivery
    /// claimed in a commit's fan-out: that attempt only, claiming none
    /// ahead (the chains of the subscription's handed jobs do; more chains
    /// claiming ahead beside theirs made their tasks end and claim each
    /// next job alone: a closed loop delivered 10-15 % less).
    FanOut,
}

/// Everything one attempt needs; shared by the consumer's tasks.
pub struct Dispatcher {
    pool: Pool,
    sealing: Arc<SealingKey>,
    destinations: Destinations,
    /// The retry ladders (`motor@1` is the operator's policy).
    ladders: Ladders,
    metrics: Arc<Metrics>,
    /// Slots and chains of unordered subscriptions.
    unordered: Mutex<HashMap<SubscriptionId, Arc<Unordered>>>,
    /// Those of them with chains running here, kept by their chains.
    busy: Busy,
    /// Keys in flight of `clave`-ordered subscriptions.
    keys: keyed::KeySlots,
    cache: cache::AttemptCache,
    /// Ordered lanes a chain of this process runs, and the parked first
    /// attempts commits handed to them.
    hot: hot::HotLanes,
    /// Attempts this process claimed through a head's finish, whose own
    /// jobs are still to come.
    chained: Mutex<Chained>,
    /// The lease of the last claim, in milliseconds (for claims made in a
    /// commit's fan-out, which cannot wait for the settings).
    last_lease_ms: AtomicU64,
    /// Group commit of delivered attempts.
    recorder: Recorder,
    /// Group commit of the looks for freed lanes.
    freeing: freeing::Freeing,
    /// The relay of this process, woken after a record that may have
    /// written outbox records (a retry, a released lane, a DLQ record).
    relay: Option<Arc<RelayWake>>,
    /// Chains running in tasks of their own (first attempts a commit
    /// handed over, lanes past a job's budget), drained at shutdown.
    detached: TaskTracker,
    /// Set at shutdown: chains stop claiming their lane's next delivery and
    /// release it through its job instead.
    stopping: CancellationToken,
}

impl Dispatcher {
    pub fn new(
        pool: Pool,
        sealing: Arc<SealingKey>,
        policy: RetryPolicy,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            pool: pool.clone(),
            sealing,
            destinations: Destinations::new(),
            ladders: Ladders::new(policy),
            metrics: metrics.clone(),
            unordered: Mutex::default(),
            busy: Busy::default(),
            keys: keyed::KeySlots::default(),
            cache: cache::AttemptCache::new(metrics),
            hot: hot::HotLanes::default(),
            chained: Mutex::default(),
            last_lease_ms: AtomicU64::new(
                (Duration::from_secs(60) + LEASE_MARGIN).as_millis() as u64
            ),
            recorder: Recorder::start(pool.clone(), recorder::LINGER),
            freeing: freeing::Freeing::start(pool),
            relay: None,
            detached: TaskTracker::new(),
            stopping: CancellationToken::new(),
        }
    }

    /// Sends through `destinations` instead of senders of its own that ask
    /// the system's resolver (a test passes senders with its resolver).
    pub fn sending_with(mut self, destinations: Destinations) -> Self {
        self.destinations = destinations;
        self
    }

    /// Decides with `ladders` (a test's stand-ins for built-in ladders).
    pub fn deciding_with(mut self, ladders: Ladders) -> Self {
        self.ladders = ladders;
        self
    }

    /// Lets a delivered attempt's record that nothing is known to wait
    /// behind wait up to `linger` for others to share its commit (none:
    /// `Duration::ZERO`); [`recorder::LINGER`] by default.
    pub fn lingering(mut self, linger: Duration) -> Self {
        self.recorder = Recorder::start(self.pool.clone(), linger);
        self
    }

    /// Wakes `relay` (the relay role of this process) after each record
    /// that may have written outbox records.
    pub fn waking_relay(mut self, relay: Option<Arc<RelayWake>>) -> Self {
        self.relay = relay;
        self
    }

    /// A slot of an unordered subscription (none for ordered ones: their
    /// lanes run one delivery at a time). Known before the claim, so even
    /// the first jobs of a subscription respect the bound.
    async fn slot(&self, subscription: SubscriptionId) -> Result<Slot> {
        if self.cache.ordered(&self.pool, subscription).await? {
            return Ok((None, false));
        }
        Ok(self.unordered(subscription).slot_or_wait().await)
    }

    fn unordered(&self, subscription: SubscriptionId) -> Arc<Unordered> {
        self.unordered
            .lock()
            .expect("not poisoned")
            .entry(subscription)
            .or_insert_with(|| Arc::new(Unordered::new(subscription, self.busy.clone())))
            .clone()
    }

    /// Handles one job: claim, send, record. Errors (Postgres away) drop
    /// the job; the lease or the sweeper brings the delivery back.
    pub async fn handle(self: &Arc<Self>, job: DeliveryJob) {
        if let Err(e) = self.try_handle(&job).await {
            tracing::warn!(error = %e, delivery = %job.delivery_id, "attempt not completed; the sweeper will retry it");
        }
    }

    async fn try_handle(self: &Arc<Self>, job: &DeliveryJob) -> Result<()> {
        if self
            .chained
            .lock()
            .expect("not poisoned")
            .take((job.delivery_id, job.attempt))
        {
            return Ok(());
        }
        self.claim_and_chain(job, Runs::InJob).await
    }

    async fn claim_and_chain(self: &Arc<Self>, job: &DeliveryJob, runs: Runs) -> Result<()> {
        // Unordered subscriptions first take a slot, before the claim, so a
        // lease never runs while waiting for one.
        let slot = self.slot(job.subscription_id).await?;
        self.claim_in_slot(job, slot, runs).await
    }

    /// [`Self::claim_and_chain`] once the job holds its `slot` (none for an
    /// ordered subscription).
    async fn claim_in_slot(
        self: &Arc<Self>,
        job: &DeliveryJob,
        (slot, waited): Slot,
        runs: Runs,
    ) -> Result<()> {
        let lease = self.lease().await?;
        let mut early = 0;
        let claimed = loop {
            match deliveries::claim(&self.pool, job.delivery_id, job.attempt, lease).await? {
                Claim::Claimed(claimed) => break claimed,
                // The job's own due time, not yet reached by Postgres's
                // clock: the timer fired a little early or the clocks
                // disagree. Dropped, it would wait for the sweeper.
                Claim::Skipped(Skip::NotDue { due, wait })
                    if due <= job.due_at + EARLY_MATCH && early < EARLY_CLAIMS =>
                {
                    if wait > EARLY_MAX {
                        tracing::warn!(delivery = %job.delivery_id, wait_ms = wait.as_millis() as u64, "Postgres's clock is behind this host's by more than a second; the sweeper will send this delivery");
                        return Ok(());
                    }
                    early += 1;
                    tokio::time::sleep(wait + EARLY_MATCH.to_std().unwrap_or_default()).await;
                }
                Claim::Parked | Claim::Skipped(_) => return Ok(()),
            }
        };
        self.chain(*claimed, (slot, waited), runs).await
    }

    /// The claim's lease: the attempt's timeout and a margin to record it.
    async fn lease(&self) -> Result<Duration> {
        let settings = self.cache.settings(&self.pool).await?;
        let lease = Duration::from_secs(settings.timeout_seconds.max(1) as u64) + LEASE_MARGIN;
        self.last_lease_ms
            .store(lease.as_millis() as u64, Ordering::Relaxed);
        Ok(lease)
    }

    /// Reads the settings once so claims made in a commit's fan-out get the
    /// right lease from the start (before it, the longest possible one).
    pub async fn warm(&self) {
        if let Err(e) = self.lease().await {
            tracing::warn!(error = %e, "settings not read yet; fan-out claims take the longest lease");
        }
    }

    /// What the listener for changes to what attempts read without a
    /// version (an app, the settings, whether a subscription is ordered)
    /// heard (`motor_store::changes::follow` on
    /// [`motor_store::changes::ATTEMPT_READS`], migration 0032): the
    /// attempt cache trusts them while a connection listens and forgets
    /// them at each change.
    pub fn heard(&self, heard: motor_store::changes::Heard) {
        self.cache.heard(heard);
    }

    /// The lease as of the last claim (the longest possible one before any).
    fn last_lease(&self) -> Duration {
        Duration::from_millis(self.last_lease_ms.load(Ordering::Relaxed))
    }

    /// Takes first attempts a commit in this process handed over: deliveries
    /// claimed in the fan-out are attempted now (their lease is running),
    /// those parked behind a busy lane go to their lane's chain when one
    /// runs in this process (`hot`) and are otherwise claimed if their lane
    /// freed while the commit was in flight, and unordered subscriptions'
    /// deliveries (which have no job) are handled as if their job had come
    /// from Kafka.
    fn take(self: &Arc<Self>, handed: Handed) {
        for claimed in handed.claimed {
            self.detach(claimed);
        }
        let mut parked = Vec::new();
        for p in handed.parked {
            match self
                .hot
                .hand(&(p.subscription_id, p.instance_id, p.lane), p.delivery_id)
            {
                hot::Kept::No => parked.push(p.delivery_id),
                hot::Kept::ForChain => {}
                hot::Kept::BehindRecord => self.recorder.hurry(),
            }
        }
        if !parked.is_empty() {
            let dispatcher = self.clone();
            self.detached
                .spawn(async move { dispatcher.take_freed(&parked).await });
        }
        for job in handed.jobs {
            // Past its tasks, an unordered subscription's first attempts
            // wait for one of them to end (its chains claim ahead meanwhile).
            if let Some(job) = self.unordered(job.subscription_id).hand(job) {
                let dispatcher = self.clone();
                self.detached
                    .spawn(async move { dispatcher.handle_handed(job).await });
            }
        }
    }

    /// Claims those of `parked` whose lane freed while their commit was in
    /// flight, and runs their chains.
    async fn take_freed(self: &Arc<Self>, parked: &[DeliveryId]) {
        for claimed in self.claim_freed(parked).await {
            self.detach(claimed);
        }
    }

    /// Claims those of `parked` whose lane is free. A failure is logged and
    /// claims none: they stay parked, a lost wake-up the sweeper repairs.
    async fn claim_freed(&self, parked: &[DeliveryId]) -> Vec<Claimed> {
        let claimed: Result<Vec<Claimed>> = async {
            let lease = self.lease().await?;
            self.freeing.claim(&self.pool, parked, lease).await
        }
        .await;
        claimed.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "parked first attempts not checked; the sweeper sends those whose lane is free");
            Vec::new()
        })
    }

    /// Runs the chain from a delivery claimed after a commit (by its
    /// fan-out, or freed in its lane) in a task of its own.
    fn detach(self: &Arc<Self>, claimed: Claimed) {
        let (lane, busy) = self.enter(&claimed);
        let runs = if claimed.ordered {
            Runs::Detached
        } else {
            Runs::FanOut
        };
        self.detach_in(claimed, lane, busy, runs);
    }

    /// [`Self::detach`] for a chain that already entered its lane (`hot`);
    /// `busy` when its lane is (`step::Chain::busy`).
    fn detach_in(
        self: &Arc<Self>,
        claimed: Claimed,
        lane: Option<hot::LaneKey>,
        busy: bool,
        runs: Runs,
    ) {
        let dispatcher = self.clone();
        let delivery = claimed.delivery_id;
        self.detached.spawn(async move {
            if let Err(e) = dispatcher
                .chain_in(claimed, None, runs, lane, busy)
                .await
            {
                tracing::warn!(error = %e, %delivery, "attempt not completed; the sweeper will retry it");
            }
        });
    }

    /// Shutdown: chains end after their current attempt (releasing their
    /// lane's next delivery through its job), and this waits for them.
    pub async fn drain(&self) {
        self.stopping.cancel();
        self.detached.close();
        self.detached.wait().await;
    }

    /// [`Self::handle`] for a job handed over by a commit, then for each
    /// handed job of its subscription that waited for a task.
    async fn handle_handed(self: &Arc<Self>, mut job: DeliveryJob) {
        let unordered = self.unordered(job.subscription_id);
        loop {
            // A chain may claim the job's delivery while it waits for its
            // slot: then it makes no claim of its own (which would fail).
            let slot = unordered.slot_or_wait().await;
            if unordered.take_handed(job.delivery_id) {
                if let Err(e) = self.claim_in_slot(&job, slot, Runs::Detached).await {
                    tracing::warn!(error = %e, delivery = %job.delivery_id, "attempt not completed; the sweeper will retry it");
                }
            }
            match unordered.task_ended(self.stopping.is_cancelled()) {
                Some(next) => job = next,
                None => break,
            }
        }
    }
}

/// The roles of this process that a commit in it hands work to: the
/// dispatcher (first attempts straight after the commit) and the relay
/// (woken at once instead of at its next poll). `motor serve` makes one
/// when the API shares the process with either.
#[derive(Clone, Default)]
pub struct LocalRoles {
    pub dispatcher: Option<Arc<Dispatcher>>,
    pub relay: Option<Arc<RelayWake>>,
}

impl AfterCommit for LocalRoles {
    fn taking(&self) -> Option<Taking> {
        self.dispatcher.as_ref().map(|d| Taking {
            lease: d.last_lease(),
            room: Busy::ROOM,
            busy: d.busy.rooms(),
        })
    }

    fn committed(&self, handed: Handed) {
        if let Some(relay) = &self.relay {
            if handed.events_only {
                relay.events();
            } else {
                relay.awaited();
            }
        }
        if let Some(dispatcher) = &self.dispatcher {
            if !handed.is_empty() {
                dispatcher.take(handed);
            }
        }
    }
}
