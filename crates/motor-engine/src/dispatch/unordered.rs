//! An unordered subscription in one process: the slots that bound its
//! requests in flight, the count of its chains that claim ahead, and the
//! first attempts handed over by commits that wait for a task.

use std::{
    collections::{HashSet, VecDeque},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
};

use motor_domain::delivery::{DeliveryId, DeliveryJob};
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
    chains: Arc<AtomicUsize>,
    handed: Mutex<HandedJobs>,
}

impl Default for Unordered {
    fn default() -> Self {
        Self {
            slots: Arc::new(Semaphore::new(UNORDERED_PER_SUBSCRIPTION)),
            chains: Arc::default(),
            handed: Mutex::default(),
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
/// a chain claimed is forgotten here.
#[derive(Default)]
struct HandedJobs {
    tasks: usize,
    queue: VecDeque<DeliveryJob>,
    /// The deliveries of `queue` no chain has claimed.
    open: HashSet<DeliveryId>,
}

impl HandedJobs {
    /// `job` if a task may start for it now (counted), else queued.
    fn hand(&mut self, job: DeliveryJob) -> Option<DeliveryJob> {
        if self.tasks < HANDED_TASKS {
            self.tasks += 1;
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
            if self.open.remove(&job.delivery_id) {
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
    pub(super) async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.clone().acquire_owned().await.ok()
    }

    /// Its chains running in this process, counted by [`Self::running`].
    pub(super) fn chains(&self) -> usize {
        self.chains.load(Ordering::Relaxed)
    }

    /// Counts a chain while the guard lives.
    pub(super) fn running(&self) -> Running {
        self.chains.fetch_add(1, Ordering::Relaxed);
        Running {
            chains: self.chains.clone(),
            counted: true,
        }
    }

    /// A first attempt a commit handed over: `Some` when a task should take
    /// it now; call [`Self::task_ended`] when that task ends.
    pub(super) fn hand(&self, job: DeliveryJob) -> Option<DeliveryJob> {
        self.handed.lock().expect("not poisoned").hand(job)
    }

    /// A task of [`Self::hand`] ended: the next waiting job to take in its
    /// place, if any (none when `stopping`: the sweeper sends those).
    pub(super) fn task_ended(&self, stopping: bool) -> Option<DeliveryJob> {
        let mut handed = self.handed.lock().expect("not poisoned");
        if stopping {
            handed.stop();
            return None;
        }
        handed.next()
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
    chains: Arc<AtomicUsize>,
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
            self.chains.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use motor_domain::{delivery::Lane, subscription::SubscriptionId, InstanceId};

    use super::*;

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
        let handed = Unordered::default();
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
        assert_eq!(handed.task_ended(false), Some(a));
        assert_eq!(handed.task_ended(false), Some(c));
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
        let u = Unordered::default();
        let mut running: Vec<Running> = (0..UNORDERED_CHAINS + 10).map(|_| u.running()).collect();
        let mut left = 0;
        for r in &mut running {
            if r.leaves_crowded() {
                left += 1;
            }
        }
        assert_eq!(left, 10);
        assert_eq!(u.chains.load(Ordering::Relaxed), UNORDERED_CHAINS);
        drop(running);
        assert_eq!(u.chains.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn claimed_jobs_at_the_front_are_dropped_as_jobs_queue() {
        let handed = Unordered::default();
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
        assert!(inner.open.is_empty());
    }
}
