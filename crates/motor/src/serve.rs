//! `motor serve`: runs the chosen roles in one process until SIGINT or
//! SIGTERM, then drains them.

use std::{net::SocketAddr, sync::Arc};

use anyhow::Context;
use clap::ValueEnum;
use motor_api::AppState;
use motor_destinations::{
    resolve::{Resolver, SystemResolver},
    Destinations,
};
use motor_engine::{
    DispatchConfig, Dispatcher, LocalRoles, RelayConfig, RelayWake, SamplerConfig, Source,
    SweeperConfig,
};
use motor_metrics::Metrics;
use motor_store::{changes, deliveries::AfterCommit, settings::MasterKeyCheck};
use tokio::net::TcpListener;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::config::Config;

/// A role `motor serve` can run. Several processes with different roles
/// scale Motor out; one process with every role runs it whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// The HTTP API (producer, ledger and operator routes).
    Api,
    /// The outbox relay to Kafka.
    Relay,
    /// First attempts, replays and released lanes (`{prefix}.deliveries`).
    Dispatch,
    /// Retries from the delay tiers (`{prefix}.retry.*`).
    Retry,
    /// Re-enqueues lane heads whose job was lost or whose lease expired.
    Sweeper,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::Api,
        Role::Relay,
        Role::Dispatch,
        Role::Retry,
        Role::Sweeper,
    ];
}

/// Runs `roles` until `shutdown` fires. The API's bound address is sent on
/// `bound` (useful when listening on port 0).
pub async fn run(
    config: Config,
    roles: &[Role],
    shutdown: CancellationToken,
    bound: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
) -> anyhow::Result<()> {
    run_with_resolver(config, roles, shutdown, bound, Arc::new(SystemResolver)).await
}

/// [`run`], with destinations' host names asked of `resolver` (the
/// dispatcher's and `/test`'s): a test re-points a name while Motor runs.
pub async fn run_with_resolver(
    config: Config,
    roles: &[Role],
    shutdown: CancellationToken,
    bound: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
    resolver: Arc<dyn Resolver>,
) -> anyhow::Result<()> {
    motor_store::migrate(&config.database_url)
        .await
        .context("migrating the database")?;
    let pool = motor_store::connect_guarded(
        &config.database_url,
        config.database_pool,
        std::time::Duration::from_millis(config.database_acquire_timeout_ms),
        motor_store::TcpGuard {
            timeout: std::time::Duration::from_secs(config.database_tcp_timeout_secs),
        },
    )
    .await
    .context("connecting to postgres")?;
    let sealing = Arc::new(config.sealing_key()?);
    match motor_store::settings::check_master_key(&pool, &sealing)
        .await
        .context("checking MOTOR_MASTER_KEY")?
    {
        MasterKeyCheck::Matches => {}
        MasterKeyCheck::Initialised => tracing::info!("sealed the master key canary"),
        MasterKeyCheck::Mismatch => anyhow::bail!(
            "MOTOR_MASTER_KEY is not the key that sealed this database's secrets \
             (the canary in master_key_canary does not open); start with the original key"
        ),
    }
    let metrics = Arc::new(Metrics::new(
        config.metrics_top_instances,
        config.metrics_top_types,
    ));
    let tracker = TaskTracker::new();
    // One set of senders for the dispatcher and the API's probes: one pool
    // of broker connections, closed once at the end.
    let roots = config.extra_roots()?;
    if !roots.is_empty() {
        tracing::info!(
            certificates = roots.len(),
            "webhooks trust MOTOR_WEBHOOK_EXTRA_ROOTS beside the built-in roots"
        );
    }
    let destinations = Destinations::trusting(resolver.clone(), roots);

    // A commit of the API hands work to the roles in its own process.
    let mut local = LocalRoles::default();
    // The caches that trust what they read while Postgres announces its
    // changes (`motor_store::changes`).
    let mut followers: Vec<(&'static str, changes::Follower)> = Vec::new();
    let api = roles.contains(&Role::Api);

    // Outbox writers in this process (the API's commits, the dispatcher's
    // records) wake the relay at once; it then only polls for other
    // processes' records, so it may poll slowly when idle.
    let relay_wake = roles
        .contains(&Role::Relay)
        .then(|| Arc::new(RelayWake::default()));
    if let Some(wake) = &relay_wake {
        let mut relay_config = RelayConfig::new(config.bus());
        relay_config.wake = Some(wake.clone());
        relay_config.pace = std::time::Duration::from_millis(config.relay_pace_ms);
        relay_config.events_pace = std::time::Duration::from_millis(config.relay_events_pace_ms);
        if api || roles.contains(&Role::Dispatch) || roles.contains(&Role::Retry) {
            relay_config.idle_max = RelayConfig::IDLE_MAX_WOKEN;
        }
        if api {
            local.relay = Some(wake.clone());
        }
        let (pool, metrics, shutdown) = (pool.clone(), metrics.clone(), shutdown.clone());
        tracker.spawn(async move {
            if let Err(e) =
                motor_engine::run_relay(relay_config, pool, metrics, shutdown.clone()).await
            {
                tracing::error!(error = %e, "relay failed");
                shutdown.cancel();
            }
        });
    }

    let delivering: Vec<Source> = roles
        .iter()
        .filter_map(|r| match r {
            Role::Dispatch => Some(Source::Deliveries),
            Role::Retry => Some(Source::Tiers),
            _ => None,
        })
        .collect();
    if !delivering.is_empty() {
        let ladders = config.ladders()?;
        let linger = std::time::Duration::from_millis(config.record_linger_ms);
        let config = DispatchConfig {
            bus: config.bus(),
            policy: config.retry_policy()?,
            max_in_flight: config.dispatch_in_flight,
        };
        let dispatcher = Arc::new(
            Dispatcher::new(
                pool.clone(),
                sealing.clone(),
                config.policy.clone(),
                metrics.clone(),
            )
            .sending_with(destinations.clone())
            .deciding_with(ladders)
            .lingering(linger)
            .waking_relay(relay_wake.clone()),
        );
        let heard = dispatcher.clone();
        followers.push((changes::ATTEMPT_READS, Box::new(move |h| heard.heard(h))));
        if api && delivering.contains(&Source::Deliveries) {
            dispatcher.warm().await;
            local.dispatcher = Some(dispatcher.clone());
        }
        for source in delivering {
            let (config, dispatcher, shutdown) =
                (config.clone(), dispatcher.clone(), shutdown.clone());
            tracker.spawn(async move {
                if let Err(e) =
                    motor_engine::run_dispatch(config, source, dispatcher, shutdown.clone()).await
                {
                    tracing::error!(error = %e, "dispatcher failed");
                    shutdown.cancel();
                }
            });
        }
    }

    if roles.contains(&Role::Sweeper) {
        let (pool, metrics, shutdown) = (pool.clone(), metrics.clone(), shutdown.clone());
        tracker.spawn(async move {
            if let Err(e) =
                motor_engine::run_sweeper(SweeperConfig::default(), pool, metrics, shutdown.clone())
                    .await
            {
                tracing::error!(error = %e, "sweeper failed");
                shutdown.cancel();
            }
        });
    }

    if roles.contains(&Role::Sweeper) {
        let reconcile = config.reconcile.config();
        let (pool, metrics, shutdown) = (pool.clone(), metrics.clone(), shutdown.clone());
        tracker.spawn(async move {
            let _ = motor_engine::run_reconcile(reconcile, pool, metrics, shutdown).await;
        });
    }

    // Without the API there is no address to report: dropping the sender
    // tells a waiting caller so.
    let bound = bound.filter(|_| roles.contains(&Role::Api));

    if roles.contains(&Role::Api) {
        let listener = TcpListener::bind(&config.http_addr)
            .await
            .with_context(|| format!("binding {}", config.http_addr))?;
        let addr = listener.local_addr()?;
        tracing::info!(%addr, "api listening");
        if let Some(bound) = bound {
            let _ = bound.send(addr);
        }
        spawn_sampler(&config, &pool, &metrics, &shutdown, &tracker);
        let local_roles = (local.dispatcher.is_some() || local.relay.is_some())
            .then(|| Arc::new(local.clone()) as Arc<dyn AfterCommit>);
        let streams =
            motor_api::streams::Hub::start(pool.clone(), config.streams(), shutdown.clone());
        let after_commit: Option<Arc<dyn AfterCommit>> =
            Some(Arc::new(motor_api::streams::hub::WakeStreams {
                hub: streams.clone(),
                inner: local_roles,
            }));
        let api_keys = Arc::new(motor_api::auth::ApiKeys::default());
        let heard = api_keys.clone();
        followers.push((changes::API_KEYS, Box::new(move |h| heard.heard(h))));
        let state = AppState {
            pool: pool.clone(),
            admin_token: config.admin_token.as_deref().map(Arc::from),
            metrics: metrics.clone(),
            sealing: sealing.clone(),
            destinations: destinations.clone(),
            commands: motor_app::commands::Acceptor::start(pool.clone(), after_commit.clone()),
            ledger: motor_app::events::Ledger::start(
                pool.clone(),
                after_commit,
                std::time::Duration::from_millis(config.intake_pace_ms),
            ),
            instance_apps: Arc::default(),
            api_keys,
            streams: streams.clone(),
            executor: motor_app::executor::ExecutorState {
                bell: Default::default(),
                config: config.executor(),
            },
        };
        let app = motor_api::router(state);
        let shutdown = shutdown.clone();
        tracker.spawn(async move {
            let stop = shutdown.clone();
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await
            {
                tracing::error!(error = %e, "api failed");
                shutdown.cancel();
            }
            // Open WebSockets got their close frame at shutdown; let it out.
            streams.drained().await;
        });
    }

    // One connection listens for what the caches above trust.
    if !followers.is_empty() {
        let (pool, shutdown) = (pool.clone(), shutdown.clone());
        tracker.spawn(async move { changes::follow(&pool, &followers, &shutdown).await });
    }

    tracker.close();
    tracker.wait().await;
    // Broker connections closed while the runtime still runs (else its
    // shutdown tears them down and lapin logs two IO errors).
    destinations.close().await;
    pool.close().await;
    Ok(())
}

/// The metrics sampler runs beside the API, which serves what it sets.
fn spawn_sampler(
    config: &Config,
    pool: &motor_store::Pool,
    metrics: &Arc<Metrics>,
    shutdown: &CancellationToken,
    tracker: &TaskTracker,
) {
    let sampler = SamplerConfig {
        every: std::time::Duration::from_millis(config.metrics_sample_ms),
        bus: Some(config.bus()),
    };
    let (pool, metrics, shutdown) = (pool.clone(), metrics.clone(), shutdown.clone());
    tracker.spawn(async move {
        let _ = motor_engine::run_sampler(sampler, pool, metrics, shutdown).await;
    });
}

/// Cancels `token` on SIGINT or SIGTERM.
pub fn cancel_on_signal(token: CancellationToken) {
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("installing the SIGTERM handler");
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        tracing::info!("shutting down");
        token.cancel();
    });
}
