//! `motor serve`: runs the chosen roles in one process until SIGINT or
//! SIGTERM, then drains them.

use std::{net::SocketAddr, sync::Arc};

use anyhow::Context;
use clap::ValueEnum;
use motor_api::{AppState, Metrics};
use motor_store::settings::MasterKeyCheck;
use tokio::net::TcpListener;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{
    config::Config,
    relay::{self, RelayConfig},
};

/// A role `motor serve` can run. Several processes with different roles
/// scale Motor out; one process with every role runs it whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// The HTTP API (producer, ledger and operator routes).
    Api,
    /// The outbox relay to Kafka.
    Relay,
}

impl Role {
    pub const ALL: [Role; 2] = [Role::Api, Role::Relay];
}

/// Runs `roles` until `shutdown` fires. The API's bound address is sent on
/// `bound` (useful when listening on port 0).
pub async fn run(
    config: Config,
    roles: &[Role],
    shutdown: CancellationToken,
    bound: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
) -> anyhow::Result<()> {
    motor_store::migrate(&config.database_url)
        .await
        .context("migrating the database")?;
    let pool = motor_store::connect(&config.database_url, config.database_pool)
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
    let metrics = Arc::new(Metrics::default());
    let tracker = TaskTracker::new();

    if roles.contains(&Role::Relay) {
        let relay_config = RelayConfig::new(config.database_url.clone(), config.bus());
        let (pool, metrics, shutdown) = (pool.clone(), metrics.clone(), shutdown.clone());
        tracker.spawn(async move {
            if let Err(e) = relay::run(relay_config, pool, metrics, shutdown.clone()).await {
                tracing::error!(error = %e, "relay failed");
                shutdown.cancel();
            }
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
        let state = AppState {
            pool: pool.clone(),
            admin_token: config.admin_token.as_deref().map(Arc::from),
            metrics: metrics.clone(),
            sealing: sealing.clone(),
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
        });
    }

    tracker.close();
    tracker.wait().await;
    pool.close().await;
    Ok(())
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
