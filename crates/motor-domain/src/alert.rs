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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Alert {
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = Uuid))]
    pub id: uuid::Uuid,
    /// `null` for an alert about the whole installation (reconciliation
    /// found the outbox behind).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = Uuid, required = true))]
    pub app_id: Option<AppId>,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub suscripcion_id: Option<SubscriptionId>,
    /// What happened: a suspension `motivo` (`rechazo_401`, …), or
    /// `reconciliacion` (work that should be moving is not; closed by the
    /// engine once it moves again).
    pub motivo: String,
    pub detalle: String,
    #[serde(with = "serde_ts")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub abierta_en: Timestamp,
    /// `null` while the alert is open.
    #[serde(with = "serde_opt_ts")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime, required = true))]
    pub cerrada_en: Option<Timestamp>,
}
