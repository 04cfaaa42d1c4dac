//! One subscription's numbers for the console's subscription page: its
//! deliveries created in a window (counts by state, commit → delivered
//! latency percentiles), their attempts (duration percentiles, the last
//! errors), and its newest delivery that was tried (whose attempts the
//! page draws as a timeline). Reads the app's deliveries by creation time
//! (`deliveries_app_newest`), so the cost grows with the window's rows.

use motor_domain::{delivery::DeliveryId, subscription::SubscriptionId, time::Timestamp, AppId};
use sqlx::PgPool;
use uuid::Uuid;

use crate::Result;

/// The numbers of a subscription's deliveries created since a moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubscriptionStats {
    pub delivered: i64,
    pub failed: i64,
    pub pending: i64,
    /// From a delivery's commit to its `entregada` record, ms.
    pub latency_ms: Percentiles,
    /// One attempt's duration, ms.
    pub attempt_ms: Percentiles,
    /// The newest attempts that failed, newest first.
    pub last_errors: Vec<RecentError>,
    /// The newest delivery with at least one attempt.
    pub latest_tried: Option<DeliveryId>,
}

/// p50, p90 and p99; `None` without data.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Percentiles {
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
}

/// One failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentError {
    pub delivery_id: DeliveryId,
    pub started_at: Timestamp,
    pub status: Option<i32>,
    pub error: String,
}

/// How many failed attempts [`RecentError`] lists.
pub const LAST_ERRORS: i64 = 10;

pub async fn read(
    pool: &PgPool,
    app: AppId,
    id: SubscriptionId,
    since: Timestamp,
) -> Result<SubscriptionStats> {
    let (app, id) = (*app.as_uuid(), *id.as_uuid());
    let counts = sqlx::query!(
        r#"SELECT count(*) FILTER (WHERE estado = 'entregada') AS "delivered!",
                  count(*) FILTER (WHERE estado = 'fallida') AS "failed!",
                  count(*) FILTER (WHERE estado = 'pendiente') AS "pending!",
                  percentile_cont(0.5) WITHIN GROUP (ORDER BY lat) AS p50,
                  percentile_cont(0.9) WITHIN GROUP (ORDER BY lat) AS p90,
                  percentile_cont(0.99) WITHIN GROUP (ORDER BY lat) AS p99
           FROM (SELECT estado,
                        (EXTRACT(EPOCH FROM entregado_en - creado_en) * 1000)::float8 AS lat
                 FROM deliveries
                 WHERE app_id = $1 AND creado_en >= $3 AND subscription_id = $2) d"#,
        app,
        id,
        since,
    )
    .fetch_one(pool)
    .await?;
    let attempts = sqlx::query!(
        r#"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a.duracion_ms) AS p50,
                  percentile_cont(0.9) WITHIN GROUP (ORDER BY a.duracion_ms) AS p90,
                  percentile_cont(0.99) WITHIN GROUP (ORDER BY a.duracion_ms) AS p99
           FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
           WHERE d.app_id = $1 AND d.creado_en >= $3 AND d.subscription_id = $2"#,
        app,
        id,
        since,
    )
    .fetch_one(pool)
    .await?;
    let errors = sqlx::query!(
        r#"SELECT a.delivery_id, a.iniciado_en, a.status, a.error AS "error!"
           FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
           WHERE d.app_id = $1 AND d.creado_en >= $3 AND d.subscription_id = $2
             AND a.error IS NOT NULL
           ORDER BY a.iniciado_en DESC, a.delivery_id, a.numero DESC
           LIMIT $4"#,
        app,
        id,
        since,
        LAST_ERRORS,
    )
    .fetch_all(pool)
    .await?;
    let latest: Option<Uuid> = sqlx::query_scalar!(
        "SELECT id FROM deliveries
         WHERE app_id = $1 AND subscription_id = $2 AND intentos > 0
         ORDER BY creado_en DESC, id DESC LIMIT 1",
        app,
        id,
    )
    .fetch_optional(pool)
    .await?;
    Ok(SubscriptionStats {
        delivered: counts.delivered,
        failed: counts.failed,
        pending: counts.pending,
        latency_ms: Percentiles {
            p50: counts.p50,
            p90: counts.p90,
            p99: counts.p99,
        },
        attempt_ms: Percentiles {
            p50: attempts.p50,
            p90: attempts.p90,
            p99: attempts.p99,
        },
        last_errors: errors
            .into_iter()
            .map(|r| RecentError {
                delivery_id: DeliveryId::from_uuid(r.delivery_id),
                started_at: r.iniciado_en,
                status: r.status,
                error: r.error,
            })
            .collect(),
        latest_tried: latest.map(DeliveryId::from_uuid),
    })
}
