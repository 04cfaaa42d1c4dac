//! Operator alerts: something an operator should look at, such as a
//! subscription the delivery engine suspended. Opened by the engine, closed
//! by the operator or by reactivating the subscription.

use serde::{Deserialize, Serialize};

use crate::{
    ids::AppId,
    subscription::{serde_opt_ts, SubscriptionId},
    time::{serde_ts, Timestamp},
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub id: uuid::Uuid,
    /// `null` for an alert about the whole installation (reconciliation
    /// found the outbox behind).
    pub app_id: Option<AppId>,
    pub suscripcion_id: Option<SubscriptionId>,
    /// What happened: a suspension `motivo` (`rechazo_401`, …), or
    /// `reconciliacion` (work that should be moving is not; closed by the
    /// engine once it moves again).
    pub motivo: String,
    pub detalle: String,
    #[serde(with = "serde_ts")]
    pub abierta_en: Timestamp,
    /// `null` while the alert is open.
    #[serde(with = "serde_opt_ts")]
    pub cerrada_en: Option<Timestamp>,
}
