//! The writer: one group commit for a process's producer requests (its
//! intake) and its dispatcher's delivered attempts, when the API and the
//! dispatcher share the process (`motor serve` with both roles).
//!
//! Why one: an ordered lane moves one delivery per durable record, and at
//! a fixed rate on a hot instance every event also costs an ingest commit.
//! With two workers the two kinds of commit queue for the same WAL flush
//! (this disk: one fsync at a time), so each lane step waited behind an
//! ingest commit as well as its own, and the lane fell behind a rate its
//! backlog drain keeps up with (docs/SCALING.md, "One hot lane"). Here a
//! batch appends the requests it took, then records the attempts it took
//! and claims what follows each (seeing the deliveries the appends just
//! parked behind them), and commits once. A batch of appends alone that
//! comes while a chain is between two records of its lane waits up to
//! [`HOLD`] for that record ([`Batch::hold`]), so the two share the commit
//! instead of the record waiting for the appends' commit.
//!
//! A process without the API keeps the dispatcher's own recorder; one
//! without a dispatcher only appends here.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use motor_domain::{delivery::DeliveryId, InstanceId, NewEvent};

use crate::{
    deliveries::{self, AfterCommit, Attempt, Claimed, Next, Recorded},
    group_commit::{Batch, GroupCommit, GroupCommitError, Limits, WeakGroupCommit},
    ledger::{self, Appended, Request},
    Pool, StoreError,
};

/// How long a batch of appends alone waits for the next record of a chain
/// that claimed its next delivery in the last batch: an attempt to a
/// receiver next door takes 0.2–0.8 ms (docs/SCALING.md); a slower one
/// costs the appends this much, once.
pub const HOLD: Duration = Duration::from_millis(1);

/// A chain whose record claimed its next delivery longer ago than this is
/// not waited for (its receiver is slow, or its attempt failed and was
/// recorded elsewhere).
const HOT_FOR: Duration = Duration::from_millis(5);

/// One job of the writer.
pub enum Write {
    /// A producer request: events for one instance.
    Append {
        instance: InstanceId,
        events: Vec<NewEvent>,
    },
    /// An attempt that ended `entregada`, to record
    /// ([`deliveries::record_delivered_many`]).
    Delivered {
        claimed: Box<Claimed>,
        attempt: Attempt,
        next: Next,
    },
}

/// One answer of the writer, of the job's kind. A batch that fails fails
/// every job of it; a job's own error here fails only the jobs of its
/// kind: a shared batch that failed before its commit is tried again as
/// appends and records apart, and a record's release after the commit (the
/// job of the parked delivery after it) fails only that record.
pub enum Written {
    Appended(Result<Appended, Arc<StoreError>>),
    Recorded(Result<Recorded, Arc<StoreError>>),
}

/// Chains that went on from the last batch with records.
#[derive(Default)]
struct Continuing {
    chains: usize,
    at: Option<Instant>,
}

struct Writing {
    pool: Pool,
    after_commit: Option<Arc<dyn AfterCommit>>,
    continuing: Mutex<Continuing>,
}

impl Batch for Writing {
    type Job = Write;
    type Answer = Written;

    async fn commit(&self, jobs: &[Write]) -> Result<Vec<Written>, StoreError> {
        let mut requests = Vec::new();
        let mut done = Vec::new();
        for job in jobs {
            match job {
                Write::Append { instance, events } => requests.push(Request {
                    instance: *instance,
                    events,
                }),
                Write::Delivered {
                    claimed,
                    attempt,
                    next,
                } => done.push((claimed.as_ref(), attempt, *next)),
            }
        }
        let (appended, recorded) = if requests.is_empty() {
            (Ok(Vec::new()), self.record_alone(&done).await)
        } else if done.is_empty() {
            let appended = self.append_and_record(&requests, &done).await?.0;
            (Ok(appended), Vec::new())
        } else {
            match self.append_and_record(&requests, &done).await {
                Ok((appended, recorded)) => (Ok(appended), recorded),
                // Nothing of the transaction happened: each kind alone, so
                // that one kind's failure (an append's) fails only its jobs.
                Err(Failed::Before(e)) => {
                    tracing::debug!(error = %e, "a shared batch failed; appending and recording apart");
                    let appended = self.append_and_record(&requests, &[]).await;
                    let recorded = self.record_alone(&done).await;
                    let appended = appended
                        .map(|(appended, _)| appended)
                        .map_err(|e| Arc::new(StoreError::from(e)));
                    (appended, recorded)
                }
                Err(e) => return Err(e.into()),
            }
        };
        if !done.is_empty() {
            let chains = recorded
                .iter()
                .filter(|r| matches!(r, Ok(Recorded::Done { next: Some(_), .. })))
                .count();
            *self.continuing.lock().expect("not poisoned") = Continuing {
                chains,
                at: Some(Instant::now()),
            };
        }
        let (mut appended, failed) = match appended {
            Ok(appended) => (appended.into_iter(), None),
            Err(e) => (Vec::new().into_iter(), Some(e)),
        };
        let mut recorded = recorded.into_iter();
        Ok(jobs
            .iter()
            .map(|job| match job {
                Write::Append { .. } => Written::Appended(match &failed {
                    Some(e) => Err(e.clone()),
                    None => Ok(appended.next().expect("one answer per request")),
                }),
                Write::Delivered { .. } => {
                    Written::Recorded(recorded.next().expect("one answer per record"))
                }
            })
            .collect())
    }

    fn weight(job: &Write) -> usize {
        match job {
            Write::Append { events, .. } => events.len(),
            Write::Delivered { .. } => 1,
        }
    }

    fn hold(&self, jobs: &[Write]) -> Option<Duration> {
        if jobs.iter().any(|j| matches!(j, Write::Delivered { .. })) {
            return None;
        }
        let continuing = self.continuing.lock().expect("not poisoned");
        let hot = continuing.chains > 0 && continuing.at.is_some_and(|at| at.elapsed() < HOT_FOR);
        hot.then_some(HOLD)
    }
}

impl Writing {
    /// One transaction: the appends (instances locked in id order, as
    /// the intake does), then the records and their next claims, which see
    /// what the appends parked; one commit. Then the dispatcher is handed
    /// what the appends created, but for the deliveries the records
    /// already claimed as their next.
    async fn append_and_record(
        &self,
        requests: &[Request<'_>],
        done: &[(&Claimed, &Attempt, Next)],
    ) -> Result<(Vec<Appended>, Vec<Result<Recorded, Arc<StoreError>>>), Failed> {
        let lease = self.after_commit.as_ref().and_then(|a| a.lease());
        let mut tx = self.pool.begin().await.map_err(Failed::before)?;
        let (appended, mut handed) = ledger::append_batch(&mut tx, requests, lease)
            .await
            .map_err(Failed::Before)?;
        let finished = if done.is_empty() {
            None
        } else {
            let finished = deliveries::record_delivered_in(&mut tx, done)
                .await
                .map_err(Failed::Before)?;
            Some(finished)
        };
        tx.commit().await.map_err(|e| Failed::AtCommit(e.into()))?;
        if let Some(finished) = &finished {
            let claimed: HashSet<DeliveryId> = finished.claimed_next().collect();
            handed.parked.retain(|p| !claimed.contains(&p.delivery_id));
            handed.jobs.retain(|j| !claimed.contains(&j.delivery_id));
        }
        if let Some(after_commit) = &self.after_commit {
            after_commit.committed(handed);
        }
        let recorded = match finished {
            Some(finished) => finished
                .answer(&self.pool, done)
                .await
                .into_iter()
                .map(|r| r.map_err(Arc::new))
                .collect(),
            None => Vec::new(),
        };
        Ok((appended, recorded))
    }

    /// Records alone, as the dispatcher's own recorder writes them; the
    /// whole batch's failure is each record's.
    async fn record_alone(
        &self,
        done: &[(&Claimed, &Attempt, Next)],
    ) -> Vec<Result<Recorded, Arc<StoreError>>> {
        match deliveries::record_delivered_many(&self.pool, done).await {
            Ok(recorded) => recorded.into_iter().map(Ok).collect(),
            Err(e) => {
                let e = Arc::new(e);
                done.iter().map(|_| Err(e.clone())).collect()
            }
        }
    }
}

/// How a shared batch failed.
enum Failed {
    /// Before its commit: nothing of it happened.
    Before(StoreError),
    /// At its commit: it may or may not have happened, so nothing is
    /// tried again (a producer's retry decides, as for any failed append).
    AtCommit(StoreError),
}

impl Failed {
    fn before(e: sqlx::Error) -> Self {
        Self::Before(e.into())
    }
}

impl From<Failed> for StoreError {
    fn from(failed: Failed) -> Self {
        match failed {
            Failed::Before(e) | Failed::AtCommit(e) => e,
        }
    }
}

/// The queue of this process's writer; clones share it. The worker stops
/// when every `Writer` is dropped (a [`WeakWriter`] does not keep it).
#[derive(Clone)]
pub struct Writer {
    worker: GroupCommit<Writing>,
}

/// A handle to the writer that does not keep it running: the dispatcher's,
/// which the writer's own after-commit hand-over keeps alive.
#[derive(Clone)]
pub struct WeakWriter {
    worker: WeakGroupCommit<Writing>,
}

impl WeakWriter {
    pub fn upgrade(&self) -> Option<Writer> {
        self.worker.upgrade().map(|worker| Writer { worker })
    }
}

impl Writer {
    /// Starts the worker; `after_commit` (this process's dispatcher and
    /// relay, if any) is handed each commit's first attempts and offered
    /// the writer for its records ([`AfterCommit::share`]).
    pub fn start(pool: Pool, after_commit: Option<Arc<dyn AfterCommit>>, limits: Limits) -> Self {
        let batch = Writing {
            pool,
            after_commit: after_commit.clone(),
            continuing: Mutex::default(),
        };
        let writer = Self {
            worker: GroupCommit::start(batch, limits),
        };
        if let Some(after_commit) = after_commit {
            after_commit.share(&writer);
        }
        writer
    }

    pub fn downgrade(&self) -> WeakWriter {
        WeakWriter {
            worker: self.worker.downgrade(),
        }
    }

    /// Appends `events` to `instance`'s ledger in the next batch; answers
    /// once that batch committed.
    pub async fn append(
        &self,
        instance: InstanceId,
        events: Vec<NewEvent>,
    ) -> Result<Appended, GroupCommitError> {
        match self
            .worker
            .submit(Write::Append { instance, events })
            .await?
        {
            Written::Appended(appended) => appended.map_err(GroupCommitError::Failed),
            Written::Recorded(_) => unreachable!("an append is answered as one"),
        }
    }

    /// Records `claimed`'s attempt as delivered in the next batch,
    /// claiming the next delivery of its chain when `next` says so and one
    /// can be claimed now (as [`deliveries::record_delivered_many`]).
    pub async fn delivered(
        &self,
        claimed: Box<Claimed>,
        attempt: Attempt,
        next: Next,
    ) -> Result<Recorded, GroupCommitError> {
        let job = Write::Delivered {
            claimed,
            attempt,
            next,
        };
        match self.worker.submit(job).await? {
            Written::Recorded(recorded) => recorded.map_err(GroupCommitError::Failed),
            Written::Appended(_) => unreachable!("a record is answered as one"),
        }
    }
}
