//! Wakes the long-polls of this process waiting on an instance when one of
//! its commands may have become claimable (a command committed, a
//! deferral). Instances hash onto a fixed set of [`Notify`]s: a ring wakes
//! every waiter of the shard, and a waiter woken for another instance of
//! its shard reads once more and waits again. Bounded memory, no
//! registration to clean up. A waiter registers before it reads (see
//! [`Bell::listen`]), so a ring between its read and its wait is not lost.
//!
//! In-process only: a `NOTIFY` in every command's transaction would
//! serialise commits (DESIGN §1, known traps); waiters see other
//! processes' commits at their next periodic read.

use std::{
    hash::{Hash, Hasher},
    sync::Arc,
};

use motor_domain::InstanceId;
use tokio::sync::{futures::OwnedNotified, Notify};

const SHARDS: usize = 64;

/// The wake-up of one process's long-polls; cheap to clone.
#[derive(Clone)]
pub struct Bell(Arc<[Arc<Notify>; SHARDS]>);

impl Default for Bell {
    fn default() -> Self {
        Self(Arc::new(std::array::from_fn(|_| Arc::new(Notify::new()))))
    }
}

impl std::fmt::Debug for Bell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bell")
    }
}

impl Bell {
    fn shard(&self, instance: InstanceId) -> &Arc<Notify> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        instance.hash(&mut hasher);
        &self.0[(hasher.finish() % SHARDS as u64) as usize]
    }

    /// A command of `instance` may be claimable: call after the commit
    /// that made it so (an accepted command, a deferral).
    pub fn ring(&self, instance: InstanceId) {
        self.shard(instance).notify_waiters();
    }

    /// A wake-up for `instance`, registered at once: a [`ring`](Self::ring)
    /// after this call completes the future, even one that came before
    /// it is awaited.
    pub fn listen(&self, instance: InstanceId) -> std::pin::Pin<Box<OwnedNotified>> {
        let mut notified = Box::pin(self.shard(instance).clone().notified_owned());
        notified.as_mut().enable();
        notified
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_ring_after_listen_wakes_the_waiter_even_before_it_waits() {
        let bell = Bell::default();
        let instance = InstanceId::new();
        let woken = bell.listen(instance);
        bell.ring(instance);
        tokio::time::timeout(Duration::from_secs(5), woken)
            .await
            .expect("woken");
    }

    #[tokio::test]
    async fn a_ring_before_listen_is_not_kept() {
        let bell = Bell::default();
        let instance = InstanceId::new();
        bell.ring(instance);
        let woken = bell.listen(instance);
        assert!(tokio::time::timeout(Duration::from_millis(50), woken)
            .await
            .is_err());
    }
}
