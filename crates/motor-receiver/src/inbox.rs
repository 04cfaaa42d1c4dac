//! The Postgres inbox: one row per (client, instance, event) under a
//! UNIQUE key, written in the same transaction as the receiver's own
//! effect. A retry, a replay or a second subscription of an event already
//! applied finds the row and runs nothing; the 2xx goes out only after the
//! commit, so an event Motor saw acknowledged is durably applied.

use http::StatusCode;
use sqlx::{PgConnection, PgPool};

use crate::Envelope;

/// The table [`Inbox::create`] makes. Run it yourself (in a migration)
/// if you prefer; the inbox needs only these columns and the key.
pub const SCHEMA: &str = "\
CREATE TABLE IF NOT EXISTS motor_inbox (
    client      text        NOT NULL,
    instance_id uuid        NOT NULL,
    event_id    uuid        NOT NULL,
    seq         bigint      NOT NULL,
    event_type  text        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT motor_inbox_once UNIQUE (client, instance_id, event_id)
)";

const CLAIM: &str = "\
INSERT INTO motor_inbox (client, instance_id, event_id, seq, event_type)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT ON CONSTRAINT motor_inbox_once DO NOTHING";

/// An inbox for one client: a name of your choosing (the subscription, or
/// the system that consumes it) that keeps two consumers of the same
/// events apart in one table.
#[derive(Debug, Clone)]
pub struct Inbox {
    pool: PgPool,
    client: String,
}

/// What became of one delivery.
#[derive(Debug)]
pub enum Received<E> {
    /// First time: the effect ran and committed with the inbox row.
    Applied,
    /// Already in the inbox: nothing ran.
    Duplicate,
    /// The effect or the database failed: nothing was kept.
    Failed(InboxError<E>),
}

#[derive(Debug, thiserror::Error)]
pub enum InboxError<E> {
    #[error("the inbox could not be written: {0}")]
    Database(#[from] sqlx::Error),
    #[error("the effect failed")]
    Effect(E),
}

impl<E> Received<E> {
    /// 204 for [`Received::Applied`] and [`Received::Duplicate`] (Motor
    /// marks the delivery `entregada`), 500 for [`Received::Failed`]
    /// (Motor retries).
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Applied | Self::Duplicate => StatusCode::NO_CONTENT,
            Self::Failed(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

#[cfg(feature = "axum")]
impl<E> axum_core::response::IntoResponse for Received<E> {
    fn into_response(self) -> axum_core::response::Response {
        self.status().into_response()
    }
}

impl Inbox {
    pub fn new(pool: PgPool, client: impl Into<String>) -> Self {
        Self {
            pool,
            client: client.into(),
        }
    }

    /// Creates the table ([`SCHEMA`]) if it is not there.
    pub async fn create(&self) -> Result<(), sqlx::Error> {
        // Unchecked at compile time, like every statement of this crate: it
        // runs on the receiver's own database, not Motor's (whose schema
        // `.sqlx/` describes).
        sqlx::query(SCHEMA).execute(&self.pool).await.map(drop)
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Runs `effect` once per event: in one transaction, claims the event's
    /// row and, if it was new, runs `effect` on the same connection and
    /// commits both. An error from the effect or the database rolls back
    /// everything. Concurrent deliveries of one event serialise on the
    /// UNIQUE key: the second waits for the first and then finds the row
    /// (or, if the first rolled back, applies it itself).
    pub async fn receive<F, E>(&self, event: &Envelope, effect: F) -> Received<E>
    where
        F: AsyncFnOnce(&mut PgConnection) -> Result<(), E>,
    {
        let mut tx = match self.pool.begin().await {
            Ok(tx) => tx,
            Err(e) => return Received::Failed(e.into()),
        };
        let claimed = sqlx::query(CLAIM)
            .bind(&self.client)
            .bind(event.instance_id)
            .bind(event.event_id)
            .bind(event.seq)
            .bind(&event.event_type)
            .execute(&mut *tx)
            .await;
        match claimed {
            Err(e) => return Received::Failed(e.into()),
            Ok(done) if done.rows_affected() == 0 => {
                // Nothing was written; ending the transaction either way is fine.
                let _ = tx.rollback().await;
                return Received::Duplicate;
            }
            Ok(_) => {}
        }
        if let Err(e) = effect(&mut *tx).await {
            let _ = tx.rollback().await;
            return Received::Failed(InboxError::Effect(e));
        }
        match tx.commit().await {
            Ok(()) => Received::Applied,
            Err(e) => Received::Failed(e.into()),
        }
    }
}
