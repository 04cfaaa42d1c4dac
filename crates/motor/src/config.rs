//! Configuration, from the environment (or the same names as flags). Every
//! setting has a default that works on a developer machine.

use anyhow::Context;
use clap::Args;
use motor_bus::BusConfig;
use motor_domain::seal::SealingKey;

/// The master key used when `MOTOR_MASTER_KEY` is unset, so `motor serve`
/// runs on a developer machine with no configuration. It is public: secrets
/// sealed with it are not protected, and start-up says so. A database
/// sealed with it refuses any other key (and the other way round).
pub const INSECURE_DEV_MASTER_KEY: &str = "motor-insecure-development-master-key-do-not-use";

#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Postgres URL; the default is the local socket.
    #[arg(long, env = "MOTOR_DATABASE_URL", default_value = "postgres:///motor")]
    pub database_url: String,

    /// Kafka bootstrap servers.
    #[arg(long, env = "MOTOR_KAFKA_BROKERS", default_value = "127.0.0.1:9092")]
    pub kafka_brokers: String,

    /// Partitions of each topic Motor creates.
    #[arg(long, env = "MOTOR_KAFKA_PARTITIONS", default_value_t = 8,
          value_parser = clap::value_parser!(i32).range(1..=1024))]
    pub kafka_partitions: i32,

    /// Replication factor of each topic Motor creates.
    #[arg(long, env = "MOTOR_KAFKA_REPLICATION", default_value_t = 1,
          value_parser = clap::value_parser!(i32).range(1..=16))]
    pub kafka_replication: i32,

    /// Prefix of every topic name (`{prefix}.events`, …).
    #[arg(long, env = "MOTOR_TOPIC_PREFIX", default_value = "motor")]
    pub topic_prefix: String,

    /// Address the HTTP API listens on.
    #[arg(long, env = "MOTOR_HTTP_ADDR", default_value = "127.0.0.1:8080")]
    pub http_addr: String,

    /// Bearer token of the operator API; unset keeps it closed.
    #[arg(long, env = "MOTOR_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,

    /// Key that seals subscription secrets at rest (at least 32 bytes).
    /// Unset: a public development key, with a warning at start-up.
    #[arg(long, env = "MOTOR_MASTER_KEY", hide_env_values = true)]
    pub master_key: Option<String>,

    /// Postgres connections per process.
    #[arg(long, env = "MOTOR_DATABASE_POOL", default_value_t = 16)]
    pub database_pool: u32,
}

impl Config {
    /// The key that seals subscription secrets, from `MOTOR_MASTER_KEY`.
    pub fn sealing_key(&self) -> anyhow::Result<SealingKey> {
        match self.master_key.as_deref() {
            Some(master) => SealingKey::derive(master).context("MOTOR_MASTER_KEY"),
            None => {
                tracing::warn!(
                    "MOTOR_MASTER_KEY is unset: subscription secrets are sealed with a public \
                     development key and are NOT protected; set MOTOR_MASTER_KEY (32+ random \
                     bytes) anywhere but a developer machine"
                );
                Ok(SealingKey::derive(INSECURE_DEV_MASTER_KEY)?)
            }
        }
    }

    pub fn bus(&self) -> BusConfig {
        BusConfig {
            brokers: self.kafka_brokers.clone(),
            prefix: self.topic_prefix.clone(),
            partitions: self.kafka_partitions,
            replication: self.kafka_replication,
        }
    }
}
