//! Group commit: one worker that takes what callers queue and commits it
//! in batches, each caller answered after its batch committed. Used by the
//! API's intake (producer requests: `motor_app::events::intake`) and the
//! dispatcher's recorder (attempts that ended `entregada`:
//! `motor_engine`'s `dispatch::recorder`); what a batch does is theirs,
//! how batches form is this module's.
//!
//! How batches form, and why:
//! - The worker takes whatever is queued, up to [`Limits`], and never
//!   waits for more: at low load a batch is one job and adds no wait.
//! - One batch in flight, not two: what arrives while a batch commits
//!   makes the next batch, so batches grow with the load instead of two
//!   smaller ones sharing it. Measured on the 2-core benchmark machine
//!   (docs/BENCHMARKS.md, 2026-12-02 10:40): one intake worker took 16 %
//!   less CPU an accepted event than two (each with its own instances, so
//!   that one could write while the other committed); with the recorder
//!   also down to one batch in flight, the fixed 1,000/s rate took 17 %
//!   less for every process together, and one recorder beside one intake
//!   worker took 10–17 % less CPU an event at every rate from 1,000/s up.
//! - With [`Limits::gather`] (the recorder's), a batch that already holds
//!   more than one job waits once, one timer tick, for more. Measured on
//!   the 2-core machine (docs/BENCHMARKS.md, 2026-12-04 19:20–19:40):
//!   once the record took one round trip instead of four, batches came
//!   back so soon that a closed loop on one unordered subscription (64
//!   chains) committed small ones, and delivered 3,296–3,664/s against
//!   4,256–4,670/s before; with the wait, 4,023–4,219/s (p50 40 ms, 130–190
//!   ms before). A lone job (one hot lane) never waits.
//! - With [`Limits::pace`] (the intake's, 2 ms by default), a batch starts
//!   no sooner than [`Pace::every`] after the one before it started: a job
//!   that comes sooner waits until then, with what else arrives meanwhile,
//!   unless the batch reaches [`Pace::enough`] jobs first. Once the intake
//!   appended in one round trip instead of four (`ledger::Appender`),
//!   its batches at a steady 1,000 events/s shrank to about one request
//!   each, and the transactions that made up for it cost more than the
//!   round trips saved: 1,487–1,524 µs of CPU an event for every process
//!   against 1,358–1,428 before. Paced, 1,204–1,240 µs, with the
//!   producers' request p50 unchanged (3.3–3.5 ms). What the pace costs
//!   is a request's wait where requests come less than 2 ms apart: at a
//!   steady 400/s (not evenly spaced) the request p50 went from 1.4 to
//!   2.5–2.7 ms, the deliveries' commit → receiver did not move (p50
//!   1.5–1.7, p99 3.1–3.3 ms); at 200/s neither moved
//!   (docs/BENCHMARKS.md, "Low-rate CPU", 2026-12-04 21:18–21:52).
//! - With [`Limits::linger`] (the recorder's), a batch whose every job
//!   says it may wait ([`Batch::patient`]: a delivered attempt nothing is
//!   known to wait behind) waits for more, up to the linger from its first
//!   job's arrival, and goes at once when a job that may not wait
//!   arrives, when it is full, or when the worker is hurried
//!   ([`GroupCommit::hurry`]: something now waits behind one of its
//!   jobs). At a steady low rate, where each job used to be a batch and a
//!   commit of its own, the jobs of a linger share one.
//! - Jobs keep their queue order inside a batch and from batch to batch,
//!   so one producer instance's requests keep their order.
//! - A batch that fails answers every job in it with the same error (the
//!   transaction rolled back: none of them happened).

use std::{future::Future, sync::Arc, time::Duration};

use tokio::sync::{mpsc, oneshot, Notify};

use crate::StoreError;

/// What one batch does: commit every job of it in one go.
pub trait Batch: Send + Sync + 'static {
    type Job: Send + 'static;
    type Answer: Send + 'static;

    /// Commits `jobs`; one answer per job, in their order. Nothing may be
    /// answered before the commit: the worker answers on return.
    fn commit(
        &mut self,
        jobs: &[Self::Job],
    ) -> impl Future<Output = Result<Vec<Self::Answer>, StoreError>> + Send;

    /// How much a job counts against [`Limits::max_weight`] (events of a
    /// producer request; 1 by default).
    fn weight(_job: &Self::Job) -> usize {
        1
    }

    /// Whether `job` may wait up to [`Limits::linger`] for others to share
    /// its batch (no by default).
    fn patient(_job: &Self::Job) -> bool {
        false
    }
}

/// Bounds of the worker.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Jobs a batch takes at most.
    pub max_jobs: usize,
    /// Total [`Batch::weight`] a batch takes at most (a job is never
    /// split: a batch may pass this by one job).
    pub max_weight: usize,
    /// Jobs waiting at most; past it a caller waits for room.
    pub queue: usize,
    /// When a batch already holds more than one job (callers committing
    /// together), how long the worker waits once for more before it
    /// commits; `None`: never. A lone caller never waits.
    pub gather: Option<Duration>,
    /// The least time from one batch's start to the next one's: a job that
    /// comes sooner waits until then, with whatever else arrives, unless
    /// the batch reaches [`Pace::enough`] jobs (or is full) first; `None`:
    /// a batch starts as soon as the one before it committed.
    pub pace: Option<Pace>,
    /// When every job of a batch is [`Batch::patient`], how long from the
    /// first one's arrival the batch waits for more: it goes sooner when a
    /// job that is not patient arrives, when it is full, or when the worker
    /// is hurried; `None`: patient jobs are treated as any other.
    pub linger: Option<Duration>,
}

/// [`Limits::pace`].
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// The least time from one batch's start to the next one's.
    pub every: Duration,
    /// Jobs with which a batch goes at once, paced or not: callers that
    /// come together this many at a time lose nothing to the pace.
    pub enough: usize,
}

/// Why a job got no answer of its own.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GroupCommitError {
    /// Its batch failed (shared by every job of the batch).
    #[error(transparent)]
    Failed(Arc<StoreError>),
    /// The worker is gone (the process is stopping).
    #[error("the group commit worker stopped")]
    Stopped,
}

type Reply<A> = oneshot::Sender<Result<A, GroupCommitError>>;

/// The queue of one group-commit worker; clones share it. The worker
/// stops when every handle is dropped.
pub struct GroupCommit<B: Batch> {
    queue: mpsc::Sender<(B::Job, Reply<B::Answer>)>,
    /// Ends a linger under way (or the next one, when none is).
    hurry: Arc<Notify>,
}

impl<B: Batch> Clone for GroupCommit<B> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            hurry: self.hurry.clone(),
        }
    }
}

impl<B: Batch> GroupCommit<B> {
    /// Starts the worker on the current tokio runtime.
    pub fn start(batch: B, limits: Limits) -> Self {
        let (queue, waiting) = mpsc::channel(limits.queue);
        let hurry = Arc::new(Notify::new());
        tokio::spawn(work(batch, limits, waiting, hurry.clone()));
        Self { queue, hurry }
    }

    /// Something waits behind a job of the batch that lingers: it commits
    /// now. When no batch lingers, the next one to linger commits at once.
    pub fn hurry(&self) {
        self.hurry.notify_one();
    }

    /// Queues `job` for the next batch; answers once that batch committed.
    pub async fn submit(&self, job: B::Job) -> Result<B::Answer, GroupCommitError> {
        let (reply, answered) = oneshot::channel();
        self.queue
            .send((job, reply))
            .await
            .map_err(|_| GroupCommitError::Stopped)?;
        answered.await.map_err(|_| GroupCommitError::Stopped)?
    }
}

type Queued<B> = (<B as Batch>::Job, Reply<<B as Batch>::Answer>);

/// The batch being formed: its jobs, in queue order, and their weight.
struct Forming<B: Batch> {
    taken: Vec<Queued<B>>,
    weight: usize,
}

impl<B: Batch> Forming<B> {
    fn new(first: Queued<B>) -> Self {
        Self {
            weight: B::weight(&first.0),
            taken: vec![first],
        }
    }

    /// Whether it may take another job.
    fn has_room(&self, limits: &Limits) -> bool {
        self.taken.len() < limits.max_jobs && self.weight < limits.max_weight
    }

    /// Adds `next`; whether the batch still has room.
    fn add(&mut self, next: Queued<B>, limits: &Limits) -> bool {
        self.weight += B::weight(&next.0);
        self.taken.push(next);
        self.has_room(limits)
    }

    /// Moves what is queued in, never waiting, up to the limits; whether
    /// the batch still has room.
    fn take_queued(&mut self, waiting: &mut mpsc::Receiver<Queued<B>>, limits: &Limits) -> bool {
        while self.has_room(limits) {
            match waiting.try_recv() {
                Ok(next) => {
                    self.add(next, limits);
                }
                Err(_) => return true,
            }
        }
        false
    }

    /// [`Limits::pace`]: takes what arrives until `until`, `enough` jobs
    /// or a full batch; whether the batch still has room.
    async fn pace(
        &mut self,
        waiting: &mut mpsc::Receiver<Queued<B>>,
        limits: &Limits,
        enough: usize,
        until: tokio::time::Instant,
    ) -> bool {
        while self.taken.len() < enough {
            tokio::select! {
                next = waiting.recv() => {
                    let Some(next) = next else { return true };
                    if !self.add(next, limits) {
                        return false;
                    }
                }
                _ = tokio::time::sleep_until(until) => return true,
            }
        }
        true
    }

    /// [`Limits::linger`], for a batch whose every job is patient: takes
    /// what arrives until `until`, a job that is not patient, a full batch
    /// or `hurry`; whether the batch still has room.
    async fn linger(
        &mut self,
        waiting: &mut mpsc::Receiver<Queued<B>>,
        limits: &Limits,
        hurry: &Notify,
        until: tokio::time::Instant,
    ) -> bool {
        loop {
            tokio::select! {
                biased;
                _ = hurry.notified() => return true,
                next = waiting.recv() => {
                    let Some(next) = next else { return true };
                    let patient = B::patient(&next.0);
                    if !self.add(next, limits) {
                        return false;
                    }
                    if !patient {
                        return true;
                    }
                }
                _ = tokio::time::sleep_until(until) => return true,
            }
        }
    }
}

async fn work<B: Batch>(
    mut batch: B,
    limits: Limits,
    mut waiting: mpsc::Receiver<(B::Job, Reply<B::Answer>)>,
    hurry: Arc<Notify>,
) {
    let mut started: Option<tokio::time::Instant> = None;
    while let Some(first) = waiting.recv().await {
        let arrived = tokio::time::Instant::now();
        let mut forming = Forming::<B>::new(first);
        let mut room = forming.take_queued(&mut waiting, &limits);
        let lingers = limits
            .linger
            .filter(|_| room && forming.taken.iter().all(|(job, _)| B::patient(job)));
        if let Some(wait) = lingers {
            room = forming
                .linger(&mut waiting, &limits, &hurry, arrived + wait)
                .await;
        }
        if let (Some(paced), Some(last), true) = (limits.pace, started, room) {
            let due = last + paced.every;
            if due > tokio::time::Instant::now() {
                room = forming.pace(&mut waiting, &limits, paced.enough, due).await;
            }
        }
        started = Some(tokio::time::Instant::now());
        // A batch that lingered gathered already.
        let several = forming.taken.len() > 1;
        if let (Some(wait), true, true, None) = (limits.gather, room, several, lingers) {
            tokio::time::sleep(wait).await;
            forming.take_queued(&mut waiting, &limits);
        }
        let (jobs, replies): (Vec<_>, Vec<_>) = forming.taken.into_iter().unzip();
        match batch.commit(&jobs).await {
            Ok(answers) => {
                debug_assert_eq!(answers.len(), replies.len(), "one answer per job");
                for (reply, answer) in replies.into_iter().zip(answers) {
                    let _ = reply.send(Ok(answer));
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, jobs = jobs.len(), "a group commit failed");
                let e = Arc::new(e);
                for reply in replies {
                    let _ = reply.send(Err(GroupCommitError::Failed(e.clone())));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
