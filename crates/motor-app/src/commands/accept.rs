//! The accept of this process's commands, group-committed like the event
//! intake (`motor_store::group_commit` says how batches form and what that
//! was measured to save): one batch is one transaction
//! (`motor_store::commands::insert_batch`: instances locked in id order,
//! the same order as the intake's so the two never deadlock, each request
//! checked in queue order, then one statement for the rows and their
//! records and one for the `command.accepted` events) and one commit;
//! then each request is answered with its own command or its own refusal.
//! A request answered 202 was committed; a batch that fails answers every
//! request of it with that error, and none of them happened.
//!
//! Measured on the 2-core benchmark machine (docs/BENCHMARKS.md,
//! commands): a transaction per request held about 1,000 accepted/s at 64
//! clients, each request paying its own round trips and commit.

use std::sync::Arc;

use motor_domain::{
    command::{IdempotencyKey, NewCommand},
    time::Timestamp,
    AppId, InstanceId,
};
use motor_store::{
    commands::{self as store, Acceptance, Accepted, CommandError},
    deliveries::{AfterCommit, Handed},
    group_commit::{Batch, GroupCommit, GroupCommitError, Limits},
    held::Held,
    Pool, StoreError,
};
use sqlx::Connection;

use crate::{AppError, Result};

/// Requests a batch takes at most (each is one command); requests
/// waiting at most (past it a request waits for room).
const LIMITS: Limits = Limits {
    max_jobs: 256,
    max_weight: 256,
    queue: 4_096,
    gather: None,
    pace: None,
    linger: None,
};

/// One request to store a command, parsed and allowed.
pub struct Pending {
    pub app: AppId,
    pub instance: InstanceId,
    pub new: NewCommand,
    pub key: Option<IdempotencyKey>,
    pub now: Timestamp,
}

/// Stores a batch of requests in one transaction, on a connection it
/// keeps between batches (`motor_store::held`).
struct Accepting {
    held: Held,
    after_commit: Option<Arc<dyn AfterCommit>>,
}

impl Accepting {
    async fn insert(
        &mut self,
        requests: &[Acceptance<'_>],
    ) -> Result<Vec<Result<Accepted, CommandError>>, StoreError> {
        let mut tx = self.held.conn().await?.begin().await?;
        let answers = store::insert_batch(&mut tx, requests).await?;
        tx.commit().await?;
        Ok(answers)
    }
}

impl Batch for Accepting {
    type Job = Pending;
    type Answer = Result<Accepted, CommandError>;

    async fn commit(&mut self, jobs: &[Pending]) -> Result<Vec<Self::Answer>, StoreError> {
        let requests: Vec<Acceptance<'_>> = jobs
            .iter()
            .map(|p| Acceptance {
                app: p.app,
                instance: p.instance,
                new: &p.new,
                key: p.key.as_ref(),
                now: p.now,
            })
            .collect();
        let inserted = self.insert(&requests).await;
        let answers = self.held.outcome(inserted)?;
        let wrote = answers
            .iter()
            .any(|a| a.as_ref().is_ok_and(|accepted| accepted.created));
        if let (true, Some(after_commit)) = (wrote, &self.after_commit) {
            // The records and events of the batch: wake the relay and the
            // streams' tail now rather than at their next poll.
            after_commit.committed(Handed::default());
        }
        Ok(answers)
    }
}

/// The queue of this process's command requests, and the pool a repeat
/// of an expired request reads (it stores nothing).
#[derive(Clone)]
pub struct Acceptor {
    pub(super) pool: Pool,
    worker: GroupCommit<Accepting>,
}

impl Acceptor {
    /// Starts the worker (it stops when every `Acceptor` is dropped);
    /// `after_commit` is this process's relay, streams and dispatcher, if
    /// any.
    pub fn start(pool: Pool, after_commit: Option<Arc<dyn AfterCommit>>) -> Self {
        let batch = Accepting {
            held: Held::new(pool.clone()),
            after_commit,
        };
        Self {
            pool,
            worker: GroupCommit::start(batch, LIMITS),
        }
    }

    /// Stores `pending` in the next batch; answers once that batch
    /// committed, with the request's own command or refusal.
    pub(super) async fn accept(&self, pending: Pending) -> Result<Accepted> {
        match self.worker.submit(pending).await {
            Ok(answer) => answer.map_err(super::command_error),
            Err(GroupCommitError::Failed(e)) => Err(AppError::store(&e)),
            Err(GroupCommitError::Stopped) => Err(AppError::internal(std::io::Error::other(
                "the command accept stopped",
            ))),
        }
    }
}
