//! Reading deliveries: an app's (`GET /v1/deliveries`, `GET
//! /v1/deliveries/{id}`), the operator's search across apps and a
//! delivery's siblings (the console), and the counts a subscription shows.
//! Every read answers the same [`Delivery`].

use motor_domain::{
    delivery::{CancelReason, DeliveryId, DeliveryState, Lane},
    subscription::SubscriptionId,
    time::Timestamp,
    AppId, EventId, InstanceId,
};
use sqlx::PgExecutor;
use uuid::Uuid;

use super::uuids;
use crate::Result;

/// Which of an app's deliveries to list, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub app: AppId,
    /// Empty = every state.
    pub states: Vec<DeliveryState>,
    pub subscription: Option<SubscriptionId>,
    pub instance: Option<InstanceId>,
    /// A key's instance restriction; empty = every instance.
    pub restricted_to: Vec<InstanceId>,
    pub offset: i64,
    pub limit: i64,
}

/// Which deliveries of any app the operator searches, newest id first
/// (keyset-paginated by id: ids are time-ordered uuids, so the primary key
/// walks them newest first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchFilter {
    /// Empty = every state.
    pub states: Vec<DeliveryState>,
    pub app: Option<AppId>,
    pub subscription: Option<SubscriptionId>,
    pub instance: Option<InstanceId>,
    /// `ultimo_error` codes; empty = any.
    pub last_errors: Vec<String>,
    /// Created from (inclusive) and until (exclusive).
    pub from: Option<Timestamp>,
    pub until: Option<Timestamp>,
    /// Only deliveries with an id below this one (the cursor).
    pub before: Option<DeliveryId>,
    pub limit: i64,
}

/// One delivery with the names the API and the console show next to its
/// ids: what every read of a delivery answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: DeliveryId,
    pub app_id: AppId,
    pub subscription_id: SubscriptionId,
    pub subscription_name: String,
    pub instance_id: InstanceId,
    pub instance_name: String,
    pub event_id: EventId,
    pub seq: i64,
    pub event_type: String,
    pub lane: Lane,
    pub state: DeliveryState,
    pub attempts: i32,
    pub next_attempt: Option<Timestamp>,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    /// The delivery a replay or a manual retry sends again; `None` for a
    /// live delivery (and for a replay of an event whose live delivery
    /// never existed or was purged).
    pub replay_of: Option<DeliveryId>,
    /// Why it ended `cancelada`; `None` unless it did.
    pub cancel_reason: Option<CancelReason>,
}

/// One recorded attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRow {
    pub number: i32,
    pub started_at: Timestamp,
    pub duration_ms: i32,
    pub status: Option<i32>,
    pub error: Option<String>,
    pub key_ids: Vec<String>,
    /// Its answer (429 or 503 with `Retry-After`) held the subscription.
    pub throttled: bool,
}

/// A delivery joined with its names, as every read here selects it (the
/// same columns in each statement: `sqlx` wants one literal per query).
struct DeliveryRow {
    id: Uuid,
    app_id: Uuid,
    subscription_id: Uuid,
    subscription_name: String,
    instance_id: Uuid,
    instance_name: String,
    event_id: Uuid,
    seq: i64,
    event_type: String,
    lane: String,
    state: String,
    attempts: i32,
    next_attempt: Option<Timestamp>,
    last_status: Option<i32>,
    last_error: Option<String>,
    created_at: Timestamp,
    delivered_at: Option<Timestamp>,
    replay_of: Option<Uuid>,
    cancel_reason: Option<String>,
}

/// A page of the app's deliveries, newest first (creation time, then seq,
/// then id, descending). Asks for `limit` rows; ask for one more to learn
/// whether a next page exists.
pub async fn list(db: impl PgExecutor<'_>, filter: &Filter) -> Result<Vec<Delivery>> {
    let states: Vec<&str> = filter.states.iter().map(|e| e.as_str()).collect();
    let rows = sqlx::query_as!(
        DeliveryRow,
        "SELECT d.id, d.app_id, d.subscription_id, s.nombre AS subscription_name, d.instance_id,
                i.nombre AS instance_name, d.event_id, d.seq, e.type AS event_type, d.lane,
                d.estado AS state, d.intentos AS attempts, d.proximo_intento AS next_attempt,
                d.ultimo_status AS last_status, d.ultimo_error AS last_error,
                d.creado_en AS created_at, d.entregado_en AS delivered_at, d.replay_of,
                d.motivo AS cancel_reason
         FROM deliveries d
         JOIN subscriptions s ON s.id = d.subscription_id
         JOIN instances i ON i.id = d.instance_id
         JOIN events e ON e.event_id = d.event_id
         WHERE d.app_id = $1
           AND (cardinality($2::text[]) = 0 OR d.estado = ANY ($2))
           AND ($3::uuid IS NULL OR d.subscription_id = $3)
           AND ($4::uuid IS NULL OR d.instance_id = $4)
           AND (cardinality($5::uuid[]) = 0 OR d.instance_id = ANY ($5))
         ORDER BY d.creado_en DESC, d.seq DESC, d.id DESC
         OFFSET $6 LIMIT $7",
        filter.app.as_uuid(),
        &states as &[&str],
        filter.subscription.map(|s| *s.as_uuid()),
        filter.instance.map(Uuid::from),
        &uuids(&filter.restricted_to),
        filter.offset,
        filter.limit,
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(delivery).collect())
}

/// The operator's search across apps: deliveries matching `filter`, newest
/// id first; `limit` rows at most.
pub async fn search(db: impl PgExecutor<'_>, filter: &SearchFilter) -> Result<Vec<Delivery>> {
    let states: Vec<&str> = filter.states.iter().map(|e| e.as_str()).collect();
    let rows = sqlx::query_as!(
        DeliveryRow,
        "SELECT d.id, d.app_id, d.subscription_id, s.nombre AS subscription_name, d.instance_id,
                i.nombre AS instance_name, d.event_id, d.seq, e.type AS event_type, d.lane,
                d.estado AS state, d.intentos AS attempts, d.proximo_intento AS next_attempt,
                d.ultimo_status AS last_status, d.ultimo_error AS last_error,
                d.creado_en AS created_at, d.entregado_en AS delivered_at, d.replay_of,
                d.motivo AS cancel_reason
         FROM deliveries d
         JOIN subscriptions s ON s.id = d.subscription_id
         JOIN instances i ON i.id = d.instance_id
         JOIN events e ON e.event_id = d.event_id
         WHERE (cardinality($1::text[]) = 0 OR d.estado = ANY ($1))
           AND ($2::uuid IS NULL OR d.app_id = $2)
           AND ($3::uuid IS NULL OR d.subscription_id = $3)
           AND ($4::uuid IS NULL OR d.instance_id = $4)
           AND (cardinality($5::text[]) = 0 OR d.ultimo_error = ANY ($5))
           AND ($6::timestamptz IS NULL OR d.creado_en >= $6)
           AND ($7::timestamptz IS NULL OR d.creado_en < $7)
           AND ($8::uuid IS NULL OR d.id < $8)
         ORDER BY d.id DESC
         LIMIT $9",
        &states as &[&str],
        filter.app.map(|a| *a.as_uuid()),
        filter.subscription.map(|s| *s.as_uuid()),
        filter.instance.map(Uuid::from),
        &filter.last_errors,
        filter.from,
        filter.until,
        filter.before.map(|d| *d.as_uuid()),
        filter.limit,
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(delivery).collect())
}

/// One delivery: of `app`, or of any app for the operator (`None`).
pub async fn get(
    db: impl PgExecutor<'_>,
    app: Option<AppId>,
    id: DeliveryId,
) -> Result<Option<Delivery>> {
    let row = sqlx::query_as!(
        DeliveryRow,
        "SELECT d.id, d.app_id, d.subscription_id, s.nombre AS subscription_name, d.instance_id,
                i.nombre AS instance_name, d.event_id, d.seq, e.type AS event_type, d.lane,
                d.estado AS state, d.intentos AS attempts, d.proximo_intento AS next_attempt,
                d.ultimo_status AS last_status, d.ultimo_error AS last_error,
                d.creado_en AS created_at, d.entregado_en AS delivered_at, d.replay_of,
                d.motivo AS cancel_reason
         FROM deliveries d
         JOIN subscriptions s ON s.id = d.subscription_id
         JOIN instances i ON i.id = d.instance_id
         JOIN events e ON e.event_id = d.event_id
         WHERE d.id = $1 AND ($2::uuid IS NULL OR d.app_id = $2)",
        id.as_uuid(),
        app.map(|a| *a.as_uuid()),
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(delivery))
}

/// The other deliveries of one event to one subscription (a retry's or a
/// replay's), newest first; at most 50.
pub async fn siblings(db: impl PgExecutor<'_>, of: &Delivery) -> Result<Vec<Delivery>> {
    let rows = sqlx::query_as!(
        DeliveryRow,
        "SELECT d.id, d.app_id, d.subscription_id, s.nombre AS subscription_name, d.instance_id,
                i.nombre AS instance_name, d.event_id, d.seq, e.type AS event_type, d.lane,
                d.estado AS state, d.intentos AS attempts, d.proximo_intento AS next_attempt,
                d.ultimo_status AS last_status, d.ultimo_error AS last_error,
                d.creado_en AS created_at, d.entregado_en AS delivered_at, d.replay_of,
                d.motivo AS cancel_reason
         FROM deliveries d
         JOIN subscriptions s ON s.id = d.subscription_id
         JOIN instances i ON i.id = d.instance_id
         JOIN events e ON e.event_id = d.event_id
         WHERE d.event_id = $1 AND d.subscription_id = $2 AND d.id <> $3
         ORDER BY d.id DESC LIMIT 50",
        of.event_id.as_uuid(),
        of.subscription_id.as_uuid(),
        of.id.as_uuid(),
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(delivery).collect())
}

/// A delivery's attempts, in order.
pub async fn attempts(db: impl PgExecutor<'_>, id: DeliveryId) -> Result<Vec<AttemptRow>> {
    let rows = sqlx::query!(
        "SELECT numero, iniciado_en, duracion_ms, status, error, key_ids, throttled
         FROM delivery_attempts WHERE delivery_id = $1 ORDER BY numero",
        id.as_uuid(),
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| AttemptRow {
            number: r.numero,
            started_at: r.iniciado_en,
            duration_ms: r.duracion_ms,
            status: r.status,
            error: r.error,
            key_ids: r.key_ids,
            throttled: r.throttled,
        })
        .collect())
}

/// `(pendientes, fallidas)` of each subscription, in `ids` order: what a
/// subscription shows as `pendientes` and `fallidas`. Each state is read
/// from its own partial index (`deliveries_open_lane`, `deliveries_failed`):
/// `estado IN (…)` implies neither predicate, and no other index is led by
/// the subscription (migration 0013), so one range over both states would
/// read the whole table.
pub async fn counts(db: impl PgExecutor<'_>, ids: &[SubscriptionId]) -> Result<Vec<(i64, i64)>> {
    let wanted: Vec<Uuid> = ids.iter().map(|i| *i.as_uuid()).collect();
    let rows = sqlx::query!(
        r#"SELECT subscription_id AS "subscription_id!",
                  count(*) FILTER (WHERE estado = 'pendiente') AS "pending!",
                  count(*) FILTER (WHERE estado = 'fallida') AS "failed!"
           FROM (SELECT subscription_id, estado FROM deliveries
                 WHERE subscription_id = ANY ($1) AND estado = 'pendiente'
                 UNION ALL
                 SELECT subscription_id, estado FROM deliveries
                 WHERE subscription_id = ANY ($1) AND estado = 'fallida') d
           GROUP BY subscription_id"#,
        &wanted,
    )
    .fetch_all(db)
    .await?;
    let mut out = vec![(0, 0); ids.len()];
    for row in rows {
        if let Some(i) = wanted.iter().position(|u| *u == row.subscription_id) {
            out[i] = (row.pending, row.failed);
        }
    }
    Ok(out)
}

fn delivery(row: DeliveryRow) -> Delivery {
    Delivery {
        id: DeliveryId::from_uuid(row.id),
        app_id: AppId::from_uuid(row.app_id),
        subscription_id: SubscriptionId::from_uuid(row.subscription_id),
        subscription_name: row.subscription_name,
        instance_id: InstanceId::from_uuid(row.instance_id),
        instance_name: row.instance_name,
        event_id: EventId::from_uuid(row.event_id),
        seq: row.seq,
        event_type: row.event_type,
        lane: row.lane.parse().unwrap_or(Lane::Live),
        // The table's CHECK admits only these.
        state: DeliveryState::parse(&row.state).unwrap_or(DeliveryState::Pending),
        attempts: row.attempts,
        next_attempt: row.next_attempt,
        last_status: row.last_status,
        last_error: row.last_error,
        created_at: row.created_at,
        delivered_at: row.delivered_at,
        replay_of: row.replay_of.map(DeliveryId::from_uuid),
        cancel_reason: row.cancel_reason.as_deref().and_then(CancelReason::parse),
    }
}
