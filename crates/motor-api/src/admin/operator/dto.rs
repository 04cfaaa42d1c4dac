//! The wire shapes of the operator's cross-app views: deliveries, the DLQ
//! and the reconciliation report. Field names are the JSON keys.

use motor_domain::time;
use motor_store::deliveries::read::Delivery;
use serde::Serialize;
use utoipa::ToSchema;

use crate::deliveries::AttemptView;

/// One delivery as the operator sees it (any app).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaOperador)]
pub struct OperatorDelivery {
    #[schema(format = Uuid)]
    pub delivery_id: String,
    #[schema(format = Uuid)]
    pub app_id: String,
    #[schema(format = Uuid)]
    pub suscripcion_id: String,
    pub suscripcion: String,
    #[schema(format = Uuid)]
    pub instance_id: String,
    pub instancia: String,
    #[schema(format = Uuid)]
    pub event_id: String,
    pub seq: i64,
    #[serde(rename = "type")]
    pub event_type: String,
    /// `live` or the replay's id.
    pub carril: String,
    /// `pendiente`, `entregada` or `fallida`.
    pub estado: String,
    pub intentos: i32,
    #[schema(format = DateTime)]
    pub proximo_intento_en: Option<String>,
    pub ultimo_status: Option<i32>,
    pub ultimo_error: Option<String>,
    #[schema(format = DateTime)]
    pub creada_en: String,
    #[schema(format = DateTime)]
    pub entregada_en: Option<String>,
}

impl From<Delivery> for OperatorDelivery {
    fn from(d: Delivery) -> Self {
        Self {
            delivery_id: d.id.to_string(),
            app_id: d.app_id.to_string(),
            suscripcion_id: d.subscription_id.to_string(),
            suscripcion: d.subscription_name,
            instance_id: d.instance_id.to_string(),
            instancia: d.instance_name,
            event_id: d.event_id.to_string(),
            seq: d.seq,
            event_type: d.event_type,
            carril: d.lane.to_string(),
            estado: d.state.as_str().to_owned(),
            intentos: d.attempts,
            proximo_intento_en: d.next_attempt.as_ref().map(time::format),
            ultimo_status: d.last_status,
            ultimo_error: d.last_error,
            creada_en: time::format(&d.created_at),
            entregada_en: d.delivered_at.as_ref().map(time::format),
        }
    }
}

/// A page of deliveries, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaOperadorList)]
pub struct OperatorDeliveryList {
    pub entregas: Vec<OperatorDelivery>,
    /// Pass it as `cursor` for the next page; `null` on the last one.
    pub siguiente_cursor: Option<String>,
}

/// One delivery with its attempts.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaOperadorDetalle)]
pub struct OperatorDeliveryDetail {
    #[serde(flatten)]
    pub entrega: OperatorDelivery,
    pub intentos_detalle: Vec<AttemptView>,
}
