//! Values by key, each kept for a while from when its load began: the
//! map under each of [`super::AttemptCache`]'s kinds of value. Split from
//! `cache.rs` by action: this keeps values, that one decides what is kept
//! how long and loads it.
//!
//! A value is loaded once however many attempts ask for it together: the
//! first to miss loads it and the others wait for that load. Before, every
//! attempt that missed while a load was in flight ran the same query: in a
//! fan-out of 60,000 deliveries to 10 subscriptions (about 9,000 a
//! second) the signing keys were read 1,291 times and the settings 765,
//! against 73 and 19 now (docs/BENCHMARKS.md).

use std::{
    collections::HashMap,
    hash::Hash,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use tokio::sync::OnceCell;

use crate::{EngineError, Result};

/// Values a [`Fresh`] holds at most: past it, it starts over (as
/// `motor_api::auth::ApiKeys` does), so that the subscriptions attempted
/// in [`super::KEPT_FOR`] bound neither memory nor a pruning's walk.
pub(super) const CAPACITY: usize = 20_000;

/// Values by key, each kept for `fresh_for` from when its load began.
///
/// Hand-written rather than a caching crate's (`moka`'s `try_get_with`
/// coalesces loads too): a map read under a mutex, with no eviction but
/// age (an entry per subscription attempted lately), is all an attempt
/// needs, and its read is a hash and a clock reading.
pub(super) struct Fresh<K, V> {
    entries: Mutex<Entries<K, Arc<Slot<V>>>>,
}

/// A value being loaded or loaded. Whoever finds it empty waits for the
/// load in flight; when that load fails, those waiting fail with it (each
/// would otherwise make its own try, one after the other, a whole
/// acquire timeout each while Postgres is out of reach), and the next to
/// ask starts a new slot: an error is never kept.
struct Slot<V> {
    value: OnceCell<Arc<V>>,
    failed: AtomicBool,
}

impl<K: Eq + Hash + Clone, V> Fresh<K, V> {
    pub(super) fn new(fresh_for: Duration) -> Self {
        Self {
            entries: Mutex::new(Entries::new(Instant::now(), fresh_for)),
        }
    }

    pub(super) async fn get<F, Fut>(&self, key: &K, load: F) -> Result<Arc<V>>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<V>>,
    {
        let slot = {
            let mut entries = self.entries.lock().expect("not poisoned");
            let now = Instant::now();
            match entries.fresh(key, now) {
                Some(slot) if !slot.failed.load(Ordering::Acquire) => slot.clone(),
                _ => {
                    let slot = Arc::new(Slot {
                        value: OnceCell::new(),
                        failed: AtomicBool::new(false),
                    });
                    entries.insert(key.clone(), slot.clone(), now);
                    slot
                }
            }
        };
        // A value already loaded comes back at once; otherwise this waits
        // for the load in flight, or makes it.
        let value = slot
            .value
            .get_or_try_init(|| async {
                if slot.failed.load(Ordering::Acquire) {
                    return Err(EngineError::Waited);
                }
                let loaded = load().await;
                if loaded.is_err() {
                    slot.failed.store(true, Ordering::Release);
                }
                loaded.map(Arc::new)
            })
            .await?;
        Ok(value.clone())
    }

    /// How long a value loaded now is kept.
    #[cfg(test)]
    pub(super) fn fresh_for(&self) -> Duration {
        self.entries.lock().expect("not poisoned").fresh_for
    }

    /// How many values (or loads) it holds.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.lock().expect("not poisoned").map.len()
    }

    /// Forgets every value, and keeps what is loaded from now on for
    /// `fresh_for` (as long as before: `None`). A load in flight is not
    /// kept: its slot is gone from the map (those already waiting for it
    /// still get it).
    pub(super) fn forget(&self, fresh_for: Option<Duration>) {
        let mut entries = self.entries.lock().expect("not poisoned");
        let fresh = Entries::new(Instant::now(), fresh_for.unwrap_or(entries.fresh_for));
        let forgotten = std::mem::replace(&mut *entries, fresh);
        drop(entries);
        // Dropped outside the lock: up to [`CAPACITY`] values.
        drop(forgotten);
    }
}

/// The values of a [`Fresh`], each with when its load began, and how long
/// each is kept.
pub(super) struct Entries<K, V> {
    pub(super) map: HashMap<K, (Instant, V)>,
    pub(super) fresh_for: Duration,
    pruned_at: Instant,
}

impl<K: Eq + Hash, V> Entries<K, V> {
    pub(super) fn new(now: Instant, fresh_for: Duration) -> Self {
        Self {
            map: HashMap::new(),
            fresh_for,
            pruned_at: now,
        }
    }

    /// The value under `key`, if its load began less than `fresh_for`
    /// before `now`.
    pub(super) fn fresh(&self, key: &K, now: Instant) -> Option<&V> {
        self.map
            .get(key)
            .filter(|(at, _)| now.saturating_duration_since(*at) < self.fresh_for)
            .map(|(_, value)| value)
    }

    /// Keeps `value` under `key` from `now`, and drops the stale values at
    /// most once every `fresh_for`, against `now`: a miss that looked at
    /// every value's age read the clock once per value, and with 10,000
    /// subscriptions (the shapes bench's many tenants, a miss per attempt)
    /// that was 7 % of Motor's CPU. Values live at most twice `fresh_for`,
    /// and [`CAPACITY`] of them at most.
    /// The keys held, in order.
    #[cfg(test)]
    pub(super) fn keys(&self) -> Vec<K>
    where
        K: Ord + Clone,
    {
        let mut keys: Vec<K> = self.map.keys().cloned().collect();
        keys.sort();
        keys
    }

    pub(super) fn insert(&mut self, key: K, value: V, now: Instant) {
        let fresh_for = self.fresh_for;
        if now.saturating_duration_since(self.pruned_at) >= fresh_for {
            self.map
                .retain(|_, (at, _)| now.saturating_duration_since(*at) < fresh_for);
            self.pruned_at = now;
        }
        if self.map.len() >= CAPACITY {
            self.map.clear();
        }
        self.map.insert(key, (now, value));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::super::FRESH_FOR;
    use super::*;

    #[test]
    fn stale_values_go_at_most_once_a_second_and_fresh_ones_stay() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut entries = Entries::new(t0, FRESH_FOR);
        entries.insert(1, "a", t0);
        entries.insert(2, "b", t0 + ms(500));
        assert_eq!(entries.keys(), [1, 2]);
        // A second since the last pruning: 1 is stale, 2 is not.
        entries.insert(3, "c", t0 + ms(1200));
        assert_eq!(entries.keys(), [2, 3]);
        // 2 is stale now, but the last pruning was half a second ago.
        entries.insert(4, "d", t0 + ms(1700));
        assert_eq!(entries.keys(), [2, 3, 4]);
        entries.insert(5, "e", t0 + ms(2300));
        assert_eq!(entries.keys(), [4, 5]);
        // A value loaded again replaces the one before it.
        entries.insert(5, "f", t0 + ms(2400));
        assert_eq!(entries.map[&5].1, "f");
        assert_eq!(entries.map[&5].0, t0 + ms(2400));
    }

    /// Asks `fresh` for `key` from 20 tasks at once, each with a load
    /// that takes 50 ms and yields `Some` value or fails on `None`: what
    /// each got, and how many loads ran. Time is paused, so the loads'
    /// timers fire only once every task waits: all 20 ask together.
    async fn ask_together(
        fresh: &Arc<Fresh<u32, u32>>,
        key: u32,
        outcome: Option<u32>,
    ) -> (Vec<Result<Arc<u32>>>, usize) {
        let loads = Arc::new(AtomicUsize::new(0));
        let mut askers = tokio::task::JoinSet::new();
        for _ in 0..20 {
            let (fresh, loads) = (fresh.clone(), loads.clone());
            askers.spawn(async move {
                fresh
                    .get(&key, || async {
                        loads.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        outcome.ok_or(EngineError::Lost)
                    })
                    .await
            });
        }
        let got = askers.join_all().await;
        (got, loads.load(Ordering::SeqCst))
    }

    #[tokio::test(start_paused = true)]
    async fn a_value_asked_for_together_is_loaded_once_and_a_failed_load_fails_its_waiters_only() {
        let fresh = Arc::new(Fresh::<u32, u32>::new(FRESH_FOR));
        let (got, loads) = ask_together(&fresh, 1, Some(7)).await;
        assert!(got.iter().all(|v| v.as_deref().is_ok_and(|v| *v == 7)));
        assert_eq!(loads, 1, "one load for 20 askers");

        // Those waiting for a load that fails fail with it, without a try
        // of their own; the next to ask loads again.
        let (got, tries) = ask_together(&fresh, 2, None).await;
        assert!(got.iter().all(Result::is_err));
        assert_eq!(tries, 1, "one try for 20 askers");
        let again = AtomicUsize::new(0);
        let value = fresh
            .get(&2, || async {
                again.fetch_add(1, Ordering::SeqCst);
                Ok(9)
            })
            .await
            .expect("loaded");
        assert_eq!(*value, 9);
        assert_eq!(
            again.load(Ordering::SeqCst),
            1,
            "a new load after the failure"
        );
    }
}
