//! Reconciliation's reads and its alerts: due `pendiente` deliveries with
//! no live job, ordered lanes whose head has not moved, an outbox that is
//! behind. [`find`] builds the report (and records the lanes' heads in
//! `lane_heads_seen`, which is how "has not moved" is known);
//! [`apply_alerts`] opens an alert of motivo `reconciliacion` per
//! subscription with stuck work (one global one for the outbox) and closes
//! those whose work moved again.
//!
//! Passes are serialised by an advisory lock, so several sweeper processes
//! (and `motor doctor`) never interleave their writes of the lanes' heads.

use std::time::Duration;

use motor_domain::reconcile::{
    OutboxBacklog, Report, StalledLane, StrandedDelivery, Thresholds, RECONCILE_REASON,
};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::{deliveries, Pool, Result};

/// Most stuck deliveries and lanes one report names.
pub const REPORT_LIMIT: i64 = 500;

/// The advisory lock key of a pass ("reconcil" in ASCII).
const LOCK: i64 = 0x7265_636f_6e63_696c;

/// One reconciliation pass: what is stuck now.
pub async fn find(pool: &Pool, thresholds: Thresholds) -> Result<Report> {
    let pendientes = stuck_deliveries(pool, thresholds).await?;
    let mut tx = pool.begin().await?;
    sqlx::query_scalar!("SELECT pg_advisory_xact_lock($1)", LOCK)
        .fetch_one(&mut *tx)
        .await?;
    let carriles = stuck_lanes(&mut tx, thresholds).await?;
    let outbox = outbox_behind(&mut tx, thresholds).await?;
    tx.commit().await?;
    Ok(Report::new(thresholds, pendientes, carriles, outbox))
}

/// Due, unleased lane heads (any open delivery of an unordered
/// subscription) of `activa` subscriptions, due for longer than the
/// threshold: the sweeper's own query with the threshold as its staleness.
async fn stuck_deliveries(pool: &Pool, thresholds: Thresholds) -> Result<Vec<StrandedDelivery>> {
    let ids = deliveries::due_lane_heads(
        pool,
        Duration::from_secs(thresholds.pending_seconds),
        REPORT_LIMIT,
    )
    .await?;
    let ids: Vec<Uuid> = ids.iter().map(|id| *id.as_uuid()).collect();
    // `pendiente` rows always have a `proximo_intento` (the table's CHECK).
    let rows = sqlx::query!(
        r#"SELECT id, subscription_id, app_id, instance_id, seq,
                  proximo_intento AS "proximo_intento!"
           FROM deliveries WHERE id = ANY ($1) AND estado = 'pendiente'
           ORDER BY proximo_intento, id"#,
        &ids,
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| StrandedDelivery {
            delivery_id: r.id.to_string(),
            subscription_id: r.subscription_id.to_string(),
            app_id: r.app_id.to_string(),
            instance_id: r.instance_id.to_string(),
            seq: r.seq,
            due_at: r.proximo_intento,
        })
        .collect())
}

/// Walks the heads of every lane with open deliveries (one index probe per
/// lane, as the sweeper does), records each ordered `activa` lane's head in
/// `lane_heads_seen` (keeping `desde` while the head is the same delivery),
/// forgets lanes that have none, and returns the lanes whose head is older
/// than the threshold.
async fn stuck_lanes(conn: &mut PgConnection, thresholds: Thresholds) -> Result<Vec<StalledLane>> {
    let rows = sqlx::query!(
        r#"WITH RECURSIVE heads AS (
             (SELECT d.subscription_id, d.instance_id, d.lane, d.id FROM deliveries d
              WHERE d.estado = 'pendiente'
              ORDER BY d.subscription_id, d.instance_id, d.lane, d.seq
              LIMIT 1)
             UNION ALL
             SELECT n.* FROM heads h CROSS JOIN LATERAL (
                 SELECT d.subscription_id, d.instance_id, d.lane, d.id FROM deliveries d
                 WHERE d.estado = 'pendiente'
                   AND (d.subscription_id, d.instance_id, d.lane)
                       > (h.subscription_id, h.instance_id, h.lane)
                 ORDER BY d.subscription_id, d.instance_id, d.lane, d.seq
                 LIMIT 1) n
         ), live AS (
             SELECT h.* FROM heads h JOIN subscriptions s ON s.id = h.subscription_id
             WHERE s.estado = 'activa' AND s.ordenado
         ), gone AS (
             DELETE FROM lane_heads_seen w
             WHERE NOT EXISTS (SELECT 1 FROM live l
                               WHERE (l.subscription_id, l.instance_id, l.lane)
                                   = (w.subscription_id, w.instance_id, w.lane))
         ), seen AS (
             INSERT INTO lane_heads_seen AS w (subscription_id, instance_id, lane, delivery_id)
             SELECT subscription_id, instance_id, lane, id FROM live
             ON CONFLICT (subscription_id, instance_id, lane) DO UPDATE
                 SET delivery_id = EXCLUDED.delivery_id,
                     desde = CASE WHEN w.delivery_id = EXCLUDED.delivery_id
                                  THEN w.desde ELSE now() END
             RETURNING w.subscription_id, w.instance_id, w.lane, w.delivery_id, w.desde
         )
         SELECT seen.subscription_id AS "subscription_id!", seen.instance_id AS "instance_id!",
                seen.lane AS "lane!", seen.delivery_id AS "delivery_id!", seen.desde AS "desde!",
                d.app_id, d.seq, d.intentos, d.ultimo_error
         FROM seen JOIN deliveries d ON d.id = seen.delivery_id
         WHERE seen.desde <= now() - make_interval(secs => $1)
         ORDER BY seen.desde, seen.delivery_id
         LIMIT $2"#,
        thresholds.lane_seconds as f64,
        REPORT_LIMIT,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| StalledLane {
            subscription_id: r.subscription_id.to_string(),
            app_id: r.app_id.to_string(),
            instance_id: r.instance_id.to_string(),
            lane: r.lane,
            delivery_id: r.delivery_id.to_string(),
            seq: r.seq,
            attempts: r.intentos,
            last_error: r.ultimo_error,
            head_since: r.desde,
        })
        .collect())
}

/// Outbox rows older than the threshold (counted up to 100 000; the
/// oldest row is the lowest id).
async fn outbox_behind(
    conn: &mut PgConnection,
    thresholds: Thresholds,
) -> Result<Option<OutboxBacklog>> {
    let row = sqlx::query!(
        r#"SELECT (SELECT count(*) FROM (SELECT 1 FROM outbox
                     WHERE creado_en <= now() - make_interval(secs => $1) LIMIT 100000) o) AS "rows!",
                  COALESCE(EXTRACT(EPOCH FROM now() - (SELECT creado_en FROM outbox ORDER BY id LIMIT 1)), 0)::float8
                      AS "age!""#,
        thresholds.outbox_seconds as f64,
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok((row.rows > 0).then_some(OutboxBacklog {
        rows: row.rows,
        age_seconds: row.age,
    }))
}

/// What [`apply_alerts`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AlertChanges {
    pub opened_or_updated: u64,
    pub closed: u64,
}

/// Opens (or refreshes the `detalle` of) an alert of motivo
/// `reconciliacion` for every subscription with stuck work, and a global
/// one while the outbox is behind; closes the open ones whose work moved.
pub async fn apply_alerts(pool: &Pool, report: &Report) -> Result<AlertChanges> {
    let mut tx = pool.begin().await?;
    let mut changes = AlertChanges::default();
    let mut stuck: Vec<Uuid> = Vec::new();
    for (subscription, app, detalle) in report.by_subscription() {
        let (Ok(subscription), Ok(app)) = (subscription.parse::<Uuid>(), app.parse::<Uuid>())
        else {
            continue;
        };
        stuck.push(subscription);
        changes.opened_or_updated += sqlx::query!(
            "INSERT INTO alerts (id, app_id, subscription_id, motivo, detalle)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (subscription_id, motivo) WHERE cerrado_en IS NULL
             DO UPDATE SET detalle = EXCLUDED.detalle
             WHERE alerts.detalle IS DISTINCT FROM EXCLUDED.detalle",
            Uuid::now_v7(),
            app,
            subscription,
            RECONCILE_REASON,
            detalle,
        )
        .execute(&mut *tx)
        .await?
        .rows_affected();
    }
    changes.closed += sqlx::query!(
        "UPDATE alerts SET cerrado_en = now()
         WHERE motivo = $1 AND cerrado_en IS NULL AND subscription_id IS NOT NULL
           AND NOT (subscription_id = ANY ($2))",
        RECONCILE_REASON,
        &stuck,
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    match &report.outbox_behind {
        Some(o) => {
            let detalle = format!(
                "{} filas del outbox sin publicar hace más de {} s (la más antigua: {:.0} s)",
                o.rows, report.thresholds.outbox_seconds, o.age_seconds
            );
            changes.opened_or_updated += sqlx::query!(
                "INSERT INTO alerts (id, app_id, subscription_id, motivo, detalle)
                 VALUES ($1, NULL, NULL, $2, $3)
                 ON CONFLICT (motivo) WHERE cerrado_en IS NULL AND subscription_id IS NULL
                 DO UPDATE SET detalle = EXCLUDED.detalle
                 WHERE alerts.detalle IS DISTINCT FROM EXCLUDED.detalle",
                Uuid::now_v7(),
                RECONCILE_REASON,
                detalle,
            )
            .execute(&mut *tx)
            .await?
            .rows_affected();
        }
        None => {
            changes.closed += sqlx::query!(
                "UPDATE alerts SET cerrado_en = now()
                 WHERE motivo = $1 AND cerrado_en IS NULL AND subscription_id IS NULL",
                RECONCILE_REASON,
            )
            .execute(&mut *tx)
            .await?
            .rows_affected();
        }
    }
    tx.commit().await?;
    Ok(changes)
}
