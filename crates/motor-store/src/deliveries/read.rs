//! Reading deliveries for `GET /v1/deliveries` and
//! `GET /v1/deliveries/{id}`, and the counts a subscription shows.

use motor_domain::{
    delivery::{DeliveryId, DeliveryState, Lane},
    subscription::SubscriptionId,
    time::Timestamp,
    AppId, EventId, InstanceId,
};
use sqlx::{postgres::PgRow, PgExecutor, Row};
use uuid::Uuid;

use super::uuids;
use crate::Result;

/// Which of an app's deliveries to list, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub app: AppId,
    /// Empty = every state.
    pub estados: Vec<DeliveryState>,
    pub subscription: Option<SubscriptionId>,
    pub instance: Option<InstanceId>,
    /// A key's instance restriction; empty = every instance.
    pub restricted_to: Vec<InstanceId>,
    pub offset: i64,
    pub limit: i64,
}

/// One delivery with the names the API shows next to its ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: DeliveryId,
    pub subscription_id: SubscriptionId,
    pub suscripcion: String,
    pub instance_id: InstanceId,
    pub instancia: String,
    pub event_id: EventId,
    pub seq: i64,
    pub event_type: String,
    pub lane: Lane,
    pub estado: DeliveryState,
    pub intentos: i32,
    pub proximo_intento: Option<Timestamp>,
    pub ultimo_status: Option<i32>,
    pub ultimo_error: Option<String>,
    pub creada_en: Timestamp,
    pub entregada_en: Option<Timestamp>,
    /// The delivery a replay or a manual retry sends again; `None` for a
    /// live delivery (and for a replay of an event whose live delivery
    /// never existed or was purged).
    pub replay_of: Option<DeliveryId>,
}

/// One recorded attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRow {
    pub numero: i32,
    pub iniciado_en: Timestamp,
    pub duracion_ms: i32,
    pub status: Option<i32>,
    pub error: Option<String>,
    pub key_ids: Vec<String>,
    /// Its answer (429 or 503 with `Retry-After`) held the subscription.
    pub throttled: bool,
}

const SELECT: &str = "SELECT d.id, d.subscription_id, s.nombre AS suscripcion, d.instance_id,
        i.nombre AS instancia, d.event_id, d.seq, e.type, d.lane, d.estado, d.intentos,
        d.proximo_intento, d.ultimo_status, d.ultimo_error, d.creada_en, d.entregada_en,
        d.replay_of
    FROM deliveries d
    JOIN subscriptions s ON s.id = d.subscription_id
    JOIN instances i ON i.id = d.instance_id
    JOIN events e ON e.event_id = d.event_id";

/// A page of the app's deliveries, newest first (creation time, then seq,
/// then id, descending). Asks for `limit` rows; ask for one more to learn
/// whether a next page exists.
pub async fn list(db: impl PgExecutor<'_>, filter: &Filter) -> Result<Vec<Delivery>> {
    let estados: Vec<&str> = filter.estados.iter().map(|e| e.as_str()).collect();
    let rows = sqlx::query(&format!(
        "{SELECT}
         WHERE d.app_id = $1
           AND (cardinality($2::text[]) = 0 OR d.estado = ANY ($2))
           AND ($3::uuid IS NULL OR d.subscription_id = $3)
           AND ($4::uuid IS NULL OR d.instance_id = $4)
           AND (cardinality($5::uuid[]) = 0 OR d.instance_id = ANY ($5))
         ORDER BY d.creada_en DESC, d.seq DESC, d.id DESC
         OFFSET $6 LIMIT $7"
    ))
    .bind(filter.app.as_uuid())
    .bind(&estados)
    .bind(filter.subscription.map(|s| *s.as_uuid()))
    .bind(filter.instance.map(Uuid::from))
    .bind(uuids(&filter.restricted_to))
    .bind(filter.offset)
    .bind(filter.limit)
    .fetch_all(db)
    .await?;
    Ok(rows.iter().map(from_row).collect())
}

/// One delivery of the app.
pub async fn get(db: impl PgExecutor<'_>, app: AppId, id: DeliveryId) -> Result<Option<Delivery>> {
    let row = sqlx::query(&format!("{SELECT} WHERE d.id = $1 AND d.app_id = $2"))
        .bind(id.as_uuid())
        .bind(app.as_uuid())
        .fetch_optional(db)
        .await?;
    Ok(row.as_ref().map(from_row))
}

/// A delivery's attempts, in order.
pub async fn attempts(db: impl PgExecutor<'_>, id: DeliveryId) -> Result<Vec<AttemptRow>> {
    let rows = sqlx::query(
        "SELECT numero, iniciado_en, duracion_ms, status, error, key_ids, throttled
         FROM delivery_attempts WHERE delivery_id = $1 ORDER BY numero",
    )
    .bind(id.as_uuid())
    .fetch_all(db)
    .await?;
    Ok(rows
        .iter()
        .map(|r| AttemptRow {
            numero: r.get("numero"),
            iniciado_en: r.get("iniciado_en"),
            duracion_ms: r.get("duracion_ms"),
            status: r.get("status"),
            error: r.get("error"),
            key_ids: r.get("key_ids"),
            throttled: r.get("throttled"),
        })
        .collect())
}

/// `(pendientes, fallidas)` of each subscription, in `ids` order: what a
/// subscription shows as `pendientes` and `fallidas`.
pub async fn counts(db: impl PgExecutor<'_>, ids: &[SubscriptionId]) -> Result<Vec<(i64, i64)>> {
    let wanted: Vec<Uuid> = ids.iter().map(|i| *i.as_uuid()).collect();
    let rows = sqlx::query(
        "SELECT subscription_id,
                count(*) FILTER (WHERE estado = 'pendiente') AS pendientes,
                count(*) FILTER (WHERE estado = 'fallida') AS fallidas
         FROM deliveries
         WHERE subscription_id = ANY ($1) AND estado IN ('pendiente', 'fallida')
         GROUP BY subscription_id",
    )
    .bind(&wanted)
    .fetch_all(db)
    .await?;
    let mut out = vec![(0, 0); ids.len()];
    for row in rows {
        let sub: Uuid = row.get("subscription_id");
        if let Some(i) = wanted.iter().position(|u| *u == sub) {
            out[i] = (row.get("pendientes"), row.get("fallidas"));
        }
    }
    Ok(out)
}

fn from_row(row: &PgRow) -> Delivery {
    let lane: String = row.get("lane");
    let estado: String = row.get("estado");
    Delivery {
        id: DeliveryId::from_uuid(row.get("id")),
        subscription_id: SubscriptionId::from_uuid(row.get("subscription_id")),
        suscripcion: row.get("suscripcion"),
        instance_id: InstanceId::from_uuid(row.get("instance_id")),
        instancia: row.get("instancia"),
        event_id: EventId::from_uuid(row.get("event_id")),
        seq: row.get("seq"),
        event_type: row.get("type"),
        lane: lane.parse().unwrap_or(Lane::Live),
        // The table's CHECK admits only these.
        estado: DeliveryState::parse(&estado).unwrap_or(DeliveryState::Pending),
        intentos: row.get("intentos"),
        proximo_intento: row.get("proximo_intento"),
        ultimo_status: row.get("ultimo_status"),
        ultimo_error: row.get("ultimo_error"),
        creada_en: row.get("creada_en"),
        entregada_en: row.get("entregada_en"),
        replay_of: row
            .get::<Option<Uuid>, _>("replay_of")
            .map(DeliveryId::from_uuid),
    }
}
