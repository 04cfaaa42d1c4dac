//! Group commit: callers queue jobs, and they are committed in batches,
//! each caller answered after its batch committed. Used by the API's
//! intake (producer requests: `motor_app::events::intake`), the command
//! accept, and the dispatcher's recorder and looks for freed lanes
//! (`motor_engine`'s `dispatch::recorder`, `dispatch::freeing`); what a
//! batch does is theirs, how batches form is this module's.
//!
//! How batches form, and why:
//! - A leader takes whatever is queued, up to [`Limits`], and never
//!   waits for more: at low load a batch is one job and adds no wait.
//! - The caller that queues a job while nobody leads leads, in its own
//!   task: it forms and commits the batch its job opens, and what queued
//!   behind it by then is led by a task of its own, as a worker task
//!   led every batch before. At a low rate each batch is one caller's,
//!   so its answer wakes no other task: with a worker task, the commit's
//!   answer woke the caller while the commit's hand-over (a delivery's
//!   chain) was runnable too, and the idle tokio worker was woken for
//!   them at every event (docs/BENCHMARKS.md, "Low-rate CPU").
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
//!   arrives, when it is full, or when the batches are hurried
//!   ([`GroupCommit::hurry`]: something now waits behind one of its
//!   jobs). At a steady low rate, where each job used to be a batch and a
//!   commit of its own, the jobs of a linger share one.
//! - Jobs keep their queue order inside a batch and from batch to batch,
//!   so one producer instance's requests keep their order.
//! - A batch that fails answers every job in it with the same error (the
//!   transaction rolled back: none of them happened).

use std::{
    collections::VecDeque,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex, MutexGuard},
    task::{ready, Context, Poll},
    time::Duration,
};

use tokio::{
    sync::{oneshot, Notify, Semaphore},
    time::Instant,
};

use crate::StoreError;

/// What one batch does: commit every job of it in one go.
pub trait Batch: Send + Sync + 'static {
    type Job: Send + 'static;
    type Answer: Send + 'static;

    /// Commits `jobs`; one answer per job, in their order. Nothing may be
    /// answered before the commit: the leader answers on return.
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

/// Bounds of the batches.
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
    /// together), how long the leader waits once for more before it
    /// commits; `None`: never. A lone caller never waits.
    pub gather: Option<Duration>,
    /// The least time from one batch's start to the next one's: a job that
    /// comes sooner waits until then, with whatever else arrives, unless
    /// the batch reaches [`Pace::enough`] jobs (or is full) first; `None`:
    /// a batch starts as soon as the one before it committed.
    pub pace: Option<Pace>,
    /// When every job of a batch is [`Batch::patient`], how long from the
    /// first one's arrival the batch waits for more: it goes sooner when a
    /// job that is not patient arrives, when it is full, or when the
    /// batches are hurried; `None`: patient jobs are treated as any other.
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
    /// The batches stopped (the runtime is shutting down).
    #[error("the group commit stopped")]
    Stopped,
}

type Reply<A> = oneshot::Sender<Result<A, GroupCommitError>>;
type Queued<B> = (<B as Batch>::Job, Reply<<B as Batch>::Answer>);

/// The queue of one group commit; clones share it.
pub struct GroupCommit<B: Batch> {
    shared: Arc<Shared<B>>,
}

impl<B: Batch> Clone for GroupCommit<B> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

struct Shared<B: Batch> {
    limits: Limits,
    state: Mutex<State<B>>,
    /// Rung for every job queued behind the leader: one that waits out a
    /// pace or a linger takes it.
    arrived: Notify,
    /// Ends a linger under way (or the next one, when none is).
    hurry: Notify,
    /// A permit for each job that may wait ([`Limits::queue`]), given
    /// back when its batch takes it.
    room: Semaphore,
}

struct State<B: Batch> {
    /// Jobs not yet in a batch, in the order they came.
    queue: VecDeque<Queued<B>>,
    /// Whether somebody leads. Set by the caller that queues a job while
    /// nobody does, cleared by the leader when it finds the queue empty,
    /// both under this lock: a queued job always has a leader.
    leading: bool,
    /// What commits the batches; the leader's while it leads.
    batch: Option<B>,
    /// When the last batch started ([`Limits::pace`]).
    started: Option<Instant>,
    /// A leader was dropped with its batch unfinished and nothing to go on
    /// with it (no runtime left): every job is answered
    /// [`GroupCommitError::Stopped`].
    stopped: bool,
}

impl<B: Batch> Shared<B> {
    fn state(&self) -> MutexGuard<'_, State<B>> {
        self.state.lock().expect("not poisoned")
    }
}

impl<B: Batch> GroupCommit<B> {
    /// The group commit of `batch`; nothing runs until a job comes.
    pub fn start(batch: B, limits: Limits) -> Self {
        let state = State {
            queue: VecDeque::new(),
            leading: false,
            batch: Some(batch),
            started: None,
            stopped: false,
        };
        Self {
            shared: Arc::new(Shared {
                limits,
                state: Mutex::new(state),
                arrived: Notify::new(),
                hurry: Notify::new(),
                room: Semaphore::new(limits.queue),
            }),
        }
    }

    /// Something waits behind a job of the batch that lingers: it commits
    /// now. When no batch lingers, the next one to linger commits at once.
    pub fn hurry(&self) {
        self.shared.hurry.notify_one();
    }

    /// Queues `job` for the next batch; answers once that batch committed.
    ///
    /// The caller that finds nobody leading leads: it forms and commits
    /// the batch its job opens in its own task, so that a lone job's
    /// answer needs no other task to wake it (a worker task of its own
    /// did: the caller woken across threads at every commit at a low
    /// rate). What is queued behind that batch by its commit is led by a
    /// task of its own, so the caller is answered with its batch; and a
    /// caller dropped while it leads (a request whose client went away)
    /// leaves its batch to a task of its own, to be committed and
    /// answered all the same.
    pub async fn submit(&self, job: B::Job) -> Result<B::Answer, GroupCommitError> {
        let shared = &self.shared;
        shared
            .room
            .acquire()
            .await
            .map_err(|_| GroupCommitError::Stopped)?
            .forget();
        let (reply, answered) = oneshot::channel();
        let leads = {
            let mut state = shared.state();
            if state.stopped {
                return Err(GroupCommitError::Stopped);
            }
            state.queue.push_back((job, reply));
            !std::mem::replace(&mut state.leading, true)
        };
        if leads {
            Leading(Some(Box::pin(lead(shared.clone(), true)))).await;
        } else {
            shared.arrived.notify_one();
        }
        answered.await.map_err(|_| GroupCommitError::Stopped)?
    }

    /// Jobs queued and not yet in a batch.
    #[cfg(test)]
    fn queued(&self) -> usize {
        self.shared.state().queue.len()
    }
}

/// A caller's lead, polled in the caller's task; if the caller is dropped
/// first, what is left of it runs in a task of its own.
struct Leading(Option<Pin<Box<dyn Future<Output = ()> + Send>>>);

impl Future for Leading {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(lead) = self.0.as_mut() {
            ready!(lead.as_mut().poll(cx));
            self.0 = None;
        }
        Poll::Ready(())
    }
}

impl Drop for Leading {
    fn drop(&mut self) {
        if let (Some(rest), Ok(runtime)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(rest);
        }
    }
}

/// Forms and commits batches while jobs are queued. With `hand_over` (a
/// caller leading), one batch: what is queued by its end is led by a task
/// of its own.
async fn lead<B: Batch>(shared: Arc<Shared<B>>, hand_over: bool) {
    let Some(mut lead) = Lead::take(shared) else {
        return;
    };
    loop {
        lead.batch().await;
        if !lead.more() {
            return;
        }
        if hand_over {
            lead.hand_over();
            return;
        }
    }
}

/// The leader's hold on the batches. Dropped unreleased (its future
/// dropped with no runtime to go on), it stops them: every queued job is
/// answered [`GroupCommitError::Stopped`].
struct Lead<B: Batch> {
    shared: Arc<Shared<B>>,
    batch: Option<B>,
}

impl<B: Batch> Lead<B> {
    fn take(shared: Arc<Shared<B>>) -> Option<Self> {
        let batch = shared.state().batch.take();
        let lead = Self { shared, batch };
        // None: a lead was lost before; dropped, this one answers the
        // queue as stopped.
        lead.batch.is_some().then_some(lead)
    }

    /// Whether jobs are queued; if none are, it stops leading.
    fn more(&mut self) -> bool {
        let mut state = self.shared.state();
        if !state.queue.is_empty() {
            return true;
        }
        state.leading = false;
        state.batch = self.batch.take();
        false
    }

    /// Leaves what is queued to a task of its own.
    fn hand_over(mut self) {
        self.shared.state().batch = self.batch.take();
        tokio::spawn(lead(self.shared.clone(), false));
    }

    /// Forms the next batch from the queue (which holds a job) and commits
    /// it, answering each of its jobs.
    async fn batch(&mut self) {
        let shared = self.shared.clone();
        let limits = &shared.limits;
        let arrived = Instant::now();
        let mut forming = Forming::<B>::default();
        let mut room = forming.take_queued(&shared);
        let lingers = limits
            .linger
            .filter(|_| room && forming.taken.iter().all(|(job, _)| B::patient(job)));
        if let Some(wait) = lingers {
            room = forming.linger(&shared, arrived + wait).await;
        }
        let started = shared.state().started;
        if let (Some(paced), Some(last), true) = (limits.pace, started, room) {
            let due = last + paced.every;
            if due > Instant::now() {
                room = forming.pace(&shared, paced.enough, due).await;
            }
        }
        shared.state().started = Some(Instant::now());
        // A batch that lingered gathered already.
        let several = forming.taken.len() > 1;
        if let (Some(wait), true, true, None) = (limits.gather, room, several, lingers) {
            tokio::time::sleep(wait).await;
            forming.take_queued(&shared);
        }
        let (jobs, replies): (Vec<_>, Vec<_>) = forming.taken.into_iter().unzip();
        let batch = self.batch.as_mut().expect("held while leading");
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

impl<B: Batch> Drop for Lead<B> {
    fn drop(&mut self) {
        if self.batch.is_none() {
            return;
        }
        let lost = {
            let mut state = self.shared.state();
            state.stopped = true;
            state.leading = false;
            std::mem::take(&mut state.queue)
        };
        self.shared.room.close();
        // Their replies dropped: each caller answered Stopped.
        drop(lost);
    }
}

/// The batch being formed: its jobs, in queue order, and their weight.
struct Forming<B: Batch> {
    taken: Vec<Queued<B>>,
    weight: usize,
}

impl<B: Batch> Default for Forming<B> {
    fn default() -> Self {
        Self {
            taken: Vec::new(),
            weight: 0,
        }
    }
}

impl<B: Batch> Forming<B> {
    /// Whether it may take another job.
    fn has_room(&self, limits: &Limits) -> bool {
        self.taken.len() < limits.max_jobs && self.weight < limits.max_weight
    }

    /// Moves what is queued in, never waiting, up to the limits; whether
    /// the batch still has room.
    fn take_queued(&mut self, shared: &Shared<B>) -> bool {
        let limits = &shared.limits;
        let before = self.taken.len();
        let room = {
            let mut state = shared.state();
            loop {
                if !self.has_room(limits) {
                    break false;
                }
                let Some(next) = state.queue.pop_front() else {
                    break true;
                };
                self.weight += B::weight(&next.0);
                self.taken.push(next);
            }
        };
        shared.room.add_permits(self.taken.len() - before);
        room
    }

    /// [`Limits::pace`]: takes what arrives until `until`, `enough` jobs
    /// or a full batch; whether the batch still has room.
    async fn pace(&mut self, shared: &Shared<B>, enough: usize, until: Instant) -> bool {
        while self.taken.len() < enough {
            tokio::select! {
                _ = shared.arrived.notified() => {
                    if !self.take_queued(shared) {
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
    /// or a hurry; whether the batch still has room.
    async fn linger(&mut self, shared: &Shared<B>, until: Instant) -> bool {
        loop {
            tokio::select! {
                biased;
                _ = shared.hurry.notified() => return true,
                _ = shared.arrived.notified() => {
                    let before = self.taken.len();
                    if !self.take_queued(shared) {
                        return false;
                    }
                    if !self.taken[before..].iter().all(|(job, _)| B::patient(job)) {
                        return true;
                    }
                }
                _ = tokio::time::sleep_until(until) => return true,
            }
        }
    }
}

#[cfg(test)]
mod tests;
