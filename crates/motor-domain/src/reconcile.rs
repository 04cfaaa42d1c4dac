//! What reconciliation finds: work Motor accepted that should be moving and
//! is not. The engine's periodic job, `motor doctor` and the operator API
//! show the same [`Report`].

use crate::time::Timestamp;

/// The motivo of the alerts reconciliation opens.
pub const RECONCILE_REASON: &str = "reconciliacion";

/// Thresholds past which work counts as stuck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// A due `pendiente` delivery with no live job (no lease) for this long.
    pub pending_seconds: u64,
    /// An ordered lane whose head has been the same delivery for this long.
    pub lane_seconds: u64,
    /// An outbox row not published for this long.
    pub outbox_seconds: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            pending_seconds: 300,
            lane_seconds: 900,
            outbox_seconds: 60,
        }
    }
}

/// A due `pendiente` delivery nothing is working on.
#[derive(Debug, Clone, PartialEq)]
pub struct StrandedDelivery {
    pub delivery_id: String,
    pub subscription_id: String,
    pub app_id: String,
    pub instance_id: String,
    pub seq: i64,
    /// When it was due.
    pub due_at: Timestamp,
}

/// An ordered lane whose head has not moved.
#[derive(Debug, Clone, PartialEq)]
pub struct StalledLane {
    pub subscription_id: String,
    pub app_id: String,
    pub instance_id: String,
    /// `live` or the replay's id.
    pub lane: String,
    /// The head: the lowest open seq of the lane.
    pub delivery_id: String,
    pub seq: i64,
    pub attempts: i32,
    pub last_error: Option<String>,
    /// Since when this delivery has been the lane's head (as reconciliation
    /// observed it).
    pub head_since: Timestamp,
}

/// The outbox is behind: rows older than the threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxBacklog {
    /// Rows older than the threshold (counted up to 100 000).
    pub rows: i64,
    pub age_seconds: f64,
}

/// One reconciliation pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// `true` when nothing is stuck.
    pub ok: bool,
    pub thresholds: Thresholds,
    pub stranded: Vec<StrandedDelivery>,
    pub stalled_lanes: Vec<StalledLane>,
    pub outbox_behind: Option<OutboxBacklog>,
}

impl Report {
    pub fn new(
        thresholds: Thresholds,
        stranded: Vec<StrandedDelivery>,
        stalled_lanes: Vec<StalledLane>,
        outbox_behind: Option<OutboxBacklog>,
    ) -> Self {
        Self {
            ok: stranded.is_empty() && stalled_lanes.is_empty() && outbox_behind.is_none(),
            thresholds,
            stranded,
            stalled_lanes,
            outbox_behind,
        }
    }

    /// The subscriptions with stuck work, with an operator-readable
    /// description of it (the alert's `detalle`).
    pub fn by_subscription(&self) -> Vec<(String, String, String)> {
        let mut out: Vec<(String, String, usize, usize)> = Vec::new();
        fn entry(out: &mut Vec<(String, String, usize, usize)>, sub: &str, app: &str) -> usize {
            match out.iter().position(|(s, ..)| s == sub) {
                Some(i) => i,
                None => {
                    out.push((sub.to_owned(), app.to_owned(), 0, 0));
                    out.len() - 1
                }
            }
        }
        for d in &self.stranded {
            let i = entry(&mut out, &d.subscription_id, &d.app_id);
            out[i].2 += 1;
        }
        for l in &self.stalled_lanes {
            let i = entry(&mut out, &l.subscription_id, &l.app_id);
            out[i].3 += 1;
        }
        out.into_iter()
            .map(|(sub, app, pending, lanes)| {
                let detail = format!(
                    "{pending} entregas pendientes sin trabajo (más de {} s); \
                     {lanes} carriles detenidos (más de {} s)",
                    self.thresholds.pending_seconds, self.thresholds.lane_seconds
                );
                (sub, app, detail)
            })
            .collect()
    }
}
