//! The wire shapes of `/v1/deliveries`: a delivery as listed, its
//! attempts, the page, and the OpenAPI schema of the domain's delivery
//! state (the domain crate knows no OpenAPI). Field names are the JSON
//! keys; field order is the order on the wire.

use motor_domain::{
    delivery::{CancelReason, DeliveryState},
    time,
};
use motor_store::deliveries::read::{AttemptRow, Delivery};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The state of one (event, subscription) delivery.
#[derive(Serialize, ToSchema)]
#[schema(as = DeliveryState)]
pub enum DeliveryStateOut {
    #[serde(rename = "pendiente")]
    Pending,
    #[serde(rename = "entregada")]
    Delivered,
    #[serde(rename = "fallida")]
    Failed,
    /// Its subscription's contract cancels on deactivation (`visito`) and
    /// the subscription was paused, suspended or deleted, or the API key
    /// it is bound to was revoked or expired (`motivo`). Terminal; a
    /// replay still sends its event.
    #[serde(rename = "cancelada")]
    Cancelled,
}

/// Why a delivery ended `cancelada`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = MotivoCancelacion)]
pub enum CancelReasonOut {
    #[serde(rename = "suscripcion_pausada")]
    SubscriptionPaused,
    #[serde(rename = "suscripcion_suspendida")]
    SubscriptionSuspended,
    #[serde(rename = "suscripcion_eliminada")]
    SubscriptionDeleted,
    #[serde(rename = "clave_revocada")]
    KeyRevoked,
    #[serde(rename = "clave_vencida")]
    KeyExpired,
    /// The bound API key lacks a read scope the catalogue now asks for a
    /// type the subscription selects.
    #[serde(rename = "clave_sin_permiso")]
    KeyUnderScoped,
}

impl From<CancelReason> for CancelReasonOut {
    fn from(r: CancelReason) -> Self {
        match r {
            CancelReason::SubscriptionPaused => Self::SubscriptionPaused,
            CancelReason::SubscriptionSuspended => Self::SubscriptionSuspended,
            CancelReason::SubscriptionDeleted => Self::SubscriptionDeleted,
            CancelReason::KeyRevoked => Self::KeyRevoked,
            CancelReason::KeyExpired => Self::KeyExpired,
            CancelReason::KeyUnderScoped => Self::KeyUnderScoped,
        }
    }
}

/// One delivery as listed. Field order is the order on the wire.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Entrega)]
pub struct DeliveryView {
    /// `X-MW-Delivery-Id`: the same on every retry of this delivery.
    #[schema(format = Uuid)]
    pub delivery_id: String,
    #[schema(format = Uuid)]
    pub suscripcion_id: String,
    /// The subscription's `nombre`.
    pub suscripcion: String,
    #[schema(format = Uuid)]
    pub instance_id: String,
    /// The instance's `nombre`.
    pub instancia: String,
    #[schema(format = Uuid)]
    pub event_id: String,
    pub seq: i64,
    /// The event's type.
    #[serde(rename = "type")]
    pub event_type: String,
    #[schema(value_type = DeliveryStateOut)]
    pub estado: DeliveryState,
    /// Attempts made so far.
    pub intentos: i32,
    /// When the next attempt is due; `null` once `entregada` or `fallida`.
    #[schema(format = DateTime)]
    pub proximo_intento_en: Option<String>,
    /// HTTP status of the last attempt; `null` before the first or when
    /// no answer came.
    pub ultimo_status: Option<i32>,
    /// Sanitised code of the last failure (`http_503`, `timeout`, …).
    pub ultimo_error: Option<String>,
    #[schema(format = DateTime)]
    pub creada_en: String,
    /// The delivery a replay or a manual retry sends again (also in the
    /// `X-MW-Replay-Of` header); `null` for a live delivery, and for a
    /// replay of an event that had no live delivery to this subscription
    /// (or whose live delivery was purged).
    #[schema(format = Uuid)]
    pub replay_of: Option<String>,
    /// Why it ended `cancelada`; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub motivo: Option<CancelReasonOut>,
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Intento)]
pub struct AttemptView {
    /// 1, 2, 3, …
    pub numero: i32,
    #[schema(format = DateTime)]
    pub iniciado_en: String,
    pub duracion_ms: i32,
    /// `null` when no answer came (timeout, network error).
    pub status: Option<i32>,
    /// Sanitised code; `null` when delivered.
    pub error: Option<String>,
    /// The key ids that signed it, comma-separated, newest first (as in
    /// `X-MW-Key-Id`).
    #[schema(example = "whk_5f0c6a4e9b1d2c3a4b5c6d7e")]
    pub key_ids: String,
    /// The answer (429 or 503 with `Retry-After`) held every lane of the
    /// subscription until the time it asked for.
    pub throttled: bool,
}

/// One delivery with its attempts.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaDetalle)]
pub struct DeliveryDetail {
    #[serde(flatten)]
    pub entrega: DeliveryView,
    pub intentos_detalle: Vec<AttemptView>,
}

/// A page of deliveries, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaList)]
pub struct DeliveryList {
    pub entregas: Vec<DeliveryView>,
    pub pagina: i64,
    pub por_pagina: i64,
    /// Whether a next page has deliveries.
    pub hay_mas: bool,
}

impl From<Delivery> for DeliveryView {
    fn from(d: Delivery) -> Self {
        Self {
            delivery_id: d.id.to_string(),
            suscripcion_id: d.subscription_id.to_string(),
            suscripcion: d.subscription_name,
            instance_id: d.instance_id.to_string(),
            instancia: d.instance_name,
            event_id: d.event_id.to_string(),
            seq: d.seq,
            event_type: d.event_type,
            estado: d.state,
            intentos: d.attempts,
            proximo_intento_en: d.next_attempt.as_ref().map(time::format),
            ultimo_status: d.last_status,
            ultimo_error: d.last_error,
            creada_en: time::format(&d.created_at),
            replay_of: d.replay_of.map(|id| id.to_string()),
            motivo: d.cancel_reason.map(Into::into),
        }
    }
}

impl From<AttemptRow> for AttemptView {
    fn from(a: AttemptRow) -> Self {
        Self {
            numero: a.number,
            iniciado_en: time::format(&a.started_at),
            duracion_ms: a.duration_ms,
            status: a.status,
            error: a.error,
            key_ids: a.key_ids.join(","),
            throttled: a.throttled,
        }
    }
}

/// The optional body of a manual retry.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRetry {
    /// Why: 1–300 characters, kept for the audit; default
    /// `reintento manual`.
    #[schema(
        max_length = 300,
        pattern = "^[^\\u0000]*[^\\u0000\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000]*$"
    )]
    pub motivo: Option<String>,
}
