//! Changes Postgres announces on a channel: a trigger notifies at the
//! commit of every statement that changes what a cache trusts. API keys on
//! [`API_KEYS`] (migration 0026; `motor_api::auth::ApiKeys`), and what
//! every delivery attempt reads without a version — an app's allowed
//! destinations and policy, the operator's settings, whether a
//! subscription is ordered — on [`ATTEMPT_READS`] (migration 0032; the
//! dispatcher's attempt cache). [`follow`] keeps one connection of a
//! process listening for them all and tells each cache what it heard.

use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use crate::{Pool, Result};

/// The channel migration 0026's trigger on `api_keys` notifies.
pub const API_KEYS: &str = "motor_api_keys";

/// The channel migration 0032's triggers on `apps`, `settings` and
/// `subscriptions` (`ordenado`) notify.
pub const ATTEMPT_READS: &str = "motor_attempt_reads";

/// How long a cache that follows a channel may trust what it read while a
/// connection listens: the bound for a listener that hears nothing
/// although things change (one left on a server that stopped taking
/// writes, until [`RENEW`]).
pub const TRUSTED_WHILE_LISTENING: Duration = Duration::from_secs(30);

/// How often [`follow`] takes a new connection from the pool (which
/// follows a move to another primary, `crate::primary`).
pub const RENEW: Duration = Duration::from_secs(60);

/// What [`Changes::next`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A statement that changed what `channel` covers committed.
    Changed { channel: String },
    /// The connection was lost: what was announced meanwhile is not known.
    Lost,
}

/// A connection of the pool listening on some channels.
pub struct Changes {
    listener: PgListener,
}

impl Changes {
    /// Takes a connection from the pool and listens on `channels`: every
    /// change that commits from the return on is announced.
    pub async fn listen(pool: &Pool, channels: &[&str]) -> Result<Self> {
        let mut listener = PgListener::connect_with(pool).await?;
        // A lost connection is reported, never mended behind our back:
        // the listener's owner decides when to listen again.
        listener.eager_reconnect(false);
        listener.listen_all(channels.iter().copied()).await?;
        Ok(Self { listener })
    }

    /// Waits for the next announcement, or for the connection's loss (an
    /// error of it counts as a loss).
    pub async fn next(&mut self) -> Change {
        match self.listener.try_recv().await {
            Ok(Some(notification)) => Change::Changed {
                channel: notification.channel().to_owned(),
            },
            Ok(None) | Err(_) => Change::Lost,
        }
    }
}

/// What [`follow`] tells a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// A connection listens now: what was read before went unheard, so it
    /// is forgotten, and what is read from now on may be trusted longer.
    Listening,
    /// A change was announced: forget what was read.
    Changed,
    /// Nobody listens (the connection lost, renewed, or shut down): forget
    /// what was read, and trust what is read for a moment only.
    Deaf,
}

/// A cache that follows a channel: told what [`follow`] heard on it.
pub type Follower = Box<dyn Fn(Heard) + Send + Sync>;

/// Listens on each follower's channel until `shutdown`, on one connection
/// of `pool` for them all, telling each follower when a connection
/// listens, when a change is announced on its channel, and when the
/// listening ends. The connection is taken again a second after a failure
/// or a loss (logged as a warning), and every [`RENEW`].
pub async fn follow(
    pool: &Pool,
    followers: &[(&'static str, Follower)],
    shutdown: &CancellationToken,
) {
    let channels: Vec<&str> = followers.iter().map(|(channel, _)| *channel).collect();
    let tell = |heard: Heard| followers.iter().for_each(|(_, follower)| follower(heard));
    while !shutdown.is_cancelled() {
        let listened = tokio::select! {
            listened = Changes::listen(pool, &channels) => listened,
            _ = shutdown.cancelled() => break,
        };
        let mut changes = match listened {
            Ok(changes) => changes,
            Err(e) => {
                tracing::warn!(?channels, error = %e, "cannot listen for changes; what is read is trusted for a second meanwhile");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    _ = shutdown.cancelled() => break,
                }
            }
        };
        tell(Heard::Listening);
        let renew = tokio::time::sleep(RENEW);
        tokio::pin!(renew);
        loop {
            tokio::select! {
                change = changes.next() => match change {
                    Change::Changed { channel } => followers
                        .iter()
                        .filter(|(on, _)| *on == channel)
                        .for_each(|(_, follower)| follower(Heard::Changed)),
                    Change::Lost => {
                        tracing::warn!(?channels, "lost the connection listening for changes; listening again");
                        break;
                    }
                },
                _ = &mut renew => break,
                _ = shutdown.cancelled() => break,
            }
        }
        tell(Heard::Deaf);
    }
}
