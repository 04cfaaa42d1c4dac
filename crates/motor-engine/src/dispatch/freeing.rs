//! Group commit of the looks for freed lanes. A chain whose record claimed
//! no next delivery, and each commit that handed first attempts over
//! parked, looks whether their lanes freed meanwhile
//! (`motor_store::deliveries::claim_freed`): one call of
//! `motor_claim_freed`, a transaction of its own. In the closed loops of
//! one ordered subscription those looks were more than half of Postgres's
//! write transactions (the TLS shape, 20,000 events: 2,082 looks, 2 lanes
//! each, beside 628 appends and 674 records; docs/BENCHMARKS.md,
//! 2026-12-07). Here the looks under way at once share one call, as the
//! records share theirs (`recorder`): the store's group-commit worker
//! takes whatever is queued, one call in flight, and never waits for
//! more, so a lone look costs what it did.

use std::time::Duration;

use motor_domain::delivery::DeliveryId;
use motor_store::{
    deliveries::{self, Freed},
    group_commit::{Batch, GroupCommit, Limits},
    Pool, StoreError,
};

use crate::Result;

/// Looks a call takes at most, and the deliveries they give; looks
/// waiting at most. No gather, pace or linger: a chain waits for the
/// answer to go on.
const LIMITS: Limits = Limits {
    max_jobs: 256,
    max_weight: 1_024,
    queue: 8_192,
    gather: None,
    pace: None,
    linger: None,
};

/// One caller's look: its parked deliveries and the lease of what it
/// claims.
struct Look {
    parked: Vec<DeliveryId>,
    lease: Duration,
}

/// Makes a batch of looks in one call, on a connection of the pool taken
/// for it. (Kept between calls as the recorder keeps its own —
/// `motor_store::held` — the worker held a connection while no look came,
/// and a system test's Motor then never finished stopping:
/// `dispatch::linger::a_delivery_committed_behind_a_lingering_record_hurries_it`.)
struct Looking {
    pool: Pool,
}

impl Batch for Looking {
    type Job = Look;
    type Answer = Freed;

    async fn commit(&mut self, jobs: &[Look]) -> Result<Vec<Freed>, StoreError> {
        let callers: Vec<&[DeliveryId]> = jobs.iter().map(|j| j.parked.as_slice()).collect();
        // One lease for the call: the longest asked (they are the same
        // setting but for a change between two claims).
        let lease = jobs.iter().map(|j| j.lease).max().unwrap_or_default();
        deliveries::look_freed(&self.pool, &callers, lease).await
    }

    fn weight(job: &Look) -> usize {
        job.parked.len().max(1)
    }
}

pub(super) struct Freeing {
    worker: GroupCommit<Looking>,
}

impl Freeing {
    pub(super) fn start(pool: Pool) -> Self {
        Self {
            worker: GroupCommit::start(Looking { pool }, LIMITS),
        }
    }

    /// Claims, for `lease`, those of `parked` whose lane freed
    /// (`deliveries::claim_freed`), each look shared with the others under
    /// way.
    pub(super) async fn claim(
        &self,
        pool: &Pool,
        parked: &[DeliveryId],
        lease: Duration,
    ) -> Result<Vec<deliveries::Claimed>> {
        deliveries::claim_freed_by(pool, parked, lease, |parked| async move {
            Ok(self.worker.submit(Look { parked, lease }).await?)
        })
        .await
    }
}
