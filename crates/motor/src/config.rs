//! Configuration, from the environment (or the same names as flags). Every
//! setting has a default that works on a developer machine.

use anyhow::Context;
use clap::Args;
use motor_bus::BusConfig;
use std::time::Duration;

use motor_domain::{
    delivery::{RetryPolicy, Tier},
    seal::SealingKey,
};

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

    /// Retry delays after the 1st..6th failed attempt, in milliseconds
    /// (production: 1000,5000,30000,120000,600000,3600000). For tests.
    #[arg(
        long,
        env = "MOTOR_RETRY_SCHEDULE_MS",
        hide = true,
        value_delimiter = ','
    )]
    pub retry_schedule_ms: Option<Vec<u64>>,

    /// Seconds after which a delivery that fails again ends `fallida`
    /// (production: 72 h). For tests.
    #[arg(long, env = "MOTOR_RETRY_GIVE_UP_SECS", hide = true)]
    pub retry_give_up_secs: Option<u64>,

    /// Short stand-ins for the contracts' built-in retry ladders, space
    /// separated, each `<id>=<ms>,<ms>…;<jitter>;<limit>` (for example
    /// `visito@1=300,600,1200;simetrica=0;intentos=4`). For tests;
    /// `motor@1` is shortened with MOTOR_RETRY_SCHEDULE_MS.
    #[arg(
        long,
        env = "MOTOR_TEST_LADDERS",
        hide = true,
        value_delimiter = ' ',
        value_parser = motor_domain::contract::Ladder::parse_stand_in
    )]
    pub test_ladders: Vec<motor_domain::contract::Ladder>,

    /// Jobs one dispatch or retry consumer holds at most (waiting or running).
    #[arg(long, env = "MOTOR_DISPATCH_IN_FLIGHT", default_value_t = 1000)]
    pub dispatch_in_flight: usize,

    /// How long, in milliseconds, a delivered attempt that nothing is known
    /// to wait behind (an ordered lane's, its next delivery not yet
    /// committed) may wait for others to share its record's commit
    /// (0–60000; 0: never).
    #[arg(long, env = "MOTOR_RECORD_LINGER_MS", default_value_t = 20,
          value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub record_linger_ms: u64,

    /// The least time, in milliseconds, between the starts of two of the
    /// intake's group commits: a request that comes sooner waits for it,
    /// with the others that arrive meanwhile, unless 16 are there first
    /// (0–1000; 0: none). Longer: fewer commits at steady low rates, and
    /// that much longer for a lone request's answer.
    #[arg(long, env = "MOTOR_INTAKE_PACE_MS", default_value_t = 2,
          value_parser = clap::value_parser!(u64).range(0..=1_000))]
    pub intake_pace_ms: u64,

    /// After a relay round that published records but not a whole batch,
    /// the least time, in milliseconds, before its next read: the records
    /// committed meanwhile share one read and one produce request (0–10000;
    /// 0: none). It can delay a record's arrival on its topic by as much.
    #[arg(long, env = "MOTOR_RELAY_PACE_MS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub relay_pace_ms: u64,

    /// The relay's pace, in milliseconds, after a round whose records were
    /// all `{prefix}.events` records (read by users' Kafka consumers, not
    /// by Motor), unless a job or a command is committed in this process
    /// meanwhile (then `MOTOR_RELAY_PACE_MS`); never shorter than that
    /// pace (0–10000). It can delay an event's arrival on its topic by as
    /// much.
    #[arg(long, env = "MOTOR_RELAY_EVENTS_PACE_MS", default_value_t = 40,
          value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub relay_events_pace_ms: u64,

    /// How often the metrics sampler reads backlogs, lag and memory, in
    /// milliseconds.
    #[arg(long, env = "MOTOR_METRICS_SAMPLE_MS", default_value_t = 15_000,
          value_parser = clap::value_parser!(u64).range(100..))]
    pub metrics_sample_ms: u64,

    /// Instances the per-instance metrics name at most (the busiest); the
    /// rest are summed under `instance="other"`.
    #[arg(long, env = "MOTOR_METRICS_TOP_INSTANCES", default_value_t = motor_metrics::DEFAULT_TOP_INSTANCES,
          value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=1000), usize::from))]
    pub metrics_top_instances: usize,

    /// Event types the per-type metrics name at most (the busiest); the
    /// rest are summed under `event_type="other"`.
    #[arg(long, env = "MOTOR_METRICS_TOP_TYPES", default_value_t = motor_metrics::DEFAULT_TOP_TYPES,
          value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=1000), usize::from))]
    pub metrics_top_types: usize,

    /// Postgres connections per process.
    #[arg(long, env = "MOTOR_DATABASE_POOL", default_value_t = 16)]
    pub database_pool: u32,

    /// How long a request waits for a pooled Postgres connection before it
    /// is answered 503 with `Retry-After` (while no primary answers, after
    /// a failover, every request waits this long).
    #[arg(
        long,
        env = "MOTOR_DATABASE_ACQUIRE_TIMEOUT_MS",
        default_value_t = 10_000
    )]
    pub database_acquire_timeout_ms: u64,

    /// Seconds a Postgres connection may go unacknowledged before the
    /// kernel closes it (TCP keepalive after a third of it idle, then
    /// `TCP_USER_TIMEOUT`): a primary that vanishes without a reset is
    /// noticed within about this long. 0 turns it off.
    #[arg(long, env = "MOTOR_DATABASE_TCP_TIMEOUT_SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub database_tcp_timeout_secs: u64,

    /// Event streams (SSE and WebSocket) one process serves at once;
    /// beyond, 503 with `Retry-After`.
    #[arg(long, env = "MOTOR_STREAMS_MAX_CONNECTIONS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub streams_max_connections: u32,

    /// Events a stream client may fall behind the live events before it
    /// is cut off (with its cursor to resume from).
    #[arg(long, env = "MOTOR_STREAMS_BUFFER", default_value_t = 4_096,
          value_parser = clap::value_parser!(u32).range(16..=1_000_000))]
    pub streams_buffer: u32,

    /// Seconds an executor holds a command it claimed: it must report
    /// within them, or the sweeper makes the command `ambiguo`.
    #[arg(long, env = "MOTOR_EXECUTOR_LEASE_SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub executor_lease_secs: u32,

    /// The longest `wait` (seconds) an executor's long-poll
    /// (`GET /v1/executor/commands`) may ask for; more is a 422 naming
    /// `query.wait`. Keep it below every proxy's idle timeout in front of
    /// Motor.
    #[arg(long, env = "MOTOR_EXECUTOR_POLL_MAX_WAIT_SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..=300))]
    pub executor_poll_max_wait_secs: u32,

    /// The most commands one long-poll answer may carry (its `limit`).
    #[arg(long, env = "MOTOR_EXECUTOR_POLL_MAX_LIMIT", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub executor_poll_max_limit: u32,

    /// Milliseconds between a waiting long-poll's reads when nothing woke
    /// it: how soon it sees commands committed by another process.
    #[arg(long, env = "MOTOR_EXECUTOR_POLL_RECHECK_MS", default_value_t = 250,
          value_parser = clap::value_parser!(u32).range(10..=10_000))]
    pub executor_poll_recheck_ms: u32,

    /// A PEM file of certificate authorities webhook requests trust beside
    /// the built-in (Mozilla) roots: receivers whose certificates a private
    /// CA issued. Read once at start-up; unset trusts the built-in roots only.
    #[arg(long, env = "MOTOR_WEBHOOK_EXTRA_ROOTS")]
    pub webhook_extra_roots: Option<std::path::PathBuf>,

    /// Milliseconds between stream heartbeats (production: 15000). For tests.
    #[arg(long, env = "MOTOR_STREAMS_HEARTBEAT_MS", hide = true)]
    pub streams_heartbeat_ms: Option<u64>,

    #[command(flatten)]
    pub reconcile: crate::doctor::ReconcileArgs,
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

    /// The retry policy: production unless the test overrides are set.
    pub fn retry_policy(&self) -> anyhow::Result<RetryPolicy> {
        let production = RetryPolicy::production();
        if self.retry_schedule_ms.is_none() && self.retry_give_up_secs.is_none() {
            return Ok(production);
        }
        let delays = match &self.retry_schedule_ms {
            Some(ms) => <[u64; 6]>::try_from(ms.as_slice())
                .map_err(|_| anyhow::anyhow!("MOTOR_RETRY_SCHEDULE_MS needs 6 delays"))?
                .map(Duration::from_millis),
            None => Tier::ALL.map(Tier::nominal),
        };
        let give_up = self
            .retry_give_up_secs
            .map_or(Duration::from_secs(72 * 3600), Duration::from_secs);
        RetryPolicy::new(delays, Duration::from_secs(3600), give_up)
            .map_err(|e| anyhow::anyhow!("retry policy: {e}"))
    }

    /// The retry ladders: the policy for `motor@1`, the test stand-ins
    /// (if any) for the others.
    pub fn ladders(&self) -> anyhow::Result<motor_engine::Ladders> {
        motor_engine::Ladders::new(self.retry_policy()?)
            .with_stand_ins(self.test_ladders.clone())
            .context("MOTOR_TEST_LADDERS")
    }

    pub fn streams(&self) -> motor_api::streams::StreamsConfig {
        let mut streams = motor_api::streams::StreamsConfig {
            max_connections: self.streams_max_connections as usize,
            buffer: self.streams_buffer as usize,
            ..Default::default()
        };
        if let Some(ms) = self.streams_heartbeat_ms {
            streams.heartbeat = Duration::from_millis(ms.max(1));
        }
        streams
    }

    /// The executor API's knobs.
    pub fn executor(&self) -> motor_app::executor::ExecutorConfig {
        motor_app::executor::ExecutorConfig {
            lease: Duration::from_secs(self.executor_lease_secs.into()),
            max_wait: Duration::from_secs(self.executor_poll_max_wait_secs.into()),
            max_limit: self.executor_poll_max_limit.into(),
            recheck: Duration::from_millis(self.executor_poll_recheck_ms.into()),
        }
    }

    /// The certificates of `MOTOR_WEBHOOK_EXTRA_ROOTS` (none when unset).
    pub fn extra_roots(&self) -> anyhow::Result<motor_destinations::ExtraRoots> {
        let Some(path) = &self.webhook_extra_roots else {
            return Ok(motor_destinations::ExtraRoots::default());
        };
        let pem = std::fs::read(path)
            .with_context(|| format!("MOTOR_WEBHOOK_EXTRA_ROOTS: reading {}", path.display()))?;
        motor_destinations::ExtraRoots::from_pem(&pem)
            .with_context(|| format!("MOTOR_WEBHOOK_EXTRA_ROOTS: {}", path.display()))
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
