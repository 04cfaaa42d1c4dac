//! What every attempt reads but rarely changes — operator settings, an
//! app's allowed destinations and destination policy, a subscription's signing (its profile and
//! sealed keys, and those keys opened) and broker credentials (all per
//! version of the subscription) and whether it is ordered — kept, so an
//! attempt costs its claim, its request and its record and not three more
//! queries.
//!
//! What has no version (settings, an app, whether a subscription is
//! ordered) is trusted while Postgres announces its changes: migration
//! 0032 notifies `motor_attempt_reads` at the commit of every statement
//! that changes them, the dispatcher listens there
//! ([`crate::Dispatcher::heard`]) and each announcement forgets
//! them all. While a connection listens they are kept for [`LISTENED`]
//! (the bound for a listener that hears nothing although they change);
//! without one, for a second ([`FRESH_FOR`]). A destination removed from
//! a list is caught at the next attempt after the announcement. Kept for a
//! second always, they were read again at nearly every attempt with many
//! tenants: each of 10,000 subscriptions (2,000 apps) attempted every 10
//! s, its app every 2 s (docs/BENCHMARKS.md, 2026-12-06).
//!
//! Signing and credentials are exact: a rotation,
//! a change of `firma`, `contrato` or `credenciales` bumps the
//! subscription's version, which the claim returns, and they are kept per
//! version for [`KEPT_FOR`], read again only so that memory holds the
//! subscriptions attempted lately. Kept for a second too, they were read
//! again at nearly every attempt of a subscription that gets an event every
//! few seconds: with 10,000 such subscriptions (the shapes bench's many
//! tenants), a query and the keys opened again an attempt
//! (docs/BENCHMARKS.md, 2026-12-06 15:20).
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

use motor_domain::{
    credentials::{credentials_aad, BrokerCredentials},
    keyring::OpenedKeys,
    operator::App,
    seal::SealingKey,
    settings::Settings,
    subscription::SubscriptionId,
    AppId,
};
use motor_metrics::Metrics;
use motor_store::{changes::Heard, subscriptions::Signing, Pool};

use crate::{EngineError, Result};

/// How long a value without a version is kept while nobody listens for
/// its changes.
const FRESH_FOR: Duration = Duration::from_secs(1);

/// How long a value without a version is kept while a connection listens
/// for its changes (as an API key is).
pub(super) const LISTENED: Duration = motor_store::changes::TRUSTED_WHILE_LISTENING;

/// How long a value of one version of a subscription is kept.
const KEPT_FOR: Duration = Duration::from_secs(600);

/// Values a [`Fresh`] holds at most: past it, it starts over (as
/// `motor_api::auth::ApiKeys` does), so that the subscriptions attempted
/// in [`KEPT_FOR`] bound neither memory nor a pruning's walk.
const CAPACITY: usize = 20_000;

/// Values by key, each kept for `fresh_for` from when its load began.
///
/// Hand-written rather than a caching crate's (`moka`'s `try_get_with`
/// coalesces loads too): a map read under a mutex, with no eviction but
/// age (an entry per subscription attempted lately), is all an attempt
/// needs, and its read is a hash and a clock reading.
struct Fresh<K, V> {
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
    fn new(fresh_for: Duration) -> Self {
        Self {
            entries: Mutex::new(Entries::new(Instant::now(), fresh_for)),
        }
    }

    async fn get<F, Fut>(&self, key: &K, load: F) -> Result<Arc<V>>
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

    /// Forgets every value, and keeps what is loaded from now on for
    /// `fresh_for` (as long as before: `None`). A load in flight is not
    /// kept: its slot is gone from the map (those already waiting for it
    /// still get it).
    fn forget(&self, fresh_for: Option<Duration>) {
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
struct Entries<K, V> {
    map: HashMap<K, (Instant, V)>,
    fresh_for: Duration,
    pruned_at: Instant,
}

impl<K: Eq + Hash, V> Entries<K, V> {
    fn new(now: Instant, fresh_for: Duration) -> Self {
        Self {
            map: HashMap::new(),
            fresh_for,
            pruned_at: now,
        }
    }

    /// The value under `key`, if its load began less than `fresh_for`
    /// before `now`.
    fn fresh(&self, key: &K, now: Instant) -> Option<&V> {
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
    fn insert(&mut self, key: K, value: V, now: Instant) {
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

pub(super) struct AttemptCache {
    /// Counts the loads of what has no version (`attempt_lookups`).
    metrics: Arc<Metrics>,
    settings: Fresh<(), Settings>,
    apps: Fresh<AppId, App>,
    signing: Fresh<(SubscriptionId, i64), Signing>,
    keys: Fresh<(SubscriptionId, i64), OpenedKeys>,
    credentials: Fresh<(SubscriptionId, i64), Option<BrokerCredentials>>,
    ordered: Fresh<SubscriptionId, bool>,
}

impl AttemptCache {
    pub(super) fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            metrics,
            settings: Fresh::new(FRESH_FOR),
            apps: Fresh::new(FRESH_FOR),
            signing: Fresh::new(KEPT_FOR),
            keys: Fresh::new(KEPT_FOR),
            credentials: Fresh::new(KEPT_FOR),
            ordered: Fresh::new(FRESH_FOR),
        }
    }

    /// What the listener for changes heard (`motor_store::changes::follow`):
    /// the values without a version are forgotten at each, and kept for
    /// [`LISTENED`] while a connection listens, [`FRESH_FOR`] otherwise.
    /// Those of a version are exact and stay.
    pub(super) fn heard(&self, heard: Heard) {
        let fresh_for = match heard {
            Heard::Listening => Some(LISTENED),
            Heard::Changed => None,
            Heard::Deaf => Some(FRESH_FOR),
        };
        self.settings.forget(fresh_for);
        self.apps.forget(fresh_for);
        self.ordered.forget(fresh_for);
    }

    pub(super) async fn settings(&self, pool: &Pool) -> Result<Arc<Settings>> {
        self.settings
            .get(&(), || async {
                self.metrics.attempt_lookups.inc();
                Ok(motor_store::settings::load(pool).await?)
            })
            .await
    }

    /// The app: its allowed destinations and `politica_destinos`.
    pub(super) async fn app(&self, pool: &Pool, app: AppId) -> Result<Arc<App>> {
        self.apps
            .get(&app, || async {
                self.metrics.attempt_lookups.inc();
                Ok(motor_store::operator::get_app(pool, app).await?)
            })
            .await
    }

    /// The signing profile, contract and live keys of a subscription at
    /// `version`: a rotation, a new `firma` or a new `contrato` bumps the version, so the first attempt
    /// after it reads the new set (every delivery during a rotation's
    /// window carries both signatures). A subscription that is gone signs
    /// with nothing (its claim found nothing anyway).
    pub(super) async fn signing(
        &self,
        pool: &Pool,
        subscription: SubscriptionId,
        version: i64,
    ) -> Result<Arc<Signing>> {
        self.signing
            .get(&(subscription, version), || async {
                Ok(motor_store::subscriptions::signing(pool, subscription)
                    .await?
                    .unwrap_or(Signing {
                        profile: Default::default(),
                        contract: Default::default(),
                        environment: Default::default(),
                        keys: Vec::new(),
                    }))
            })
            .await
    }

    /// The signing keys of a subscription at `version` ([`Self::signing`]'s),
    /// opened (each attempt takes the live ones).
    pub(super) async fn keys(
        &self,
        pool: &Pool,
        sealing: &SealingKey,
        subscription: SubscriptionId,
        version: i64,
    ) -> Result<Arc<OpenedKeys>> {
        self.keys
            .get(&(subscription, version), || async {
                let signing = self.signing(pool, subscription, version).await?;
                Ok(OpenedKeys::open(sealing, subscription, &signing.keys))
            })
            .await
    }

    /// The broker login of a subscription at `version`, opened (a `PATCH`
    /// of `credenciales` bumps the version). Sealed credentials that do not
    /// open read as none, and are logged: the broker then refuses the
    /// default login and the subscription is suspended, visibly.
    pub(super) async fn credentials(
        &self,
        pool: &Pool,
        sealing: &SealingKey,
        subscription: SubscriptionId,
        version: i64,
    ) -> Result<Arc<Option<BrokerCredentials>>> {
        self.credentials
            .get(&(subscription, version), || async {
                let Some(sealed) =
                    motor_store::subscriptions::sealed_credentials(pool, subscription).await?
                else {
                    return Ok(None);
                };
                let opened = sealing
                    .open(&sealed, &credentials_aad(subscription.as_uuid()))
                    .ok()
                    .and_then(|plain| BrokerCredentials::from_plaintext(&plain));
                if opened.is_none() {
                    tracing::error!(subscription = %subscription, "broker credentials do not open");
                }
                Ok(opened)
            })
            .await
    }

    /// Whether the subscription is ordered (a missing one counts as
    /// ordered: its claim finds nothing).
    pub(super) async fn ordered(&self, pool: &Pool, subscription: SubscriptionId) -> Result<bool> {
        let ordered = self
            .ordered
            .get(&subscription, || async {
                self.metrics.attempt_lookups.inc();
                Ok(motor_store::subscriptions::is_ordered(pool, subscription)
                    .await?
                    .unwrap_or(true))
            })
            .await?;
        Ok(*ordered)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    fn keys(entries: &Entries<u32, &'static str>) -> Vec<u32> {
        let mut keys: Vec<u32> = entries.map.keys().copied().collect();
        keys.sort();
        keys
    }

    #[test]
    fn stale_values_go_at_most_once_a_second_and_fresh_ones_stay() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut entries = Entries::new(t0, FRESH_FOR);
        entries.insert(1, "a", t0);
        entries.insert(2, "b", t0 + ms(500));
        assert_eq!(keys(&entries), [1, 2]);
        // A second since the last pruning: 1 is stale, 2 is not.
        entries.insert(3, "c", t0 + ms(1200));
        assert_eq!(keys(&entries), [2, 3]);
        // 2 is stale now, but the last pruning was half a second ago.
        entries.insert(4, "d", t0 + ms(1700));
        assert_eq!(keys(&entries), [2, 3, 4]);
        entries.insert(5, "e", t0 + ms(2300));
        assert_eq!(keys(&entries), [4, 5]);
        // A value loaded again replaces the one before it.
        entries.insert(5, "f", t0 + ms(2400));
        assert_eq!(entries.map[&5].1, "f");
        assert_eq!(entries.map[&5].0, t0 + ms(2400));
    }

    fn kept_for<K, V>(fresh: &Fresh<K, V>) -> Duration {
        fresh.entries.lock().unwrap().fresh_for
    }

    #[test]
    fn a_versions_values_outlive_a_second_within_a_bound_and_the_others_do_not() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let cache = AttemptCache::new(Arc::new(Metrics::default()));
        // Exact per version: kept across the pruning a second would do.
        for fresh_for in [
            kept_for(&cache.signing),
            kept_for(&cache.keys),
            kept_for(&cache.credentials),
        ] {
            assert_eq!(fresh_for, KEPT_FOR);
            let mut entries = Entries::new(t0, fresh_for);
            entries.insert(1, "v1", t0);
            entries.insert(2, "v2", t0 + s(5));
            assert_eq!(keys(&entries), [1, 2]);
            assert_eq!(entries.fresh(&1, t0 + s(5)), Some(&"v1"), "found again");
            assert_eq!(entries.fresh(&1, t0 + KEPT_FOR), None, "loaded again");
            entries.insert(3, "v3", t0 + s(6) + KEPT_FOR);
            assert_eq!(keys(&entries), [3], "gone once loaded longer ago");
        }
        // Bounded: a full map starts over.
        let mut entries = Entries::new(t0, KEPT_FOR);
        for k in 0..CAPACITY as u32 {
            entries.insert(k, "v", t0);
        }
        assert_eq!(entries.map.len(), CAPACITY);
        entries.insert(u32::MAX, "v", t0 + s(1));
        assert_eq!(keys(&entries), [u32::MAX]);
        // No version: a second.
        for fresh_for in [
            kept_for(&cache.settings),
            kept_for(&cache.apps),
            kept_for(&cache.ordered),
        ] {
            assert_eq!(fresh_for, FRESH_FOR);
            let mut entries = Entries::new(t0, fresh_for);
            entries.insert(1, "v1", t0);
            assert_eq!(
                entries.fresh(&1, t0 + Duration::from_millis(900)),
                Some(&"v1")
            );
            assert_eq!(entries.fresh(&1, t0 + s(1)), None, "loaded again");
        }
    }

    /// Loads `ordered` for `sub` if it is not kept: whether it loaded.
    async fn loads(cache: &AttemptCache, sub: SubscriptionId) -> bool {
        let loaded = AtomicBool::new(false);
        cache
            .ordered
            .get(&sub, || async {
                loaded.store(true, Ordering::SeqCst);
                Ok(true)
            })
            .await
            .expect("loaded");
        loaded.load(Ordering::SeqCst)
    }

    #[tokio::test]
    async fn what_has_no_version_is_trusted_while_changes_are_heard_and_forgotten_at_each() {
        let cache = AttemptCache::new(Arc::new(Metrics::default()));
        let (sub, other) = (SubscriptionId::new(), SubscriptionId::new());
        let credentials = |cache: &AttemptCache| {
            let entries = cache.credentials.entries.lock().unwrap();
            (entries.map.len(), entries.fresh_for)
        };
        cache
            .credentials
            .get(&(sub, 1), || async { Ok(None) })
            .await
            .unwrap();
        assert!(loads(&cache, sub).await);

        // A connection listens: what was read before is forgotten (its
        // changes went unheard), what is read now is kept longer.
        cache.heard(Heard::Listening);
        for fresh_for in [
            kept_for(&cache.settings),
            kept_for(&cache.apps),
            kept_for(&cache.ordered),
        ] {
            assert_eq!(fresh_for, LISTENED);
        }
        assert!(loads(&cache, sub).await, "read before listening");
        assert!(!loads(&cache, sub).await, "kept");
        assert!(loads(&cache, other).await);

        // A change announced: everything without a version read again,
        // still kept as long; a version's values stay.
        cache.heard(Heard::Changed);
        assert_eq!(kept_for(&cache.ordered), LISTENED);
        assert!(loads(&cache, sub).await, "read again after a change");
        assert!(loads(&cache, other).await, "read again after a change");
        assert!(!loads(&cache, sub).await);
        assert_eq!(credentials(&cache), (1, KEPT_FOR));

        // Nobody listens: forgotten, and kept for a second again.
        cache.heard(Heard::Deaf);
        assert_eq!(kept_for(&cache.ordered), FRESH_FOR);
        assert!(loads(&cache, sub).await, "read again once deaf");
        assert_eq!(credentials(&cache), (1, KEPT_FOR));
    }

    #[tokio::test]
    async fn a_load_in_flight_when_a_change_is_heard_serves_its_waiters_and_is_not_kept() {
        let cache = Arc::new(AttemptCache::new(Arc::new(Metrics::default())));
        cache.heard(Heard::Listening);
        let sub = SubscriptionId::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let asking = tokio::spawn({
            let cache = cache.clone();
            async move {
                cache
                    .ordered
                    .get(&sub, || async {
                        rx.await.unwrap();
                        Ok(false)
                    })
                    .await
            }
        });
        // The load has begun (its slot is in the map) when the change is
        // heard, and ends after it.
        while cache.ordered.entries.lock().unwrap().map.is_empty() {
            tokio::task::yield_now().await;
        }
        cache.heard(Heard::Changed);
        tx.send(()).unwrap();
        assert!(!*asking.await.unwrap().unwrap(), "its waiter got it");
        assert!(loads(&cache, sub).await, "not kept past the change");
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
