//! Group commit of the hot finish. Attempts that ended `entregada` (most
//! claiming the next delivery of their chain) are recorded in batches by
//! the store's one group-commit worker (`motor_store::group_commit`, which
//! says how batches form and what one batch in flight was measured to
//! save) — one statement for the whole batch
//! (`motor_store::deliveries::record_delivered_many`) instead of one
//! commit each. Every other outcome (retry, failure, suspension) is rarer
//! and recorded on its own.

use std::time::Duration;

use motor_store::{
    deliveries::{self, Attempt, Claimed, Next, Recorded},
    group_commit::{Batch, GroupCommit, Limits},
    held::Held,
    Pool, StoreError,
};

use crate::{EngineError, Result};

/// Attempts a batch records at most; attempts waiting at most; a batch of
/// several attempts waits one timer tick for more (a lone one, a single
/// hot lane's, never waits).
const LIMITS: Limits = Limits {
    max_jobs: 256,
    max_weight: 256,
    queue: 8_192,
    gather: Some(Duration::from_millis(1)),
    pace: None,
};

/// One delivered attempt to record.
struct Pending {
    claimed: Box<Claimed>,
    attempt: Attempt,
    next: Next,
}

/// Records a batch of delivered attempts in one transaction, on a
/// connection it keeps between batches (`motor_store::held`: no pool
/// round trips).
struct Recording {
    held: Held,
}

impl Batch for Recording {
    type Job = Pending;
    type Answer = Recorded;

    async fn commit(&mut self, jobs: &[Pending]) -> Result<Vec<Recorded>, StoreError> {
        let done: Vec<(&Claimed, &Attempt, Next)> = jobs
            .iter()
            .map(|p| (p.claimed.as_ref(), &p.attempt, p.next))
            .collect();
        let recorded = deliveries::record_delivered_many_on(self.held.conn().await?, &done).await;
        self.held.outcome(recorded)
    }
}

pub(super) struct Recorder {
    worker: GroupCommit<Recording>,
}

impl Recorder {
    pub(super) fn start(pool: Pool) -> Self {
        Self {
            worker: GroupCommit::start(
                Recording {
                    held: Held::new(pool),
                },
                LIMITS,
            ),
        }
    }

    /// Records `claimed`'s attempt as delivered, claiming the next delivery
    /// of its chain when `next` says so and one can be claimed now.
    pub(super) async fn delivered(
        &self,
        claimed: Box<Claimed>,
        attempt: Attempt,
        next: Next,
    ) -> Result<Recorded> {
        self.worker
            .submit(Pending {
                claimed,
                attempt,
                next,
            })
            .await
            .map_err(EngineError::from)
    }
}
