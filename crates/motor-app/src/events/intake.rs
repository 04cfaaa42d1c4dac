//! The intake: producer requests of this process group-committed
//! (`motor_store::group_commit`, which says how batches form and what that
//! was measured to save), through the process's writer
//! (`motor_store::writer`, which also records the dispatcher's delivered
//! attempts when one runs here). One batch is one transaction
//! (`motor_store::ledger::append_batch`: instances locked in id order,
//! then one statement whatever the batch holds) and one commit; then the
//! dispatcher of this process is handed its first attempts and each
//! request answered with its own envelopes and seqs. An instance's
//! requests keep their order.

use std::sync::Arc;

use motor_domain::{InstanceId, NewEvent};
use motor_store::{
    deliveries::AfterCommit,
    group_commit::{GroupCommitError, Limits},
    ledger::Appended,
    writer::Writer,
    Pool,
};

use crate::{AppError, Result};

/// Jobs a batch takes at most (requests, and delivered attempts of this
/// process's dispatcher); events at most (a request is never split: a
/// batch may pass this by one request); jobs waiting at most (past it a
/// request waits for room).
const LIMITS: Limits = Limits {
    max_jobs: 256,
    max_weight: 2_000,
    queue: 4_096,
};

/// The queue of producer requests of this process.
#[derive(Clone)]
pub struct Intake {
    writer: Writer,
}

impl Intake {
    /// Starts the worker (it stops when every `Intake` is dropped);
    /// `after_commit` is this process's dispatcher and relay, if any: the
    /// dispatcher records its delivered attempts in the same batches
    /// (`motor_store::writer`).
    pub fn start(pool: Pool, after_commit: Option<Arc<dyn AfterCommit>>) -> Self {
        Self {
            writer: Writer::start(pool, after_commit, LIMITS),
        }
    }

    /// Appends `events` to `instance`'s ledger in the next batch; answers
    /// once that batch committed.
    pub async fn append(&self, instance: InstanceId, events: Vec<NewEvent>) -> Result<Appended> {
        self.writer
            .append(instance, events)
            .await
            .map_err(|e| match e {
                GroupCommitError::Failed(e) => AppError::store(&e),
                GroupCommitError::Stopped => {
                    AppError::internal(std::io::Error::other("the intake stopped"))
                }
            })
    }
}
