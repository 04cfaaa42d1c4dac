//! An unordered subscription in one process: the slots that bound its
//! requests in flight and the count of its chains that claim ahead.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::UNORDERED_PER_SUBSCRIPTION;

/// Chains of one unordered subscription in one process that claim their
/// next delivery when they record one (each then holds one claimed delivery
/// until one of the [`UNORDERED_PER_SUBSCRIPTION`] slots is free). More
/// chains than slots keep the slots busy while records commit; a chain
/// beyond this many ends after its attempt, so a burst of jobs never turns
/// into an unbounded number of claimed deliveries waiting in memory.
const UNORDERED_CHAINS: usize = 8 * UNORDERED_PER_SUBSCRIPTION;

/// One unordered subscription in this process: its request slots and its
/// running chains.
pub(super) struct Unordered {
    slots: Arc<Semaphore>,
    chains: Arc<AtomicUsize>,
}

impl Default for Unordered {
    fn default() -> Self {
        Self {
            slots: Arc::new(Semaphore::new(UNORDERED_PER_SUBSCRIPTION)),
            chains: Arc::default(),
        }
    }
}

impl Unordered {
    pub(super) async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.clone().acquire_owned().await.ok()
    }

    /// Counts a chain while the guard lives.
    pub(super) fn running(&self) -> Running {
        self.chains.fetch_add(1, Ordering::Relaxed);
        Running(self.chains.clone())
    }

    /// More chains run than may claim a next delivery.
    pub(super) fn crowded(&self) -> bool {
        self.chains.load(Ordering::Relaxed) > UNORDERED_CHAINS
    }
}

pub(super) struct Running(Arc<AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
