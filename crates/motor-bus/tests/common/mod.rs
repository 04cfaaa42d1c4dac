//! What the broker tests share: a bus on the test broker
//! (`MOTOR_TEST_KAFKA_BROKERS`, `scripts/broker`) under a prefix of its own.

use motor_bus::BusConfig;

/// A bus whose topics are the test's alone (`tag` and a random suffix),
/// made with `partitions` each.
pub fn bus(tag: &str, partitions: i32) -> BusConfig {
    BusConfig {
        brokers: std::env::var("MOTOR_TEST_KAFKA_BROKERS")
            .unwrap_or_else(|_| "127.0.0.1:9092".into()),
        prefix: format!("{tag}{}", &uuid::Uuid::new_v4().simple().to_string()[..10]),
        partitions,
        replication: 1,
    }
}
