//! Keys in flight of `clave`-ordered subscriptions in one process. A key's
//! lane (`live/<orden_clave>`, or a replay's) is a lane like any other —
//! claimed, parked and chained one delivery at a time by the same
//! statements — so keys already never overlap; this only bounds how many
//! keys of one subscription have a request in flight at once (the setting
//! `webhooks.claves_en_vuelo`). It is asked by the lane (one with a key),
//! never by the contract; lanes without a key take no slot.
//!
//! The count is this process's alone (nothing shared): with N processes
//! dispatching, one subscription may have up to N × the setting keys in
//! flight. The per-key rule is global (a lane is claimed in Postgres).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use motor_domain::subscription::SubscriptionId;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Each subscription's slots, sized by the setting as last read.
#[derive(Default)]
pub(super) struct KeySlots {
    subscriptions: Mutex<HashMap<SubscriptionId, (usize, Arc<Semaphore>)>>,
}

impl KeySlots {
    /// A slot of `subscription`'s keys, waiting for one (in order of
    /// asking) while `bound` are taken. A new bound takes effect at once
    /// for new slots (those held under the old one end with their
    /// requests).
    pub(super) async fn slot(
        &self,
        subscription: SubscriptionId,
        bound: usize,
    ) -> OwnedSemaphorePermit {
        let bound = bound.max(1);
        let slots = {
            let mut subscriptions = self.subscriptions.lock().expect("not poisoned");
            let entry = subscriptions
                .entry(subscription)
                .or_insert_with(|| (bound, Arc::new(Semaphore::new(bound))));
            if entry.0 != bound {
                *entry = (bound, Arc::new(Semaphore::new(bound)));
            }
            entry.1.clone()
        };
        slots
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_subscription_has_bound_keys_in_flight_and_others_their_own() {
        let slots = KeySlots::default();
        let (a, b) = (SubscriptionId::new(), SubscriptionId::new());
        let held: Vec<_> = futures_join(&slots, a, 3).await;
        assert_eq!(held.len(), 3);
        let fourth = tokio::time::timeout(Duration::from_millis(50), slots.slot(a, 3)).await;
        assert!(
            fourth.is_err(),
            "a fourth key waits while three are in flight"
        );
        let other = tokio::time::timeout(Duration::from_millis(50), slots.slot(b, 3)).await;
        assert!(other.is_ok(), "another subscription does not wait");
        drop(held);
        let after = tokio::time::timeout(Duration::from_millis(50), slots.slot(a, 3)).await;
        assert!(after.is_ok(), "a slot given back is taken");
    }

    #[tokio::test]
    async fn a_new_bound_applies_to_new_slots() {
        let slots = KeySlots::default();
        let a = SubscriptionId::new();
        let _one = slots.slot(a, 1).await;
        let more = tokio::time::timeout(Duration::from_millis(50), slots.slot(a, 2)).await;
        assert!(more.is_ok(), "raised to 2: a fresh set of slots");
    }

    async fn futures_join(
        slots: &KeySlots,
        subscription: SubscriptionId,
        n: usize,
    ) -> Vec<OwnedSemaphorePermit> {
        let mut held = Vec::new();
        for _ in 0..n {
            held.push(slots.slot(subscription, n).await);
        }
        held
    }
}
