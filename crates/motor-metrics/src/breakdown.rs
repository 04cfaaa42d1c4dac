//! Events accepted, deliveries delivered and failed, and delivery latency,
//! per instance and per event type, with bounded label cardinality (issue
//! 36, item 4). Instances are as many as an operator makes and an app
//! without a closed catalogue may send any type, so neither is a label as
//! is: each dimension names at most its `limit` busiest values and sums
//! the rest under `other`.
//!
//! How a value earns its label ([`Ranked`]): a value seen while fewer than
//! `limit` are named is named at once; beyond, it counts under `other`.
//! Every [`RERANK_EVERY`] (checked when counting and at each scrape) the
//! named set becomes the `limit` values with the most volume (a count per
//! record, halved at every re-rank so that recent volume weighs most);
//! a value that falls out has its series removed (its later counts go to
//! `other`), one that comes in starts its own series at zero. Every series
//! is monotonic while it exists; a dimension never shows more than
//! `limit + 1` values.

use std::{
    collections::{HashMap, HashSet},
    hash::Hash,
    sync::Mutex,
    time::{Duration, Instant},
};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::Family,
        histogram::{exponential_buckets, Histogram},
    },
    registry::Registry,
};

use crate::labels::{InstanceLabel, TypeLabel};

/// The label value of everything not named.
pub const OTHER: &str = "other";
/// Instances named by default (`MOTOR_METRICS_TOP_INSTANCES`).
pub const DEFAULT_TOP_INSTANCES: usize = 20;
/// Event types named by default (`MOTOR_METRICS_TOP_TYPES`).
pub const DEFAULT_TOP_TYPES: usize = 50;
/// How often the named sets are chosen again by volume.
pub const RERANK_EVERY: Duration = Duration::from_secs(60);
/// Values whose volume is tracked at most between two re-ranks; beyond,
/// a new value counts under `other` until the next re-rank frees room.
const TRACKED_MAX: usize = 10_000;

fn latency_histogram() -> Histogram {
    // As `motor_delivery_latency_seconds`: 10 ms … ~2 days (×4).
    Histogram::new(exponential_buckets(0.01, 4.0, 13))
}

type Latency = Family<InstanceOrType, Histogram, fn() -> Histogram>;

/// A label set of either dimension (the families of one [`Ranked`] use
/// one of the two).
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub enum InstanceOrType {
    Instance(InstanceLabel),
    Type(TypeLabel),
}

impl EncodeLabelSet for InstanceOrType {
    fn encode(
        &self,
        encoder: &mut prometheus_client::encoding::LabelSetEncoder<'_>,
    ) -> Result<(), std::fmt::Error> {
        match self {
            Self::Instance(l) => l.encode(encoder),
            Self::Type(l) => l.encode(encoder),
        }
    }
}

#[derive(Debug, Default)]
struct RankState {
    /// Volume per value since the last re-rank, plus half the earlier.
    volume: HashMap<String, u64>,
    named: HashSet<String>,
    ranked_at: Option<Instant>,
}

/// One dimension's four families and the choice of which values they name.
#[derive(Debug)]
pub struct Ranked {
    limit: usize,
    label: fn(String) -> InstanceOrType,
    state: Mutex<RankState>,
    pub accepted: Family<InstanceOrType, Counter>,
    pub delivered: Family<InstanceOrType, Counter>,
    pub failed: Family<InstanceOrType, Counter>,
    pub latency: Latency,
}

impl Ranked {
    fn new(limit: usize, label: fn(String) -> InstanceOrType) -> Self {
        Self {
            limit,
            label,
            state: Mutex::default(),
            accepted: Family::default(),
            delivered: Family::default(),
            failed: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
        }
    }

    /// The label `value` counts under now, adding `weight` to its volume.
    fn label_for(&self, value: &str, weight: u64, now: Instant) -> InstanceOrType {
        let mut state = self.state.lock().expect("not poisoned");
        if state.ranked_at.is_none_or(|at| now - at >= RERANK_EVERY) {
            self.rerank(&mut state, now);
        }
        let tracked = state.volume.len() < TRACKED_MAX || state.volume.contains_key(value);
        if tracked {
            *state.volume.entry(value.to_owned()).or_default() += weight;
        }
        let named = state.named.contains(value)
            || (tracked && state.named.len() < self.limit && {
                state.named.insert(value.to_owned());
                true
            });
        (self.label)(if named { value } else { OTHER }.to_owned())
    }

    /// Names the `limit` values with the most volume; removes the series
    /// of those that fall out; halves every volume (forgetting the zeros).
    fn rerank(&self, state: &mut RankState, now: Instant) {
        let mut by_volume: Vec<(&String, &u64)> = state.volume.iter().collect();
        // Most volume first; ties by name, so the choice is stable.
        by_volume.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let top: HashSet<String> = by_volume
            .into_iter()
            .take(self.limit)
            .map(|(v, _)| v.clone())
            .collect();
        for gone in state.named.difference(&top) {
            let label = (self.label)(gone.clone());
            self.accepted.remove(&label);
            self.delivered.remove(&label);
            self.failed.remove(&label);
            self.latency.remove(&label);
        }
        state.named = top;
        state.volume.retain(|_, v| {
            *v /= 2;
            *v > 0
        });
        state.ranked_at = Some(now);
    }

    fn register(&self, registry: &mut Registry, by: &str, what: &str) {
        registry.register(
            format!("{by}_events_accepted"),
            format!("Events stored in the ledger, per {what} (top values, the rest as other)."),
            self.accepted.clone(),
        );
        registry.register(
            format!("{by}_deliveries_delivered"),
            format!("Deliveries recorded entregada, per {what} (top values, the rest as other)."),
            self.delivered.clone(),
        );
        registry.register(
            format!("{by}_deliveries_failed"),
            format!("Deliveries recorded fallida, per {what} (top values, the rest as other)."),
            self.failed.clone(),
        );
        registry.register(
            format!("{by}_delivery_latency_seconds"),
            format!(
                "From a delivery's commit to its entregada record, per {what} (top values, the rest as other)."
            ),
            self.latency.clone(),
        );
    }
}

/// The per-instance and per-type families.
#[derive(Debug)]
pub struct Breakdown {
    pub instances: Ranked,
    pub types: Ranked,
}

impl Breakdown {
    pub(crate) fn register(
        registry: &mut Registry,
        top_instances: usize,
        top_types: usize,
    ) -> Self {
        let this = Self {
            instances: Ranked::new(top_instances, |instance| {
                InstanceOrType::Instance(InstanceLabel { instance })
            }),
            types: Ranked::new(top_types, |event_type| {
                InstanceOrType::Type(TypeLabel { event_type })
            }),
        };
        this.instances.register(registry, "instance", "instance");
        this.types.register(registry, "type", "event type");
        this
    }

    /// An event of `event_type` stored for `instance`.
    pub fn accepted(&self, instance: &str, event_type: &str) {
        let now = Instant::now();
        self.instances
            .accepted
            .get_or_create(&self.instances.label_for(instance, 1, now))
            .inc();
        self.types
            .accepted
            .get_or_create(&self.types.label_for(event_type, 1, now))
            .inc();
    }

    /// A delivery recorded `entregada`, `seconds` after its commit.
    pub fn delivered(&self, instance: &str, event_type: &str, seconds: f64) {
        let now = Instant::now();
        for (ranked, value) in [(&self.instances, instance), (&self.types, event_type)] {
            let label = ranked.label_for(value, 1, now);
            ranked.delivered.get_or_create(&label).inc();
            ranked
                .latency
                .get_or_create(&label)
                .observe(seconds.max(0.0));
        }
    }

    /// A delivery recorded `fallida`.
    pub fn failed(&self, instance: &str, event_type: &str) {
        let now = Instant::now();
        for (ranked, value) in [(&self.instances, instance), (&self.types, event_type)] {
            let label = ranked.label_for(value, 1, now);
            ranked.failed.get_or_create(&label).inc();
        }
    }

    /// Re-ranks a dimension whose last choice is older than
    /// [`RERANK_EVERY`] (called before each scrape is rendered).
    pub(crate) fn rerank_if_due(&self, now: Instant) {
        for ranked in [&self.instances, &self.types] {
            let mut state = ranked.state.lock().expect("not poisoned");
            if state.ranked_at.is_none_or(|at| now - at >= RERANK_EVERY) {
                ranked.rerank(&mut state, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(ranked: &Ranked, value: &str, now: Instant) -> String {
        match ranked.label_for(value, 1, now) {
            InstanceOrType::Instance(l) => l.instance,
            InstanceOrType::Type(l) => l.event_type,
        }
    }

    #[test]
    fn the_first_values_are_named_until_the_limit_then_other() {
        let r = Ranked::new(2, |instance| {
            InstanceOrType::Instance(InstanceLabel { instance })
        });
        let t0 = Instant::now();
        assert_eq!(label(&r, "a", t0), "a");
        assert_eq!(label(&r, "b", t0), "b");
        assert_eq!(label(&r, "c", t0), OTHER);
        assert_eq!(label(&r, "a", t0), "a");
    }

    #[test]
    fn a_rerank_names_the_busiest_and_removes_the_others_series() {
        let r = Ranked::new(2, |instance| {
            InstanceOrType::Instance(InstanceLabel { instance })
        });
        let t0 = Instant::now();
        // `quiet` came first and is named; `busy` and `busier` come later.
        r.accepted.get_or_create(&r.label_for("quiet", 1, t0)).inc();
        for (value, n) in [("busy", 5), ("busier", 9)] {
            for _ in 0..n {
                r.accepted.get_or_create(&r.label_for(value, 1, t0)).inc();
            }
        }
        let quiet = InstanceOrType::Instance(InstanceLabel {
            instance: "quiet".into(),
        });
        assert_eq!(r.accepted.get_or_create(&quiet).get(), 1);
        let later = t0 + RERANK_EVERY;
        // The next count re-ranks: the two busiest are named, `quiet`'s
        // series is gone and it counts under other.
        assert_eq!(label(&r, "quiet", later), OTHER);
        assert_eq!(label(&r, "busier", later), "busier");
        assert_eq!(label(&r, "busy", later), "busy");
        let mut registry = Registry::default();
        registry.register("x", "x", r.accepted.clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(!text.contains("quiet"), "{text}");
        assert!(text.contains("x_total{instance=\"busy\"} 5"), "{text}");
        assert!(text.contains("x_total{instance=\"other\"} 9"), "{text}");
    }

    #[test]
    fn never_more_than_limit_plus_other() {
        let r = Ranked::new(3, |event_type| {
            InstanceOrType::Type(TypeLabel { event_type })
        });
        let mut now = Instant::now();
        let mut seen = HashSet::new();
        for round in 0..5u64 {
            for i in 0..50u64 {
                // A different value is the busiest each round.
                let n = if i % 7 == round { 20 } else { 1 };
                for _ in 0..n {
                    let l = label(&r, &format!("t{i}"), now);
                    r.failed.get_or_create(&(r.label)(l.clone())).inc();
                    seen.insert(l);
                }
            }
            let state = r.state.lock().unwrap();
            assert!(state.named.len() <= 3);
            drop(state);
            now += RERANK_EVERY;
        }
        let mut registry = Registry::default();
        registry.register("f", "f", r.failed.clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let series = text.lines().filter(|l| l.starts_with("f_total{")).count();
        assert!(series <= 4, "{text}");
        assert!(text.contains("event_type=\"other\""), "{text}");
    }
}
