//! The wire shapes of the operator's cross-app views: deliveries, the DLQ
//! and the reconciliation report. Field names are the JSON keys.

use motor_app::{
    deliveries::{DeliveryDetail, SearchPage},
    dlq::RetrySelection,
};
use motor_domain::{
    reconcile::Report,
    time::{self, serde_ts, Timestamp},
};
use motor_store::{deliveries::read::Delivery, operator_view, replays::StoredReplay};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

use utoipa::{
    openapi::{RefOr, Schema, Type},
    IntoParams, ToSchema,
};

use crate::{deliveries::AttemptView, openapi::alternative, replays::Replay};

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
    /// `pendiente`, `entregada`, `fallida` or `cancelada`.
    pub estado: String,
    /// Why it ended `cancelada` (`suscripcion_pausada`, …); absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub motivo: Option<String>,
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
            motivo: d.cancel_reason.map(|r| r.as_str().to_owned()),
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

impl From<SearchPage> for OperatorDeliveryList {
    fn from(p: SearchPage) -> Self {
        Self {
            entregas: p.deliveries.into_iter().map(Into::into).collect(),
            siguiente_cursor: p.next_cursor,
        }
    }
}

impl From<DeliveryDetail> for OperatorDeliveryDetail {
    fn from(d: DeliveryDetail) -> Self {
        Self {
            entrega: d.delivery.into(),
            intentos_detalle: d.attempts.into_iter().map(Into::into).collect(),
        }
    }
}

/// One delivery with its attempts.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaOperadorDetalle)]
pub struct OperatorDeliveryDetail {
    #[serde(flatten)]
    pub entrega: OperatorDelivery,
    pub intentos_detalle: Vec<AttemptView>,
}

// ---- The reconciliation report (`/v1/admin/reconciliacion`, `motor doctor`)

/// Thresholds past which work counts as stuck.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Umbrales)]
pub struct ThresholdsOut {
    /// A due `pendiente` delivery with no live job (no lease) for this long.
    pub pendiente_segundos: u64,
    /// An ordered lane whose head has been the same delivery for this long.
    pub carril_segundos: u64,
    /// An outbox row not published for this long.
    pub outbox_segundos: u64,
}

/// A due `pendiente` delivery nothing is working on.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaSinTrabajo)]
pub struct StrandedDeliveryOut {
    #[schema(format = Uuid)]
    pub delivery_id: String,
    #[schema(format = Uuid)]
    pub suscripcion_id: String,
    #[schema(format = Uuid)]
    pub app_id: String,
    #[schema(format = Uuid)]
    pub instancia_id: String,
    pub seq: i64,
    /// When it was due.
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub vencida_en: Timestamp,
}

/// An ordered lane whose head has not moved.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = CarrilDetenido)]
pub struct StalledLaneOut {
    #[schema(format = Uuid)]
    pub suscripcion_id: String,
    #[schema(format = Uuid)]
    pub app_id: String,
    #[schema(format = Uuid)]
    pub instancia_id: String,
    /// `live` or the replay's id.
    pub carril: String,
    /// The head: the lowest open seq of the lane.
    #[schema(format = Uuid)]
    pub delivery_id: String,
    pub seq: i64,
    pub intentos: i32,
    pub ultimo_error: Option<String>,
    /// Since when this delivery has been the lane's head (as reconciliation
    /// observed it).
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub cabeza_desde: Timestamp,
}

/// The outbox is behind: rows older than the threshold.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = OutboxAtrasado)]
pub struct OutboxBacklogOut {
    /// Rows older than the threshold (counted up to 100 000).
    pub filas: i64,
    pub antiguedad_segundos: f64,
}

/// One reconciliation pass.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Report)]
pub struct ReportOut {
    /// `true` when nothing is stuck.
    pub ok: bool,
    pub umbrales: ThresholdsOut,
    pub pendientes_sin_trabajo: Vec<StrandedDeliveryOut>,
    pub carriles_detenidos: Vec<StalledLaneOut>,
    pub outbox_atrasado: Option<OutboxBacklogOut>,
}

impl From<Report> for ReportOut {
    fn from(r: Report) -> Self {
        let t = r.thresholds;
        Self {
            ok: r.ok,
            umbrales: ThresholdsOut {
                pendiente_segundos: t.pending_seconds,
                carril_segundos: t.lane_seconds,
                outbox_segundos: t.outbox_seconds,
            },
            pendientes_sin_trabajo: r
                .stranded
                .into_iter()
                .map(|d| StrandedDeliveryOut {
                    delivery_id: d.delivery_id,
                    suscripcion_id: d.subscription_id,
                    app_id: d.app_id,
                    instancia_id: d.instance_id,
                    seq: d.seq,
                    vencida_en: d.due_at,
                })
                .collect(),
            carriles_detenidos: r
                .stalled_lanes
                .into_iter()
                .map(|l| StalledLaneOut {
                    suscripcion_id: l.subscription_id,
                    app_id: l.app_id,
                    instancia_id: l.instance_id,
                    carril: l.lane,
                    delivery_id: l.delivery_id,
                    seq: l.seq,
                    intentos: l.attempts,
                    ultimo_error: l.last_error,
                    cabeza_desde: l.head_since,
                })
                .collect(),
            outbox_atrasado: r.outbox_behind.map(|o| OutboxBacklogOut {
                filas: o.rows,
                antiguedad_segundos: o.age_seconds,
            }),
        }
    }
}

// ---- The DLQ ------------------------------------------------------------

/// One group of the DLQ.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DlqGrupo)]
pub struct DlqGroup {
    #[schema(format = Uuid)]
    pub app_id: String,
    #[schema(format = Uuid)]
    pub suscripcion_id: String,
    pub suscripcion: String,
    /// The subscription's `estado` now.
    pub estado_suscripcion: String,
    pub ultimo_error: Option<String>,
    pub fallidas: i64,
    /// When the latest of them failed.
    #[schema(format = DateTime)]
    pub ultima_en: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DlqResumen)]
pub struct DlqSummary {
    /// Failed deliveries in all the groups.
    pub total: i64,
    /// Largest groups first.
    pub grupos: Vec<DlqGroup>,
}

impl From<Vec<operator_view::DlqGroup>> for DlqSummary {
    fn from(groups: Vec<operator_view::DlqGroup>) -> Self {
        Self {
            total: groups.iter().map(|g| g.failed).sum(),
            grupos: groups
                .into_iter()
                .map(|g| DlqGroup {
                    app_id: g.app_id.to_string(),
                    suscripcion_id: g.subscription_id.to_string(),
                    suscripcion: g.subscription_name,
                    estado_suscripcion: g.subscription_state,
                    ultimo_error: g.last_error,
                    fallidas: g.failed,
                    ultima_en: time::format(&g.last_failed_at),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DlqQuery {
    /// Only this app's DLQ.
    #[param(format = Uuid)]
    pub app_id: Option<String>,
}

/// Which failed deliveries to send again: name a subscription, an app or
/// delivery ids (at least one); `ultimo_error` narrows it.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryDlq {
    #[schema(format = Uuid)]
    pub suscripcion_id: Option<String>,
    #[schema(format = Uuid)]
    pub app_id: Option<String>,
    /// Only failures with these codes (`http_410`, `timeout_agotada`, …).
    #[schema(value_type = Option<Vec<crate::openapi::LastErrorCode>>)]
    pub ultimo_error: Option<Vec<String>>,
    /// 1 to 500 delivery ids of the DLQ.
    #[schema(min_items = 1, max_items = 500, value_type = Option<Vec<uuid::Uuid>>)]
    pub delivery_ids: Option<Vec<String>>,
    /// Why: 1–300 characters, kept in each replay's audit.
    #[schema(
        max_length = 300,
        pattern = "^[^\\u0000]*[^\\u0000\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000]*$"
    )]
    pub motivo: String,
}

impl From<&RetryDlq> for RetrySelection {
    fn from(b: &RetryDlq) -> Self {
        Self {
            subscription_id: b.suscripcion_id.clone(),
            app_id: b.app_id.clone(),
            last_errors: b.ultimo_error.clone(),
            delivery_ids: b.delivery_ids.clone(),
            reason: b.motivo.clone(),
        }
    }
}

/// The documented body of a DLQ retry: [`RetryDlq`]'s fields, with at
/// least one of `suscripcion_id`, `app_id`, `delivery_ids` not null.
pub struct RetryDlqBody;

impl utoipa::PartialSchema for RetryDlqBody {
    fn schema() -> RefOr<Schema> {
        crate::openapi::with_alternatives(
            RetryDlq::schema(),
            false,
            vec![
                alternative(&[("suscripcion_id", Some(Type::String))]),
                alternative(&[("app_id", Some(Type::String))]),
                alternative(&[("delivery_ids", Some(Type::Array))]),
            ],
        )
    }
}

impl ToSchema for RetryDlqBody {
    fn name() -> Cow<'static, str> {
        RetryDlq::name()
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        RetryDlq::schemas(schemas);
    }
}

/// The answer: the replays made (one per subscription).
#[derive(Debug, Serialize, ToSchema)]
pub struct RetryDlqResult {
    pub replays: Vec<Replay>,
    /// New deliveries in all of them.
    pub entregas: i64,
}

impl From<Vec<StoredReplay>> for RetryDlqResult {
    fn from(replays: Vec<StoredReplay>) -> Self {
        let replays: Vec<Replay> = replays.into_iter().map(Into::into).collect();
        Self {
            entregas: replays.iter().map(|r| r.entregas).sum(),
            replays,
        }
    }
}
