//! Shard ownership: which outbox shards this relay publishes, held under
//! Postgres advisory locks on one dedicated connection (closing it frees
//! them), rebalanced so each live relay owns its fair share.

use std::{collections::BTreeSet, time::Duration};

use motor_domain::OUTBOX_SHARDS;
use motor_store::{outbox, Pool};
use sqlx::PgConnection;
use tokio::time::Instant;

use crate::Result;

/// `application_name` of relay lock connections.
const RELAY_APP_NAME: &str = "motor-relay";

/// Shards this process owns, and the connection that holds their locks.
pub(super) struct Shards {
    pool: Pool,
    conn: Option<PgConnection>,
    owned: BTreeSet<i32>,
    checked_at: Option<Instant>,
}

impl Shards {
    /// The lock connection is made from `pool`'s current options (the
    /// host that takes writes: it follows a failover), outside the pool.
    pub(super) fn new(pool: Pool) -> Result<Self> {
        Ok(Self {
            pool,
            conn: None,
            owned: BTreeSet::new(),
            checked_at: None,
        })
    }

    /// Makes the lock connection if there is none.
    async fn connect(&mut self) -> Result<()> {
        if self.conn.is_none() {
            self.conn = Some(motor_store::connect_own(&self.pool, RELAY_APP_NAME).await?);
        }
        Ok(())
    }

    /// This relay's fair share of the shards now, from the count of live
    /// relays.
    pub(super) async fn fair_share(&mut self) -> Result<usize> {
        self.connect().await?;
        let conn = self.conn.as_mut().expect("connected above");
        Ok(outbox::fair_share(
            outbox::live_relays(&mut *conn, RELAY_APP_NAME).await?,
        ))
    }

    /// Whether owning `share` shards means giving some back: what is in
    /// flight must land and be deleted first, or the next owner publishes
    /// it again.
    pub(super) fn gives_back(&self, share: usize) -> bool {
        self.owned.len() > share
    }

    /// Gives back or takes shards so this relay owns `share` of them.
    pub(super) async fn rebalance(&mut self, share: usize) -> Result<()> {
        self.connect().await?;
        let conn = self.conn.as_mut().expect("connected above");
        while self.owned.len() > share {
            let shard = *self.owned.last().expect("non-empty");
            outbox::unlock_shard(conn, shard).await?;
            self.owned.remove(&shard);
        }
        // Start at a random shard so relays starting together spread out.
        let start = (rand::random::<u32>() % OUTBOX_SHARDS as u32) as i32;
        for i in 0..OUTBOX_SHARDS {
            if self.owned.len() >= share {
                break;
            }
            let shard = (start + i) % OUTBOX_SHARDS;
            if !self.owned.contains(&shard) && outbox::try_lock_shard(conn, shard).await? {
                self.owned.insert(shard);
            }
        }
        self.checked_at = Some(Instant::now());
        Ok(())
    }

    pub(super) fn due(&self, every: Duration) -> bool {
        self.checked_at.is_none_or(|at| at.elapsed() >= every)
    }

    /// Forgets every shard; closing the connection releases the locks.
    pub(super) fn reset(&mut self) {
        self.conn = None;
        self.owned.clear();
        self.checked_at = None;
    }

    pub(super) fn list(&self) -> Vec<i32> {
        self.owned.iter().copied().collect()
    }

    pub(super) fn count(&self) -> usize {
        self.owned.len()
    }
}
