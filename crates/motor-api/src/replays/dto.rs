//! The wire shapes of a replay: the request and the answer.

use std::borrow::Cow;

use motor_domain::{
    delivery::ReplayId,
    subscription::SubscriptionId,
    time::{serde_ts, Timestamp},
};
use motor_store::replays::{ReplayProgress, StoredReplay};
use serde::{Deserialize, Serialize};
use utoipa::{
    openapi::{RefOr, Schema, Type},
    ToSchema,
};

use crate::openapi::alternative;

/// A replay request: a range of one instance's ledger, or a list of
/// events — not both.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateReplay {
    /// With `desde_seq` and `hasta_seq`: the instance whose ledger to
    /// replay.
    #[schema(format = Uuid)]
    pub instancia_id: Option<String>,
    /// First seq of the range (at least 1).
    #[schema(minimum = 1)]
    pub desde_seq: Option<i64>,
    /// Last seq of the range (inclusive): at least `desde_seq`; a range
    /// spans at most 10 000 seqs.
    #[schema(minimum = 1)]
    pub hasta_seq: Option<i64>,
    /// Or 1 to 500 event ids.
    #[schema(min_items = 1, max_items = 500, value_type = Option<Vec<uuid::Uuid>>)]
    pub event_ids: Option<Vec<String>>,
    /// Why: 1–300 characters, kept for the audit.
    #[schema(
        max_length = 300,
        pattern = "^[^\\u0000]*[^\\u0000\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000]*$"
    )]
    pub motivo: String,
}

/// The documented body of a replay request: [`CreateReplay`]'s fields, and
/// either the whole range (`instancia_id`, `desde_seq`, `hasta_seq`) or
/// `event_ids` — the others absent or null.
pub struct CreateReplayBody;

impl utoipa::PartialSchema for CreateReplayBody {
    fn schema() -> RefOr<Schema> {
        crate::openapi::with_alternatives(
            CreateReplay::schema(),
            true,
            vec![
                alternative(&[
                    ("instancia_id", Some(Type::String)),
                    ("desde_seq", Some(Type::Integer)),
                    ("hasta_seq", Some(Type::Integer)),
                    ("event_ids", None),
                ]),
                alternative(&[
                    ("event_ids", Some(Type::Array)),
                    ("instancia_id", None),
                    ("desde_seq", None),
                    ("hasta_seq", None),
                ]),
            ],
        )
    }
}

impl ToSchema for CreateReplayBody {
    fn name() -> Cow<'static, str> {
        CreateReplay::name()
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        CreateReplay::schemas(schemas);
    }
}

/// The answer: 202, also to a repeat with the same Idempotency-Key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Replay {
    #[schema(value_type = String, format = Uuid)]
    pub replay_id: ReplayId,
    #[schema(value_type = String, format = Uuid)]
    pub suscripcion_id: SubscriptionId,
    /// How many new deliveries it created.
    pub entregas: i64,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub creado_en: Timestamp,
}

impl From<StoredReplay> for Replay {
    fn from(r: StoredReplay) -> Self {
        Self {
            replay_id: r.id,
            suscripcion_id: r.subscription_id,
            entregas: r.deliveries,
            creado_en: r.created_at,
        }
    }
}

/// How far a replay has gone: `GET /v1/subscriptions/{id}/replays/{replay_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReplayStatus {
    #[schema(value_type = String, format = Uuid)]
    pub replay_id: ReplayId,
    #[schema(value_type = String, format = Uuid)]
    pub suscripcion_id: SubscriptionId,
    /// How many deliveries it created.
    pub entregas: i64,
    /// Delivered: `entregas` less the pending and failed ones (delivered
    /// rows may have passed `retencion.dias_entregados`).
    pub entregadas: i64,
    /// Ended `fallida` (in the DLQ).
    pub fallidas: i64,
    /// Still `pendiente` (waiting, retrying, or held by a paused or
    /// suspended subscription).
    pub pendientes: i64,
    /// `true` when none is pending.
    pub terminado: bool,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub creado_en: Timestamp,
}

impl From<ReplayProgress> for ReplayStatus {
    fn from(p: ReplayProgress) -> Self {
        Self {
            replay_id: p.replay.id,
            suscripcion_id: p.replay.subscription_id,
            entregas: p.replay.deliveries,
            entregadas: p.delivered(),
            fallidas: p.failed,
            pendientes: p.pending,
            terminado: p.pending == 0,
            creado_en: p.replay.created_at,
        }
    }
}
