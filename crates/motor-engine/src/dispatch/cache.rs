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
//! The map under each kind of value, which loads a value once however
//! many attempts ask for it together, is `cache/fresh.rs`.

mod fresh;

use std::{sync::Arc, time::Duration};

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

use self::fresh::Fresh;
use crate::Result;

/// How long a value without a version is kept while nobody listens for
/// its changes.
const FRESH_FOR: Duration = Duration::from_secs(1);

/// How long a value without a version is kept while a connection listens
/// for its changes (as an API key is).
const LISTENED: Duration = motor_store::changes::TRUSTED_WHILE_LISTENING;

/// How long a value of one version of a subscription is kept.
const KEPT_FOR: Duration = Duration::from_secs(600);

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
    use std::{
        sync::atomic::{AtomicBool, Ordering},
        time::Instant,
    };

    use super::fresh::{Entries, CAPACITY};
    use super::*;

    #[test]
    fn a_versions_values_outlive_a_second_within_a_bound_and_the_others_do_not() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let cache = AttemptCache::new(Arc::new(Metrics::default()));
        // Exact per version: kept across the pruning a second would do.
        for fresh_for in [
            cache.signing.fresh_for(),
            cache.keys.fresh_for(),
            cache.credentials.fresh_for(),
        ] {
            assert_eq!(fresh_for, KEPT_FOR);
            let mut entries = Entries::new(t0, fresh_for);
            entries.insert(1, "v1", t0);
            entries.insert(2, "v2", t0 + s(5));
            assert_eq!(entries.keys(), [1, 2]);
            assert_eq!(entries.fresh(&1, t0 + s(5)), Some(&"v1"), "found again");
            assert_eq!(entries.fresh(&1, t0 + KEPT_FOR), None, "loaded again");
            entries.insert(3, "v3", t0 + s(6) + KEPT_FOR);
            assert_eq!(entries.keys(), [3], "gone once loaded longer ago");
        }
        // Bounded: a full map starts over.
        let mut entries = Entries::new(t0, KEPT_FOR);
        for k in 0..CAPACITY as u32 {
            entries.insert(k, "v", t0);
        }
        assert_eq!(entries.map.len(), CAPACITY);
        entries.insert(u32::MAX, "v", t0 + s(1));
        assert_eq!(entries.keys(), [u32::MAX]);
        // No version: a second.
        for fresh_for in [
            cache.settings.fresh_for(),
            cache.apps.fresh_for(),
            cache.ordered.fresh_for(),
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
        let credentials =
            |cache: &AttemptCache| (cache.credentials.len(), cache.credentials.fresh_for());
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
            cache.settings.fresh_for(),
            cache.apps.fresh_for(),
            cache.ordered.fresh_for(),
        ] {
            assert_eq!(fresh_for, LISTENED);
        }
        assert!(loads(&cache, sub).await, "read before listening");
        assert!(!loads(&cache, sub).await, "kept");
        assert!(loads(&cache, other).await);

        // A change announced: everything without a version read again,
        // still kept as long; a version's values stay.
        cache.heard(Heard::Changed);
        assert_eq!(cache.ordered.fresh_for(), LISTENED);
        assert!(loads(&cache, sub).await, "read again after a change");
        assert!(loads(&cache, other).await, "read again after a change");
        assert!(!loads(&cache, sub).await);
        assert_eq!(credentials(&cache), (1, KEPT_FOR));

        // Nobody listens: forgotten, and kept for a second again.
        cache.heard(Heard::Deaf);
        assert_eq!(cache.ordered.fresh_for(), FRESH_FOR);
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
        while cache.ordered.len() == 0 {
            tokio::task::yield_now().await;
        }
        cache.heard(Heard::Changed);
        tx.send(()).unwrap();
        assert!(!*asking.await.unwrap().unwrap(), "its waiter got it");
        assert!(loads(&cache, sub).await, "not kept past the change");
    }
}
