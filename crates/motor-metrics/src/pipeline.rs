//! The delivery pipeline's metrics: per-app intake, attempts and their
//! outcomes (counted where they happen), and the gauges the sampler
//! refreshes ([`Sampled`]).

use std::sync::atomic::AtomicU64;

use prometheus_client::{
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{exponential_buckets, Histogram},
    },
    registry::Registry,
};

use crate::labels::{
    AppLabel, ClassLabel, ConsumerLabel, ErrorLabel, KindLabel, StateLabel, SubscriptionLabel,
    TierLabel,
};

/// How many subscriptions the oldest-pending gauge names at most (the
/// oldest ones), so its label cardinality stays bounded.
pub const TOP_SUBSCRIPTIONS: usize = 10;

type Seconds = Gauge<f64, AtomicU64>;

#[derive(Debug, Clone)]
pub struct Pipeline {
    /// Events stored, per app.
    pub events_accepted: Family<AppLabel, Counter>,
    /// Events answered from an existing `source_id`, per app.
    pub events_duplicate: Family<AppLabel, Counter>,
    /// Deliveries that reached a terminal state, per state.
    pub deliveries_finished: Family<StateLabel, Counter>,
    /// Deliveries that ended `fallida`, per `ultimo_error`.
    pub deliveries_failed: Family<ErrorLabel, Counter>,
    /// From a producer request's handling to its durable answer (the ack).
    pub ack_seconds: Histogram,
    /// Attempts, per outcome class.
    pub attempts: Family<ClassLabel, Counter>,
    /// How long one attempt took (request to answer or error).
    pub attempt_seconds: Histogram,
    /// From the commit that created a delivery to its `entregada` record.
    pub delivered_seconds: Histogram,
    /// Retries scheduled, per delay tier.
    pub retries: Family<TierLabel, Counter>,
    /// Open streams (SSE or WebSocket) on this process; set from the
    /// stream hub's count when `/metrics` is scraped.
    pub streams_open: Gauge,
    /// Stuck work the last reconciliation pass found, per kind.
    pub reconciliation: Family<KindLabel, Gauge>,
    /// Gauges read from Postgres, Kafka and /proc by the sampler.
    pub sampled: Sampled,
}

/// The gauges a periodic sampler sets (never computed per scrape).
#[derive(Debug, Clone, Default)]
pub struct Sampled {
    /// Deliveries `fallida` (the DLQ), all apps.
    pub dlq_size: Gauge,
    /// Deliveries `pendiente`, all apps.
    pub pending: Gauge,
    /// Deliveries `cancelada`, all apps.
    pub cancelled: Gauge,
    /// Age of the oldest `pendiente` delivery of the subscriptions with the
    /// oldest ones ([`TOP_SUBSCRIPTIONS`] at most).
    pub oldest_pending_seconds: Family<SubscriptionLabel, Seconds>,
    /// Outbox rows not yet published (relay lag).
    pub outbox_depth: Gauge,
    /// Age of the oldest outbox row; 0 when empty.
    pub outbox_oldest_seconds: Seconds,
    /// Records a consumer group has not committed yet, per topic.
    pub consumer_lag: Family<ConsumerLabel, Gauge>,
    /// Subscriptions per `estado` (`suspendida` included).
    pub subscriptions: Family<StateLabel, Gauge>,
    /// Resident set size of this process.
    pub resident_bytes: Gauge,
    /// Unix time of the last completed sample.
    pub sampled_at: Gauge,
}

impl Pipeline {
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let attempt_seconds = Histogram::new(exponential_buckets(0.005, 2.5, 10));
        let delivered_seconds = Histogram::new(exponential_buckets(0.01, 4.0, 13));
        let this = Self {
            events_accepted: Family::default(),
            events_duplicate: Family::default(),
            deliveries_finished: Family::default(),
            deliveries_failed: Family::default(),
            attempts: Family::default(),
            ack_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 14)),
            attempt_seconds,
            delivered_seconds,
            retries: Family::default(),
            streams_open: Gauge::default(),
            reconciliation: Family::default(),
            sampled: Sampled::default(),
        };
        let r = registry;
        r.register(
            "app_events_accepted",
            "Events stored in the ledger, per app.",
            this.events_accepted.clone(),
        );
        r.register(
            "app_events_duplicate",
            "Events answered from an existing source_id (no new event), per app.",
            this.events_duplicate.clone(),
        );
        r.register(
            "ingest_ack_duration_seconds",
            "From a producer request's handling (after authentication) to its durable answer.",
            this.ack_seconds.clone(),
        );
        r.register(
            "deliveries_finished",
            "Deliveries that reached a terminal state, per estado.",
            this.deliveries_finished.clone(),
        );
        r.register(
            "deliveries_failed",
            "Deliveries that ended fallida (into the DLQ), per ultimo_error.",
            this.deliveries_failed.clone(),
        );
        r.register(
            "attempts",
            "Delivery attempts, per outcome class.",
            this.attempts.clone(),
        );
        r.register(
            "attempt_duration_seconds",
            "Duration of one delivery attempt.",
            this.attempt_seconds.clone(),
        );
        r.register(
            "delivery_latency_seconds",
            "From the commit that created a delivery to its entregada record.",
            this.delivered_seconds.clone(),
        );
        r.register(
            "retries",
            "Retries scheduled, per delay tier.",
            this.retries.clone(),
        );
        r.register(
            "streams_open",
            "Event streams (SSE or WebSocket) open on this process.",
            this.streams_open.clone(),
        );
        r.register(
            "reconciliation_findings",
            "Stuck work the last reconciliation pass found, per tipo.",
            this.reconciliation.clone(),
        );
        let s = &this.sampled;
        r.register(
            "dlq_size",
            "Deliveries fallida (the DLQ), all apps (sampled).",
            s.dlq_size.clone(),
        );
        r.register(
            "deliveries_pending",
            "Deliveries pendiente, all apps (sampled).",
            s.pending.clone(),
        );
        r.register(
            "deliveries_cancelled",
            "Deliveries cancelada (a contract that cancels on deactivation), all apps (sampled).",
            s.cancelled.clone(),
        );
        r.register(
            "oldest_pending_age_seconds",
            "Age of the oldest pendiente delivery, for the subscriptions with the oldest ones (top 10, sampled).",
            s.oldest_pending_seconds.clone(),
        );
        r.register(
            "outbox_depth",
            "Outbox rows not yet published to Kafka (relay lag, sampled).",
            s.outbox_depth.clone(),
        );
        r.register(
            "outbox_oldest_age_seconds",
            "Age of the oldest outbox row, 0 when empty (relay lag, sampled).",
            s.outbox_oldest_seconds.clone(),
        );
        r.register(
            "consumer_lag",
            "Records not yet committed by a consumer group, per topic (sampled).",
            s.consumer_lag.clone(),
        );
        r.register(
            "subscriptions",
            "Subscriptions per estado (sampled).",
            s.subscriptions.clone(),
        );
        r.register(
            "process_resident_memory_bytes",
            "Resident set size of this process (sampled).",
            s.resident_bytes.clone(),
        );
        r.register(
            "sampled_at_seconds",
            "Unix time of the last completed sample of the sampled gauges.",
            s.sampled_at.clone(),
        );
        this
    }

    /// One producer request's events: `stored` new ones, `duplicate`
    /// answered from an existing `source_id`.
    pub fn accepted(&self, app_id: String, stored: u64, duplicate: u64) {
        let app = AppLabel { app_id };
        self.events_accepted.get_or_create(&app).inc_by(stored);
        if duplicate > 0 {
            self.events_duplicate.get_or_create(&app).inc_by(duplicate);
        }
    }

    /// One attempt of outcome class `clase` that took `seconds`.
    pub fn attempt(&self, clase: &str, seconds: f64) {
        self.attempts
            .get_or_create(&ClassLabel {
                clase: clase.to_owned(),
            })
            .inc();
        self.attempt_seconds.observe(seconds);
    }

    /// A delivery recorded `entregada`, `seconds` after its commit.
    pub fn delivered(&self, seconds: f64) {
        self.finished("entregada");
        self.delivered_seconds.observe(seconds.max(0.0));
    }

    /// A delivery recorded `fallida` with `ultimo_error`.
    pub fn failed(&self, last_error: String) {
        self.finished("fallida");
        self.deliveries_failed
            .get_or_create(&ErrorLabel {
                ultimo_error: last_error,
            })
            .inc();
    }

    /// A retry scheduled in `tier`.
    pub fn retry(&self, tier: String) {
        self.retries.get_or_create(&TierLabel { tier }).inc();
    }

    fn finished(&self, estado: &str) {
        self.deliveries_finished
            .get_or_create(&StateLabel {
                estado: estado.to_owned(),
            })
            .inc();
    }
}
