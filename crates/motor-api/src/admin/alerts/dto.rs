//! The wire shapes of the alerts: the list, its query and one alert.

use motor_domain::{alert::Alert, time::Timestamp, AppId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::subscriptions::SubscriptionIdSchema;

#[derive(Debug, Serialize, ToSchema)]
pub struct AlertList {
    #[schema(value_type = Vec<AlertSchema>)]
    pub alerts: Vec<Alert>,
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

#[derive(Serialize, ToSchema)]
#[schema(as = Alert)]
pub struct AlertSchema {
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    /// `null` for an alert about the whole installation (reconciliation
    /// found the outbox behind).
    #[schema(value_type = Option<String>, format = Uuid, required = true)]
    pub app_id: Option<AppId>,
    #[schema(required = true)]
    pub suscripcion_id: Option<SubscriptionIdSchema>,
    /// What happened: a suspension `motivo` (`rechazo_401`, …), or
    /// `reconciliacion` (work that should be moving is not; closed by the
    /// engine once it moves again).
    pub motivo: String,
    pub detalle: String,
    #[schema(value_type = String, format = DateTime)]
    pub abierta_en: Timestamp,
    /// `null` while the alert is open.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub cerrada_en: Option<Timestamp>,
}
