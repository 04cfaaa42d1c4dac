//! Operator alerts: something an operator should look at, such as a
//! subscription the delivery engine suspended. Opened by the engine, closed
//! by the operator or by reactivating the subscription.

use crate::{ids::AppId, subscription::SubscriptionId, time::Timestamp};

#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub id: uuid::Uuid,
    /// `None` for an alert about the whole installation (reconciliation
    /// found the outbox behind).
    pub app_id: Option<AppId>,
    pub subscription_id: Option<SubscriptionId>,
    /// What happened: a suspension reason's code (`rechazo_401`, …), or
    /// `reconciliacion` (work that should be moving is not; closed by the
    /// engine once it moves again).
    pub reason: String,
    pub detail: String,
    pub opened_at: Timestamp,
    /// `None` while the alert is open.
    pub closed_at: Option<Timestamp>,
}
