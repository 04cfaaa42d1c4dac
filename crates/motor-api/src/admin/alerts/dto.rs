//! The wire shapes of the alerts: the list, its query and one alert.

use motor_domain::{
    alert::Alert,
    time::{serde_opt_ts, serde_ts, Timestamp},
    AppId,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::subscriptions::SubscriptionIdOut;

#[derive(Debug, Serialize, ToSchema)]
pub struct AlertList {
    pub alerts: Vec<AlertOut>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AlertQuery {
    /// `abierta` or `cerrada`; both when absent.
    #[param(pattern = "^(abierta|cerrada)$")]
    pub estado: Option<String>,
    /// Only this app's alerts.
    #[param(format = Uuid)]
    pub app_id: Option<String>,
}

// An alert as the API shows it. Field order is the order on the wire. (A
// plain comment: a doc comment would become the schema's description.)
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Alert)]
pub struct AlertOut {
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    /// `null` for an alert about the whole installation (reconciliation
    /// found the outbox behind).
    #[schema(value_type = Option<String>, format = Uuid, required = true)]
    pub app_id: Option<AppId>,
    #[schema(required = true)]
    pub suscripcion_id: Option<SubscriptionIdOut>,
    /// What happened: a suspension `motivo` (`rechazo_401`, …), or
    /// `reconciliacion` (work that should be moving is not; closed by the
    /// engine once it moves again).
    pub motivo: String,
    pub detalle: String,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub abierta_en: Timestamp,
    /// `null` while the alert is open.
    #[serde(with = "serde_opt_ts")]
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub cerrada_en: Option<Timestamp>,
}

impl From<Alert> for AlertOut {
    fn from(a: Alert) -> Self {
        Self {
            id: a.id,
            app_id: a.app_id,
            suscripcion_id: a.subscription_id.map(|s| SubscriptionIdOut(*s.as_uuid())),
            motivo: a.reason,
            detalle: a.detail,
            abierta_en: a.opened_at,
            cerrada_en: a.closed_at,
        }
    }
}
