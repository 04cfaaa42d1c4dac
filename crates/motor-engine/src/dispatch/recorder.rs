//! Group commit of the hot finish. Attempts that ended `entregada` (most
//! claiming the next delivery of their chain) are recorded in batches by
//! the store's one group-commit worker (`motor_store::group_commit`, which
//! says how batches form and what one batch in flight was measured to
//! save) — one statement for the whole batch
//! (`motor_store::deliveries::record_delivered_many`) instead of one
//! commit each. Every other outcome (retry, failure, suspension) is rarer
//! and recorded on its own.
//!
//! A record nothing is known to wait behind (the first of an ordered
//! lane's chain, with no later delivery of its lane handed to the chain;
//! or an unordered subscription's first, while no more of its chains run
//! here than it has request slots: `step::choices::lingers`) is patient: it lingers up to [`LINGER`] for others to share its commit,
//! and commits at once when one that is not patient comes, or when a
//! commit of this process hands its lane a delivery meanwhile
//! ([`Recorder::hurry`]). At a steady low rate every record was such a
//! first one, and each cost a commit of its own.

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
/// hot lane's, never waits); the linger is the dispatcher's (`start`).
const LIMITS: Limits = Limits {
    max_jobs: 256,
    max_weight: 256,
    queue: 8_192,
    gather: Some(Duration::from_millis(1)),
    pace: None,
    linger: None,
};

/// How long a patient record waits for others at most, by default
/// (`MOTOR_RECORD_LINGER_MS`). What it can delay is the next delivery of
/// its lane when another process committed it (this process's commits
/// hurry the record), and the delivery's state as the API shows it.
pub(super) const LINGER: Duration = Duration::from_millis(20);

/// One delivered attempt to record.
struct Pending {
    claimed: Box<Claimed>,
    attempt: Attempt,
    next: Next,
    patient: bool,
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

    fn patient(job: &Pending) -> bool {
        job.patient
    }
}

pub(super) struct Recorder {
    worker: GroupCommit<Recording>,
}

impl Recorder {
    /// Starts the worker; patient records wait up to `linger` (none when
    /// zero).
    pub(super) fn start(pool: Pool, linger: Duration) -> Self {
        let limits = Limits {
            linger: (!linger.is_zero()).then_some(linger),
            ..LIMITS
        };
        Self {
            worker: GroupCommit::start(
                Recording {
                    held: Held::new(pool),
                },
                limits,
            ),
        }
    }

    /// Records `claimed`'s attempt as delivered, claiming the next delivery
    /// of its chain when `next` says so and one can be claimed now; a
    /// `patient` record may linger for others.
    pub(super) async fn delivered(
        &self,
        claimed: Box<Claimed>,
        attempt: Attempt,
        next: Next,
        patient: bool,
    ) -> Result<Recorded> {
        self.worker
            .submit(Pending {
                claimed,
                attempt,
                next,
                patient,
            })
            .await
            .map_err(EngineError::from)
    }

    /// A record under way has a delivery waiting behind it now: the batch
    /// commits without lingering further.
    pub(super) fn hurry(&self) {
        self.worker.hurry();
    }
}
