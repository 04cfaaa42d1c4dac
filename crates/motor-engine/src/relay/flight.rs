//! The relay's bookkeeping of its rounds: those handed to the producer
//! whose reports have not all come back ([`InFlight`]), and the records
//! the broker acknowledged that the outbox still holds ([`Owed`]), deleted
//! once enough are owed or the oldest was for long enough.

use std::collections::VecDeque;

use futures::{future::BoxFuture, stream::FuturesOrdered, StreamExt};
use motor_bus::Report;
use motor_metrics::Metrics;
use motor_store::{outbox, Pool};
use tokio::time::{Duration, Instant};

use super::RelayConfig;
use crate::{EngineError, Result};

/// A round's record ids and their delivery reports, in order.
type Landed = (Vec<i64>, Vec<Report>);

/// Records the broker acknowledged and the outbox still holds.
#[derive(Default)]
pub(super) struct Owed {
    pub(super) ids: Vec<i64>,
    /// When the oldest of them was acknowledged.
    since: Option<Instant>,
}

impl Owed {
    /// Acknowledged records a read deletes once this many are owed...
    const SETTLE_AT: usize = 128;
    /// ...or once the oldest was owed this long.
    const SETTLE_AFTER: Duration = Duration::from_millis(100);

    pub(super) fn push(&mut self, id: i64) {
        self.since.get_or_insert_with(Instant::now);
        self.ids.push(id);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether the next read deletes them.
    pub(super) fn due(&self, now: Instant) -> bool {
        self.ids.len() >= Self::SETTLE_AT
            || self
                .since
                .is_some_and(|since| now.saturating_duration_since(since) >= Self::SETTLE_AFTER)
    }

    pub(super) fn clear(&mut self) {
        self.ids.clear();
        self.since = None;
    }
}

/// Rounds handed to the producer whose reports have not all come back, in
/// the order they were read.
#[derive(Default)]
pub(super) struct InFlight {
    pub(super) rounds: FuturesOrdered<BoxFuture<'static, Landed>>,
    /// Every id in flight, round after round (a landed round's ids are the
    /// first ones).
    pub(super) ids: VecDeque<i64>,
}

impl InFlight {
    pub(super) fn len(&self) -> usize {
        self.rounds.len()
    }

    pub(super) fn has_room(&self, depth: usize) -> bool {
        self.rounds.is_empty()
            || (self.rounds.len() < depth && self.ids.len() < RelayConfig::PIPELINED)
    }

    /// How many records the next round may read.
    pub(super) fn limit(&self, batch: i64) -> i64 {
        if self.rounds.is_empty() {
            batch
        } else {
            batch.min((RelayConfig::PIPELINED - self.ids.len()) as i64)
        }
    }

    /// The ids a read must leave out, as one slice (no copy).
    pub(super) fn ids(&mut self) -> &[i64] {
        self.ids.make_contiguous()
    }

    /// The next round to land: its acknowledged ids are added to `owed`.
    pub(super) async fn land_one(
        &mut self,
        owed: &mut Owed,
        metrics: &Metrics,
    ) -> Option<Result<()>> {
        let (ids, reports) = self.rounds.next().await?;
        self.ids.drain(..ids.len());
        Some(settle_reports(&ids, reports, owed, metrics))
    }

    /// After a failed round: every round lands and what the broker
    /// acknowledged is deleted now (a failed delete publishes it again).
    pub(super) async fn abandon(&mut self, pool: &Pool, owed: &mut Owed, metrics: &Metrics) {
        let _ = self.land_all(owed, metrics).await;
        if let Err(e) = settle(pool, owed).await {
            tracing::warn!(error = %e, "relay cannot delete published records; retrying");
        }
    }

    /// Every round: the acknowledged ids are all added to `owed`, and the
    /// first failure, if any, is returned.
    pub(super) async fn land_all(&mut self, owed: &mut Owed, metrics: &Metrics) -> Result<()> {
        let mut first = Ok(());
        while let Some(landed) = self.land_one(owed, metrics).await {
            if first.is_ok() {
                first = landed;
            }
        }
        first
    }
}

/// Adds the acknowledged ids of a round to `owed`; an error for the rest.
fn settle_reports(
    ids: &[i64],
    reports: Vec<Report>,
    owed: &mut Owed,
    metrics: &Metrics,
) -> Result<()> {
    let mut first_error = None;
    let mut failed = 0;
    for (id, report) in ids.iter().zip(reports) {
        match report {
            Ok(()) => owed.push(*id),
            Err(e) => {
                failed += 1;
                first_error.get_or_insert(e);
            }
        }
    }
    metrics.outbox_published.inc_by((ids.len() - failed) as u64);
    match first_error {
        None => Ok(()),
        Some(e) => {
            metrics.outbox_publish_errors.inc_by(failed as u64);
            Err(EngineError::NotAcknowledged {
                failed,
                cause: e.to_string(),
            })
        }
    }
}

/// Deletes the records `owed` (published and acknowledged).
pub(super) async fn settle(pool: &Pool, owed: &mut Owed) -> Result<()> {
    if !owed.is_empty() {
        outbox::delete(pool, &owed.ids).await?;
        owed.clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledged_records_are_deleted_once_enough_or_old_enough() {
        let start = Instant::now();
        let mut owed = Owed::default();
        assert!(!owed.due(start), "nothing owed");
        owed.push(1);
        let since = owed.since.expect("the oldest is timed");
        assert!(!owed.due(since), "one, just acknowledged");
        owed.push(2);
        assert_eq!(owed.since, Some(since), "timed from the oldest");
        assert!(!owed.due(since + Owed::SETTLE_AFTER - Duration::from_millis(1)));
        assert!(owed.due(since + Owed::SETTLE_AFTER), "old enough");
        owed.clear();
        assert!(owed.is_empty() && owed.since.is_none());
        for id in 0..Owed::SETTLE_AT as i64 - 1 {
            owed.push(id);
        }
        let now = owed.since.unwrap();
        assert!(!owed.due(now));
        owed.push(-1);
        assert!(owed.due(now), "enough");
    }
}
