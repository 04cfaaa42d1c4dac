//! Replays: new deliveries of events already in the ledger, for one
//! subscription, in the replay's own lane, created with their jobs and the
//! replay's audit row in one transaction. The API validates the request
//! (`motor_domain::replay`) and locks the subscription; this module finds
//! the events and writes. The dispatcher treats the deliveries like any
//! other: it reads the stored envelope, unchanged (same event_id and
//! occurred_at), and signs with the new delivery id.

use motor_domain::{
    delivery::{DeliveryId, Lane, ReplayId},
    replay::{ReplayRequest, Selection},
    subscription::SubscriptionId,
    time::Timestamp,
    AppId, EventId, InstanceId,
};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::{deliveries, Result, StoreError};

/// A replay as stored: what its answer is made of, and the request hash
/// its Idempotency-Key was first used with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredReplay {
    pub id: ReplayId,
    pub subscription_id: SubscriptionId,
    pub request_hash: Vec<u8>,
    pub deliveries: i64,
    pub created_at: Timestamp,
}

/// What a replay needs besides its request.
#[derive(Debug, Clone)]
pub struct NewReplay<'a> {
    pub app: AppId,
    pub subscription: SubscriptionId,
    pub idempotency_key: &'a str,
    pub request_hash: &'a [u8],
    /// The API key's key_id, or `operador`.
    pub requested_by: &'a str,
    pub request: &'a ReplayRequest,
}

/// A `replays` row as [`find`] and [`insert_replay`] return it.
struct ReplayRow {
    id: Uuid,
    subscription_id: Uuid,
    request_hash: Vec<u8>,
    deliveries: i32,
    created_at: Timestamp,
}

/// The replay the app already made with this Idempotency-Key, if any.
pub async fn find(conn: &mut PgConnection, app: AppId, key: &str) -> Result<Option<StoredReplay>> {
    let row = sqlx::query_as!(
        ReplayRow,
        "SELECT id, subscription_id, request_hash, entregas AS deliveries, creado_en AS created_at
         FROM replays WHERE app_id = $1 AND idempotency_key = $2",
        Uuid::from(app),
        key,
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(stored))
}

/// The operator's replays whose Idempotency-Key starts with `prefix`,
/// oldest first (a DLQ retry keys one replay per subscription as
/// `{key}:{subscription}`).
pub async fn find_by_key_prefix(
    conn: &mut PgConnection,
    prefix: &str,
) -> Result<Vec<StoredReplay>> {
    let rows = sqlx::query_as!(
        ReplayRow,
        "SELECT id, subscription_id, request_hash, entregas AS deliveries, creado_en AS created_at
         FROM replays
         WHERE solicitado_por = 'operador' AND starts_with(idempotency_key, $1)
         ORDER BY creado_en, subscription_id",
        prefix,
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(stored).collect())
}

/// The distinct instances of those of `events` that are the app's (events
/// of other apps, and unknown ids, are left out), so the API can hold a
/// key's instance restriction against them.
pub async fn instances_of(
    conn: &mut PgConnection,
    app: AppId,
    events: &[EventId],
) -> Result<Vec<InstanceId>> {
    let ids: Vec<Uuid> = events.iter().map(|e| Uuid::from(*e)).collect();
    let found: Vec<Uuid> = sqlx::query_scalar!(
        "SELECT DISTINCT e.instance_id FROM events e JOIN instances i ON i.id = e.instance_id
         WHERE e.event_id = ANY ($1) AND i.app_id = $2",
        &ids,
        Uuid::from(app),
    )
    .fetch_all(conn)
    .await?;
    Ok(found.into_iter().map(InstanceId::from_uuid).collect())
}

/// Creates the replay in the caller's transaction, which must hold the
/// subscription's lock and have checked that it is not `eliminada`: one
/// `pendiente` delivery (new id, lane = the replay, or under `clave`
/// ordering the replay's lane of the event's `orden_clave`, as the live
/// fan-out places it) for every selected
/// event of the app that the subscription covers (its `instancias` and
/// `tipos`), the replay's row, and the jobs of what may go out now — the
/// head of each instance's part of the lane when the subscription is
/// ordered, every delivery when it is not, none when it is paused or
/// suspended ([`deliveries::release_lane`]). Events of other apps and
/// unknown ids are skipped. A key already used by the app is a
/// [`StoreError::Conflict`] (the caller looks it up first; this covers a
/// race between two subscriptions).
pub async fn create(conn: &mut PgConnection, new: &NewReplay<'_>) -> Result<StoredReplay> {
    let id = ReplayId::new();
    let lane = Lane::Replay(id).to_string();
    // One statement per form, so each uses its index (the ledger's primary
    // key for a range, events_event_id_key for ids).
    let insert = match &new.request.selection {
        Selection::Range {
            instance_id,
            from_seq,
            to_seq,
        } => {
            sqlx::query!(
            "INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq, lane,
                                     replay_of)
             SELECT motor_uuid_v7(), s.id, s.app_id, e.instance_id, e.event_id, e.seq,
                    CASE WHEN s.ordenado AND s.orden_por_clave AND e.orden_clave IS NOT NULL
                         THEN $3 || '/' || e.orden_clave ELSE $3 END,
                    (SELECT o.id FROM deliveries o
                     WHERE o.subscription_id = s.id AND split_part(o.lane, '/', 1) = 'live'
                       AND o.event_id = e.event_id)
             FROM events e
             JOIN instances i ON i.id = e.instance_id
             JOIN subscriptions s ON s.app_id = i.app_id
             WHERE s.id = $1 AND s.app_id = $2
               AND e.instance_id = $4 AND e.seq BETWEEN $5 AND $6
               AND (cardinality(s.instancias) = 0 OR e.instance_id = ANY (s.instancias))
               AND (cardinality(s.tipos) = 0 OR e.type = ANY (s.tipos))
               AND e.entorno = s.entorno
             ORDER BY e.instance_id, e.seq",
            new.subscription.as_uuid(),
            Uuid::from(new.app),
            &lane,
            Uuid::from(*instance_id),
            *from_seq,
            *to_seq,
        )
            .execute(&mut *conn)
            .await?
        }
        Selection::Events(ids) => {
            sqlx::query!(
            "INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq, lane,
                                     replay_of)
             SELECT motor_uuid_v7(), s.id, s.app_id, e.instance_id, e.event_id, e.seq,
                    CASE WHEN s.ordenado AND s.orden_por_clave AND e.orden_clave IS NOT NULL
                         THEN $3 || '/' || e.orden_clave ELSE $3 END,
                    (SELECT o.id FROM deliveries o
                     WHERE o.subscription_id = s.id AND split_part(o.lane, '/', 1) = 'live'
                       AND o.event_id = e.event_id)
             FROM events e
             JOIN instances i ON i.id = e.instance_id
             JOIN subscriptions s ON s.app_id = i.app_id
             WHERE s.id = $1 AND s.app_id = $2
               AND e.event_id = ANY ($4::uuid[])
               AND (cardinality(s.instancias) = 0 OR e.instance_id = ANY (s.instancias))
               AND (cardinality(s.tipos) = 0 OR e.type = ANY (s.tipos))
               AND e.entorno = s.entorno
             ORDER BY e.instance_id, e.seq",
            new.subscription.as_uuid(),
            Uuid::from(new.app),
            &lane,
            &ids.iter().map(|e| Uuid::from(*e)).collect::<Vec<_>>(),
        )
            .execute(&mut *conn)
            .await?
        }
    };
    let created = insert.rows_affected();
    let pedido = serde_json::to_value(&new.request.selection).expect("a selection serialises");
    let audit = Audit {
        id,
        app: new.app,
        subscription: new.subscription,
        idempotency_key: new.idempotency_key,
        request_hash: new.request_hash,
        requested_by: new.requested_by,
        reason: &new.request.reason,
    };
    let stored = insert_replay(conn, &audit, &pedido, created).await?;
    deliveries::release_lane(conn, new.subscription, Lane::Replay(id)).await?;
    Ok(stored)
}

/// The replay's audit row: who asked, what and why, and its
/// Idempotency-Key.
async fn insert_replay(
    conn: &mut PgConnection,
    new: &Audit<'_>,
    pedido: &serde_json::Value,
    created: u64,
) -> Result<StoredReplay> {
    let row = sqlx::query_as!(
        ReplayRow,
        "INSERT INTO replays (id, subscription_id, app_id, idempotency_key, request_hash,
                              solicitado_por, pedido, motivo, entregas)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         RETURNING id, subscription_id, request_hash, entregas AS deliveries,
                   creado_en AS created_at",
        new.id.as_uuid(),
        new.subscription.as_uuid(),
        Uuid::from(new.app),
        new.idempotency_key,
        new.request_hash,
        new.requested_by,
        pedido,
        new.reason,
        i32::try_from(created).unwrap_or(i32::MAX),
    )
    .fetch_one(&mut *conn)
    .await
    .map_err(|e| match &e {
        sqlx::Error::Database(db) if db.constraint() == Some("replays_idempotency_key") => {
            StoreError::Conflict("this Idempotency-Key was used with a different request".into())
        }
        _ => StoreError::Database(e),
    })?;
    Ok(stored(row))
}

/// What the audit row of a replay or a manual retry records.
struct Audit<'a> {
    id: ReplayId,
    app: AppId,
    subscription: SubscriptionId,
    idempotency_key: &'a str,
    request_hash: &'a [u8],
    requested_by: &'a str,
    reason: &'a str,
}

/// A manual retry of one `fallida` delivery (`POST /v1/deliveries/{id}/retry`).
#[derive(Debug, Clone)]
pub struct NewRetry<'a> {
    pub app: AppId,
    pub subscription: SubscriptionId,
    /// The `fallida` delivery to send again.
    pub delivery: DeliveryId,
    pub idempotency_key: &'a str,
    pub request_hash: &'a [u8],
    pub requested_by: &'a str,
    pub reason: &'a str,
}

/// Creates a manual retry in the caller's transaction, which must hold the
/// subscription's lock and have checked the delivery is `fallida` and the
/// subscription not `eliminada`: a replay of one delivery, in its own lane
/// (the replay's), with `replay_of` = the retried delivery. Returns the
/// replay and the new delivery's id. A key already used by the app is a
/// [`StoreError::Conflict`].
pub async fn create_retry(
    conn: &mut PgConnection,
    new: &NewRetry<'_>,
) -> Result<(StoredReplay, DeliveryId)> {
    let id = ReplayId::new();
    let lane = Lane::Replay(id);
    let delivery: Uuid = sqlx::query_scalar!(
        "INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq, lane,
                                 replay_of)
         SELECT motor_uuid_v7(), o.subscription_id, o.app_id, o.instance_id, o.event_id, o.seq,
                -- The retried delivery's key, if its lane has one.
                $3 || COALESCE(substr(o.lane, nullif(strpos(o.lane, '/'), 0)), ''), o.id
         FROM deliveries o
         WHERE o.id = $1 AND o.app_id = $2
         RETURNING id",
        new.delivery.as_uuid(),
        Uuid::from(new.app),
        lane.to_string(),
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(StoreError::NotFound("delivery"))?;
    let audit = Audit {
        id,
        app: new.app,
        subscription: new.subscription,
        idempotency_key: new.idempotency_key,
        request_hash: new.request_hash,
        requested_by: new.requested_by,
        reason: new.reason,
    };
    let pedido = serde_json::json!({ "entrega_id": new.delivery });
    let stored = insert_replay(conn, &audit, &pedido, 1).await?;
    deliveries::release_lane(conn, new.subscription, lane).await?;
    Ok((stored, DeliveryId::from_uuid(delivery)))
}

/// The delivery a retry (a replay of one delivery) created: the only one
/// in its lane.
pub async fn retry_delivery(
    conn: &mut PgConnection,
    replay: ReplayId,
) -> Result<Option<DeliveryId>> {
    let found: Option<Uuid> = sqlx::query_scalar!(
        "SELECT d.id FROM replays r JOIN deliveries d
             ON d.subscription_id = r.subscription_id
            AND split_part(d.lane, '/', 1) = r.id::text
         WHERE r.id = $1 LIMIT 1",
        replay.as_uuid(),
    )
    .fetch_optional(conn)
    .await?;
    Ok(found.map(DeliveryId::from_uuid))
}

fn stored(row: ReplayRow) -> StoredReplay {
    StoredReplay {
        id: ReplayId::from_uuid(row.id),
        subscription_id: SubscriptionId::from_uuid(row.subscription_id),
        request_hash: row.request_hash,
        deliveries: i64::from(row.deliveries),
        created_at: row.created_at,
    }
}

/// How far a replay's deliveries have gone: open (`pendiente`) and
/// `fallida` counted in its lane; delivered is what remains of what it
/// created (its `entregada` rows may already have passed
/// `retencion.dias_entregados` and been deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayProgress {
    pub replay: StoredReplay,
    pub pending: i64,
    pub failed: i64,
}

impl ReplayProgress {
    pub fn delivered(&self) -> i64 {
        (self.replay.deliveries - self.pending - self.failed).max(0)
    }
}

/// The progress of `replay`, when it is one of `app`'s replays to
/// `subscription`.
pub async fn progress(
    conn: &mut PgConnection,
    app: AppId,
    subscription: SubscriptionId,
    replay: ReplayId,
) -> Result<Option<ReplayProgress>> {
    let Some(row) = sqlx::query_as!(
        ReplayRow,
        "SELECT id, subscription_id, request_hash, entregas AS deliveries, creado_en AS created_at
         FROM replays WHERE id = $1 AND app_id = $2 AND subscription_id = $3",
        Uuid::from(replay),
        Uuid::from(app),
        Uuid::from(subscription),
    )
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(None);
    };
    let counts = sqlx::query!(
        // Each count on its partial index (deliveries_open_lane,
        // deliveries_failed): the cost is the subscription's open and
        // failed rows, never its delivered history.
        r#"SELECT (SELECT count(*) FROM deliveries
                   WHERE subscription_id = $1 AND split_part(lane, '/', 1) = $2
                     AND estado = 'pendiente') AS "pending!",
                  (SELECT count(*) FROM deliveries
                   WHERE subscription_id = $1 AND split_part(lane, '/', 1) = $2
                     AND estado = 'fallida') AS "failed!""#,
        Uuid::from(subscription),
        Lane::Replay(replay).to_string(),
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(Some(ReplayProgress {
        replay: stored(row),
        pending: counts.pending,
        failed: counts.failed,
    }))
}
