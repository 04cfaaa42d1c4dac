//! An unordered subscription in one process: the slots that bound its
//! requests in flight, the count of its chains that claim ahead (and the
//! room that leaves for deliveries claimed in a commit's fan-out), and the
//! first attempts handed over by commits that wait for a task.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
};

use motor_domain::{
    delivery::{DeliveryId, DeliveryJob},
    subscription::SubscriptionId,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::UNORDERED_PER_SUBSCRIPTION;

/// Chains of one unordered subscription in one process that claim their
/// next delivery when they record one (each then holds one claimed delivery
/// until one of the [`UNORDERED_PER_SUBSCRIPTION`] slots is free). More
/// chains than slots keep the slots busy while records commit; a chain
/// beyond this many ends after its attempt, so a burst of jobs never turns
/// into an unbounded number of claimed deliveries waiting in memory.
pub(super) const UNORDERED_CHAINS: usize = 8 * UNORDERED_PER_SUBSCRIPTION;

/// Tasks that take first attempts handed over by commits, per unordered
/// subscription and process: as many as chains may claim ahead. A chain
/// spends most of its cycle waiting for its record's group commit (a
/// request to a receiver on loopback took 0.3–0.7 ms, a cycle 5–20 ms),
/// so the slots stay busy only with several chains per slot: with twice
/// the slots (16 tasks) one subscription delivered 2,791/s with its
/// deliveries queued 2.4 s behind the POSTs, with 64 3,558–3,696/s and
/// 60 ms (docs/BENCHMARKS.md, 2026-12-01 19:10). More tasks than chains
/// only claim one delivery each and leave (1,843/s with 128). Past it, a
/// handed first attempt waits in [`HandedJobs`] instead of in a task of
/// its own.
const HANDED_TASKS: usize = UNORDERED_CHAINS;

/// One unordered subscription in this process: its request slots, its
/// running chains and the first attempts waiting for a task.
pub(super) struct Unordered {
    slots: Arc<Semaphore>,
    chains: Arc<Chains>,
    handed: Mutex<HandedJobs>,
}

/// The unordered subscriptions with chains running in this process, each
/// with the room it has left for deliveries a commit's fan-out claims for
/// it (`motor_store::deliveries::Taking`): [`UNORDERED_CHAINS`] less its
/// chains, and none while handed jobs wait for a task (a burst: its
/// chains claim those ahead in their records, a batch at a time, and a
/// delivery claimed at insert would run one more chain beside theirs). A
/// delivery claimed so runs a chain of its own that claims none ahead
/// (`Runs::FanOut`), waiting for a request slot with its lease running.
/// Measured on a 2-core EPYC, 2026-12-05: at a steady 2,000 events/s to
/// one unordered subscription, Motor, Postgres and the broker spent 430-473
/// µs an event against 737-749 (one claim statement each after the
/// commit), p99 4.6-5.4 ms against 36-53; a room of 8 (the free request
/// slots) claimed too few at 2,000/s to matter; a room without the
/// waiting jobs' rule, or chains that claim ahead beside the tasks', cost
/// a closed loop 10-15 % of its deliveries.
#[derive(Clone, Default)]
pub(super) struct Busy(Arc<Mutex<HashMap<SubscriptionId, Arc<Chains>>>>);

impl Busy {
    /// The room of a subscription with no chain running here.
    pub(super) const ROOM: u32 = UNORDERED_CHAINS as u32;

    pub(super) fn rooms(&self) -> Vec<(SubscriptionId, u32)> {
        self.0
            .lock()
            .expect("not poisoned")
            .iter()
            .map(|(id, chains)| {
                let running = chains.running.load(Ordering::Relaxed);
                let room = if chains.waiting.load(Ordering::Relaxed) > 0 {
                    0
                } else {
                    UNORDERED_CHAINS.saturating_sub(running)
                };
                (*id, u32::try_from(room).unwrap_or(0))
            })
            .collect()
    }

    /// `chains` started or stopped running: listed or not as its count is
    /// now, read under the lock (so of two changes that race, the later to
    /// take the lock decides, by the count they both see).
    fn sync(&self, chains: &Arc<Chains>) {
        let mut busy = self.0.lock().expect("not poisoned");
        if chains.running.load(Ordering::Relaxed) > 0 {
            busy.insert(chains.subscription, chains.clone());
        } else {
            busy.remove(&chains.subscription);
        }
    }
}

/// The chains of one unordered subscription running in this process.
pub(super) struct Chains {
    subscription: SubscriptionId,
    running: AtomicUsize,
    /// Handed jobs waiting for a task ([`HandedJobs::queue`]).
    waiting: AtomicUsize,
    busy: Busy,
}

impl Chains {
    fn add(self: &Arc<Self>) {
        if self.running.fetch_add(1, Ordering::Relaxed) == 0 {
            self.busy.sync(self);
        }
    }

    fn remove(self: &Arc<Self>) {
        if self.running.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.busy.sync(self);
        }
    }
}

/// First attempts a commit handed over, and the tasks that take them. A
/// task claims its delivery and runs the chain from it, whose records
/// claim the subscription's oldest due deliveries in the group commit; so
/// with [`HANDED_TASKS`] running, the rest wait here rather than each in a
/// task that would claim it on its own (a statement per delivery, and a
/// failed one when a chain claimed it first). A task that ends takes the
/// next one waiting, under the same lock as the decision to queue, so a
/// first attempt never waits here with no task left to take it. One that
/// a chain claimed is forgotten here, and not claimed by the task that
/// holds it while waiting for a request slot ([`Unordered::take_handed`]).
#[derive(Default)]
struct HandedJobs {
    tasks: usize,
    queue: VecDeque<DeliveryJob>,
    /// The deliveries of `queue`, and those tasks hold and have not
    /// claimed yet, that no chain has claimed.
    open: HashSet<DeliveryId>,
}

impl HandedJobs {
    /// `job` if a task may start for it now (counted), else queued.
    fn hand(&mut self, job: DeliveryJob) -> Option<DeliveryJob> {
        if self.tasks < HANDED_TASKS {
            self.tasks += 1;
            self.open.insert(job.delivery_id);
            return Some(job);
        }
        // Chains claim oldest first: claimed ones gather at the front.
        while self
            .queue
            .front()
            .is_some_and(|front| !self.open.contains(&front.delivery_id))
        {
            self.queue.pop_front();
        }
        self.open.insert(job.delivery_id);
        self.queue.push_back(job);
        None
    }

    /// A task ended: the next waiting job for a task in its place, or none
    /// (and one task fewer).
    fn next(&mut self) -> Option<DeliveryJob> {
        while let Some(job) = self.queue.pop_front() {
            if self.open.contains(&job.delivery_id) {
                return Some(job);
            }
        }
        self.tasks -= 1;
        None
    }

    /// Every waiting job is dropped (shutdown: the sweeper sends them).
    fn stop(&mut self) {
        self.queue.clear();
        self.open.clear();
        self.tasks -= 1;
    }
}

impl Unordered {
    /// `subscription`'s, listed in `busy` while its chains run.
    pub(super) fn new(subscription: SubscriptionId, busy: Busy) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(UNORDERED_PER_SUBSCRIPTION)),
            chains: Arc::new(Chains {
                subscription,
                running: AtomicUsize::new(0),
                waiting: AtomicUsize::new(0),
                busy,
            }),
            handed: Mutex::default(),
        }
    }

    /// A slot, and whether it had to wait for one (a backlog).
    pub(super) async fn slot_or_wait(&self) -> (Option<OwnedSemaphorePermit>, bool) {
        match self.slots.clone().try_acquire_owned() {
            Ok(slot) => (Some(slot), false),
            Err(_) => (self.slots.clone().acquire_owned().await.ok(), true),
        }
    }

    /// Its chains running in this process, counted by [`Self::running`].
    pub(super) fn chains(&self) -> usize {
        self.chains.running.load(Ordering::Relaxed)
    }

    /// Counts a chain while the guard lives.
    pub(super) fn running(&self) -> Running {
        self.chains.add();
        Running {
            chains: self.chains.clone(),
            counted: true,
        }
    }

    /// A first attempt a commit handed over: `Some` when a task should take
    /// it now; call [`Self::task_ended`] when that task ends.
    pub(super) fn hand(&self, job: DeliveryJob) -> Option<DeliveryJob> {
        let mut handed = self.handed.lock().expect("not poisoned");
        let task = handed.hand(job);
        self.count_waiting(&handed);
        task
    }

    /// A task of [`Self::hand`] ended: the next waiting job to take in its
    /// place, if any (none when `stopping`: the sweeper sends those).
    pub(super) fn task_ended(&self, stopping: bool) -> Option<DeliveryJob> {
        let mut handed = self.handed.lock().expect("not poisoned");
        let next = if stopping {
            handed.stop();
            None
        } else {
            handed.next()
        };
        self.count_waiting(&handed);
        next
    }

    /// Keeps [`Chains::waiting`] as `handed` (under its lock) has it.
    fn count_waiting(&self, handed: &HandedJobs) {
        self.chains
            .waiting
            .store(handed.queue.len(), Ordering::Relaxed);
    }

    /// A task of [`Self::hand`] got a request slot for `delivery`'s job:
    /// whether to claim it (`false`: a chain claimed it meanwhile). Call it
    /// once for each job a task takes.
    pub(super) fn take_handed(&self, delivery: DeliveryId) -> bool {
        self.handed
            .lock()
            .expect("not poisoned")
            .open
            .remove(&delivery)
    }

    /// A chain claimed `delivery`: its waiting job, if any, is stale.
    pub(super) fn claimed(&self, delivery: DeliveryId) {
        self.handed
            .lock()
            .expect("not poisoned")
            .open
            .remove(&delivery);
    }
}

pub(super) struct Running {
    chains: Arc<Chains>,
    /// Still counted in `chains` (not once it left a crowd).
    counted: bool,
}

impl Running {
    /// More chains run than may claim a next delivery: then this one
    /// stops counting at once (the chain ends after its attempt), so of
    /// many chains deciding together exactly the ones past the bound leave
    /// and the rest go on claiming (all leaving at once stranded the
    /// backlog).
    pub(super) fn leaves_crowded(&mut self) -> bool {
        if !self.counted {
            return true;
        }
        let crowded = self
            .chains
            .running
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n > UNORDERED_CHAINS).then(|| n - 1)
            })
            .is_ok();
        if crowded {
            self.counted = false;
        }
        crowded
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.counted {
            self.chains.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use motor_domain::{delivery::Lane, InstanceId};

    use super::*;

    fn unordered() -> Unordered {
        Unordered::new(SubscriptionId::new(), Busy::default())
    }

    fn job() -> DeliveryJob {
        DeliveryJob {
            delivery_id: DeliveryId::new(),
            subscription_id: SubscriptionId::new(),
            instance_id: InstanceId::new(),
            lane: Lane::Live,
            seq: 1,
            attempt: 1,
            due_at: Utc::now(),
        }
    }

    #[test]
    fn handed_jobs_past_the_tasks_wait_and_each_ending_task_takes_one() {
        let handed = unordered();
        let started: Vec<_> = (0..HANDED_TASKS)
            .map(|_| handed.hand(job()).expect("a task"))
            .collect();
        assert_eq!(started.len(), HANDED_TASKS);
        let (a, b, c) = (job(), job(), job());
        assert!(handed.hand(a.clone()).is_none(), "past the tasks: waits");
        assert!(handed.hand(b.clone()).is_none());
        assert!(handed.hand(c.clone()).is_none());
        // A chain claimed `b`: its waiting job is skipped.
        handed.claimed(b.delivery_id);
        assert_eq!(handed.task_ended(false), Some(a.clone()));
        assert_eq!(handed.task_ended(false), Some(c.clone()));
        // The tasks claim theirs, but not one a chain claimed meanwhile.
        handed.claimed(c.delivery_id);
        assert!(handed.take_handed(a.delivery_id));
        assert!(!handed.take_handed(c.delivery_id));
        assert!(!handed.take_handed(a.delivery_id), "once");
        // Nothing waits: the task count goes down, and a new job gets a task.
        assert_eq!(handed.task_ended(false), None);
        assert!(handed.hand(job()).is_some());
        assert!(handed.hand(job()).is_none());
        // At shutdown a task ending drops what waits.
        assert_eq!(handed.task_ended(true), None);
        assert_eq!(handed.handed.lock().unwrap().queue.len(), 0);
        assert_eq!(handed.handed.lock().unwrap().tasks, HANDED_TASKS - 1);
    }

    #[test]
    fn of_many_crowded_chains_only_those_past_the_bound_leave() {
        let u = unordered();
        let mut running: Vec<Running> = (0..UNORDERED_CHAINS + 10).map(|_| u.running()).collect();
        let mut left = 0;
        for r in &mut running {
            if r.leaves_crowded() {
                left += 1;
            }
        }
        assert_eq!(left, 10);
        assert_eq!(u.chains(), UNORDERED_CHAINS);
        drop(running);
        assert_eq!(u.chains(), 0);
    }

    #[test]
    fn a_subscription_is_busy_while_its_chains_run_with_the_room_they_leave() {
        let busy = Busy::default();
        let id = SubscriptionId::new();
        let u = Unordered::new(id, busy.clone());
        assert!(busy.rooms().is_empty());
        let first = u.running();
        assert_eq!(busy.rooms(), vec![(id, Busy::ROOM - 1)]);
        let mut running: Vec<Running> = (1..UNORDERED_CHAINS).map(|_| u.running()).collect();
        assert_eq!(busy.rooms(), vec![(id, 0)], "as many as may claim");
        let mut past = u.running();
        assert!(past.leaves_crowded());
        drop(past);
        running.truncate(4);
        assert_eq!(busy.rooms(), vec![(id, Busy::ROOM - 5)]);
        // Handed jobs waiting for a task: no room until none waits.
        let tasks: Vec<_> = (0..HANDED_TASKS).filter_map(|_| u.hand(job())).collect();
        assert_eq!(busy.rooms(), vec![(id, Busy::ROOM - 5)], "none waits");
        assert!(u.hand(job()).is_none());
        assert_eq!(busy.rooms(), vec![(id, 0)], "one waits");
        assert!(u.task_ended(false).is_some());
        assert_eq!(busy.rooms(), vec![(id, Busy::ROOM - 5)], "taken");
        drop(tasks);
        drop(running);
        drop(first);
        assert!(busy.rooms().is_empty(), "none running");
    }

    #[test]
    fn claimed_jobs_at_the_front_are_dropped_as_jobs_queue() {
        let handed = unordered();
        for _ in 0..HANDED_TASKS {
            handed.hand(job()).expect("a task");
        }
        for _ in 0..1_000 {
            let j = job();
            assert!(handed.hand(j.clone()).is_none());
            handed.claimed(j.delivery_id);
        }
        let inner = handed.handed.lock().unwrap();
        assert!(inner.queue.len() <= 1, "{} kept", inner.queue.len());
        assert_eq!(inner.open.len(), HANDED_TASKS, "the tasks' own, unclaimed");
    }
}
