//! The intake: producer requests of this process group-committed
//! (`motor_store::group_commit`, which says how batches form and what that
//! was measured to save). One batch is one transaction and one commit
//! (`motor_store::ledger::Appender`: one statement when this intake wrote
//! to every instance of the batch last, else instances locked in id
//! order, then that statement); then the dispatcher of this process is
//! handed its first attempts and each request answered with its own
//! envelopes and seqs. An instance's requests keep their order.

use std::{sync::Arc, time::Duration};

use motor_domain::{InstanceId, NewEvent};
use motor_store::{
    deliveries::{AfterCommit, Handed},
    group_commit::{Batch, GroupCommit, GroupCommitError, Limits, Pace},
    held::Held,
    ledger::{Appended, Appender, Request},
    Pool, StoreError,
};

use crate::{AppError, Result};

/// Requests a batch takes at most; events at most (a request is never
/// split: a batch may pass this by one request); requests waiting at most
/// (past it a request waits for room); and at least `pace` between two
/// batches' starts, unless [`Intake::ENOUGH`] requests are there first
/// (`group_commit`'s module doc says what the pace saves).
fn limits(pace: Duration) -> Limits {
    Limits {
        max_jobs: 256,
        max_weight: 2_000,
        queue: 4_096,
        gather: None,
        pace: (!pace.is_zero()).then_some(Pace {
            every: pace,
            enough: Intake::ENOUGH,
        }),
        linger: None,
    }
}

/// One producer request: events for one instance.
pub struct Pending {
    instance: InstanceId,
    events: Vec<NewEvent>,
}

/// Appends a batch of requests in one transaction, on a connection it
/// keeps between batches (`motor_store::held`: no pool round trips).
struct Appending {
    held: Held,
    appender: Appender,
    after_commit: Option<Arc<dyn AfterCommit>>,
}

impl Appending {
    async fn append(
        &mut self,
        requests: &[Request<'_>],
    ) -> Result<(Vec<Appended>, Handed), StoreError> {
        let taking = self.after_commit.as_ref().and_then(|a| a.taking());
        let conn = self.held.conn().await?;
        self.appender.append(conn, requests, taking.as_ref()).await
    }
}

impl Batch for Appending {
    type Job = Pending;
    type Answer = Appended;

    async fn commit(&mut self, jobs: &[Pending]) -> Result<Vec<Appended>, StoreError> {
        let requests: Vec<Request<'_>> = jobs
            .iter()
            .map(|p| Request {
                instance: p.instance,
                events: &p.events,
            })
            .collect();
        let appended = self.append(&requests).await;
        let (answers, handed) = self.held.outcome(appended)?;
        if let Some(after_commit) = &self.after_commit {
            after_commit.committed(handed);
        }
        Ok(answers)
    }

    fn weight(job: &Pending) -> usize {
        job.events.len()
    }
}

/// The queue of producer requests of this process.
#[derive(Clone)]
pub struct Intake {
    worker: GroupCommit<Appending>,
}

impl Intake {
    /// The default least time between two batches' starts
    /// (`MOTOR_INTAKE_PACE_MS`).
    pub const PACE: Duration = Duration::from_millis(2);

    /// Requests with which a batch goes at once, whatever the pace: a
    /// closed loop of this many producers or more is not slowed by it
    /// (measured: 64 producers, one request each in flight, lost 46 % of
    /// their rate to a 10 ms pace without this; docs/BENCHMARKS.md,
    /// 2026-12-05 03:46–04:40).
    pub const ENOUGH: usize = 16;

    /// Starts the worker (it stops when every `Intake` is dropped);
    /// `after_commit` is this process's dispatcher and relay, if any;
    /// `pace` the least time between two batches' starts (zero: none).
    pub fn start(pool: Pool, after_commit: Option<Arc<dyn AfterCommit>>, pace: Duration) -> Self {
        let batch = Appending {
            // The append keeps its generic plan (`Held::with_generic_plans`).
            held: Held::new(pool).with_generic_plans(),
            appender: Appender::new(),
            after_commit,
        };
        Self {
            worker: GroupCommit::start(batch, limits(pace)),
        }
    }

    /// Appends `events` to `instance`'s ledger in the next batch; answers
    /// once that batch committed.
    pub async fn append(&self, instance: InstanceId, events: Vec<NewEvent>) -> Result<Appended> {
        self.worker
            .submit(Pending { instance, events })
            .await
            .map_err(|e| match e {
                GroupCommitError::Failed(e) => AppError::store(&e),
                GroupCommitError::Stopped => {
                    AppError::internal(std::io::Error::other("the intake stopped"))
                }
            })
    }
}
