//! Motor's Prometheus metrics: one [`Metrics`] per process, shared by every
//! role. The engine and the API count into it; the API serves
//! [`Metrics::render`] on `/metrics`. Registered through `prometheus-client`,
//! so the exposition text (OpenMetrics) is the library's, not ours.
//!
//! Three kinds: counters bumped where things happen (ingest, attempts,
//! decisions), histograms observed at the attempt, and gauges a sampler
//! refreshes from Postgres and Kafka every few seconds (`motor-engine`'s
//! `sampler`), so a scrape never runs SQL. docs/METRICS.md is the
//! reference table.

mod breakdown;
mod commands;
mod history;
mod labels;
mod pipeline;

use prometheus_client::{
    encoding::text::encode,
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{exponential_buckets, Histogram},
    },
    registry::Registry,
};

pub use breakdown::{
    Breakdown, InstanceOrType, Ranked, DEFAULT_TOP_INSTANCES, DEFAULT_TOP_TYPES, OTHER,
    RERANK_EVERY,
};
pub use commands::{Commands, Waiting, CLASSES as COMMAND_CLASSES, SWEEPS as COMMAND_SWEEPS};
pub use history::{History, Point, HISTORY_POINTS};
pub use labels::{
    AppLabel, ClassLabel, ConsumerLabel, ErrorLabel, InstanceLabel, KindLabel, StateLabel,
    SubscriptionLabel, TierLabel, TypeLabel, VersionLabel,
};
pub use pipeline::{Pipeline, Sampled, TOP_SUBSCRIPTIONS};

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every metric a Motor process exposes. Counters are cheap to clone and
/// to bump from any task.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Events appended to the ledger.
    pub events_stored: Counter,
    /// Events answered from an existing `source_id`.
    pub events_duplicate: Counter,
    /// Accepted producer requests.
    pub ingest_requests: Counter,
    /// API keys looked up in Postgres: a key found is trusted for a while
    /// (`motor_api::auth::ApiKeys`), so this grows with the keys in use,
    /// not with the requests.
    pub api_key_lookups: Counter,
    /// What delivery attempts read from Postgres that has no version (an
    /// app, the settings, whether a subscription is ordered): trusted
    /// while Postgres announces its changes (the dispatcher's attempt
    /// cache), so this grows with the apps and subscriptions attempted,
    /// not with the attempts.
    pub attempt_lookups: Counter,
    /// Outbox records acknowledged by Kafka.
    pub outbox_published: Counter,
    /// Outbox records Kafka did not acknowledge.
    pub outbox_publish_errors: Counter,
    /// Delivery attempts made and recorded.
    pub delivery_attempts: Counter,
    /// Lane heads the sweeper re-enqueued.
    pub sweeper_requeued: Counter,
    /// How long each sweeper pass took (the walk over lane heads and the
    /// requeue of what it found).
    pub sweeper_pass_seconds: Histogram,
    /// Outbox shards this process relays.
    pub relay_shards_owned: Gauge,
    /// Per app, attempts and their outcomes, and the sampled gauges.
    pub pipeline: Pipeline,
    /// Per instance and per event type, the busiest named.
    pub breakdown: Breakdown,
    /// The commands side: accepted, claims, reports, sweeps, long-polls.
    pub commands: Commands,
    /// The last hour of samples (the console's charts).
    pub history: History,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(DEFAULT_TOP_INSTANCES, DEFAULT_TOP_TYPES)
    }
}

impl Metrics {
    /// Every metric, naming at most `top_instances` instances and
    /// `top_types` event types (`breakdown`).
    pub fn new(top_instances: usize, top_types: usize) -> Self {
        let mut registry = Registry::with_prefix("motor");
        let mut counter = |name: &str, help: &str| {
            let counter = Counter::default();
            registry.register(name, help, counter.clone());
            counter
        };
        let events_stored = counter("events_stored", "Events appended to the ledger.");
        let events_duplicate = counter(
            "events_duplicate",
            "Events answered from an existing source_id.",
        );
        let ingest_requests = counter("ingest_requests", "Accepted producer requests.");
        let api_key_lookups = counter(
            "api_key_lookups",
            "API keys looked up in Postgres (a key found is trusted for a while).",
        );
        let attempt_lookups = counter(
            "attempt_lookups",
            "Apps, settings and subscriptions' ordering read from Postgres for delivery attempts (each trusted for a while).",
        );
        let outbox_published = counter("outbox_published", "Outbox records acknowledged by Kafka.");
        let outbox_publish_errors = counter(
            "outbox_publish_errors",
            "Outbox records Kafka did not acknowledge.",
        );
        let delivery_attempts =
            counter("delivery_attempts", "Delivery attempts made and recorded.");
        let sweeper_requeued = counter("sweeper_requeued", "Lane heads the sweeper re-enqueued.");
        // 1 ms … 4 s; 50 ms (a pass's budget) is a bucket's bound.
        let sweeper_pass_seconds = Histogram::new(
            [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05]
                .into_iter()
                .chain(exponential_buckets(0.1, 2.0, 6)),
        );
        registry.register(
            "sweeper_pass_seconds",
            "How long each sweeper pass took.",
            sweeper_pass_seconds.clone(),
        );
        let relay_shards_owned = Gauge::default();
        registry.register(
            "relay_shards_owned",
            "Outbox shards this process relays.",
            relay_shards_owned.clone(),
        );
        let pipeline = Pipeline::register(&mut registry);
        let breakdown = Breakdown::register(&mut registry, top_instances, top_types);
        let commands = Commands::register(&mut registry);
        // So that a deploy shows on every graph: 1, labelled with the
        // version (of the workspace, which every crate shares).
        let build_info = Family::<VersionLabel, Gauge>::default();
        build_info
            .get_or_create(&VersionLabel {
                version: env!("CARGO_PKG_VERSION").to_owned(),
            })
            .set(1);
        registry.register(
            "build_info",
            "The running build: 1, labelled with its version.",
            build_info,
        );
        Self {
            registry,
            events_stored,
            events_duplicate,
            ingest_requests,
            api_key_lookups,
            attempt_lookups,
            outbox_published,
            outbox_publish_errors,
            delivery_attempts,
            sweeper_requeued,
            sweeper_pass_seconds,
            relay_shards_owned,
            pipeline,
            breakdown,
            commands,
            history: History::default(),
        }
    }

    /// The OpenMetrics text of every metric (served as [`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        self.breakdown.rerank_if_due(std::time::Instant::now());
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests;
