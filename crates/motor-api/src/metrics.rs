//! Prometheus metrics: a handful of counters and gauges, rendered in the
//! text exposition format on `/metrics`.

use std::{
    fmt::Write,
    sync::atomic::{AtomicI64, AtomicU64, Ordering},
};

#[derive(Debug, Default)]
pub struct Metrics {
    pub events_stored: AtomicU64,
    pub events_duplicate: AtomicU64,
    pub ingest_requests: AtomicU64,
    pub outbox_published: AtomicU64,
    pub outbox_publish_errors: AtomicU64,
    pub relay_shards_owned: AtomicI64,
    pub delivery_attempts: AtomicU64,
    pub sweeper_requeued: AtomicU64,
}

impl Metrics {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let counters: [(&str, &str, &AtomicU64); 7] = [
            (
                "motor_events_stored_total",
                "Events appended to the ledger.",
                &self.events_stored,
            ),
            (
                "motor_events_duplicate_total",
                "Events answered from an existing source_id.",
                &self.events_duplicate,
            ),
            (
                "motor_ingest_requests_total",
                "Accepted producer requests.",
                &self.ingest_requests,
            ),
            (
                "motor_outbox_published_total",
                "Outbox records acknowledged by Kafka.",
                &self.outbox_published,
            ),
            (
                "motor_outbox_publish_errors_total",
                "Outbox records Kafka did not acknowledge.",
                &self.outbox_publish_errors,
            ),
            (
                "motor_delivery_attempts_total",
                "Delivery attempts made and recorded.",
                &self.delivery_attempts,
            ),
            (
                "motor_sweeper_requeued_total",
                "Lane heads the sweeper re-enqueued.",
                &self.sweeper_requeued,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP motor_relay_shards_owned Outbox shards this process relays.\n# TYPE motor_relay_shards_owned gauge\nmotor_relay_shards_owned {}",
            self.relay_shards_owned.load(Ordering::Relaxed)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters() {
        let m = Metrics::default();
        Metrics::add(&m.events_stored, 3);
        let text = m.render();
        assert!(text.contains("motor_events_stored_total 3\n"), "{text}");
        assert!(text.contains("# TYPE motor_relay_shards_owned gauge"));
    }
}
