//! Changes to `api_keys` as Postgres announces them (migration 0026: a
//! statement that updates, deletes or truncates keys notifies
//! [`CHANNEL`] at its commit). The API's key cache listens here to forget
//! what it trusts (`motor_api::auth::ApiKeys`).

use sqlx::postgres::PgListener;

use crate::{Pool, Result};

/// The channel migration 0026's trigger notifies.
pub const CHANNEL: &str = "motor_api_keys";

/// What [`KeyChanges::next`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyChange {
    /// A statement that changed keys committed.
    Changed,
    /// The connection was lost: what was announced meanwhile is not known.
    Lost,
}

/// A connection of the pool listening on [`CHANNEL`].
pub struct KeyChanges {
    listener: PgListener,
}

impl KeyChanges {
    /// Takes a connection from the pool and listens: every change that
    /// commits from the return on is announced.
    pub async fn listen(pool: &Pool) -> Result<Self> {
        let mut listener = PgListener::connect_with(pool).await?;
        // A lost connection is reported, never mended behind our back:
        // the listener's owner decides when to listen again.
        listener.eager_reconnect(false);
        listener.listen(CHANNEL).await?;
        Ok(Self { listener })
    }

    /// Waits for the next announcement, or for the connection's loss (an
    /// error of it counts as a loss).
    pub async fn next(&mut self) -> KeyChange {
        match self.listener.try_recv().await {
            Ok(Some(_)) => KeyChange::Changed,
            Ok(None) | Err(_) => KeyChange::Lost,
        }
    }
}
