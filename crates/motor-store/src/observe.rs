//! What the metrics sampler and the operator overview read: counts and
//! ages of the pipeline's backlogs. Each read is one statement under a
//! short `statement_timeout`, run every few seconds by the sampler (never
//! per scrape): a database too slow to answer leaves the previous values
//! in place instead of piling up work.

use sqlx::PgPool;
use uuid::Uuid;

use crate::Result;

/// One sample of the pipeline's backlogs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Backlog {
    /// Deliveries `fallida` (the DLQ).
    pub dlq: i64,
    /// Deliveries `pendiente`.
    pub pending: i64,
    /// Deliveries `cancelada` (kept like `entregada` ones).
    pub cancelled: i64,
    /// The subscriptions with the oldest `pendiente` deliveries, oldest
    /// first: (subscription, age of its oldest one in seconds).
    pub oldest_pending: Vec<(Uuid, f64)>,
    /// Outbox rows not yet published.
    pub outbox_depth: i64,
    /// Age of the oldest outbox row in seconds; 0 when empty.
    pub outbox_oldest_seconds: f64,
    /// Subscriptions per `estado`.
    pub subscriptions: Vec<(String, i64)>,
}

/// Reads a [`Backlog`], naming at most `top` subscriptions.
pub async fn backlog(pool: &PgPool, top: i64) -> Result<Backlog> {
    let mut tx = pool.begin().await?;
    sqlx::query!("SET LOCAL statement_timeout = '5s'")
        .execute(&mut *tx)
        .await?;
    let counts = sqlx::query!(
        r#"SELECT (SELECT count(*) FROM deliveries d WHERE estado = 'fallida'
                     AND NOT EXISTS (SELECT 1 FROM deliveries r
                                     WHERE r.event_id = d.event_id
                                       AND r.subscription_id = d.subscription_id
                                       AND r.creado_en > d.creado_en)) AS "dlq!",
                  (SELECT count(*) FROM deliveries WHERE estado = 'pendiente') AS "pending!",
                  (SELECT count(*) FROM deliveries WHERE estado = 'cancelada') AS "cancelled!",
                  (SELECT count(*) FROM outbox) AS "outbox_depth!",
                  COALESCE(EXTRACT(EPOCH FROM now() - (SELECT creado_en FROM outbox ORDER BY id LIMIT 1)), 0)::float8
                      AS "outbox_oldest!""#,
    )
    .fetch_one(&mut *tx)
    .await?;
    let oldest = sqlx::query!(
        r#"SELECT subscription_id, EXTRACT(EPOCH FROM now() - min(creado_en))::float8 AS "age!"
           FROM deliveries WHERE estado = 'pendiente'
           GROUP BY subscription_id ORDER BY min(creado_en) LIMIT $1"#,
        top,
    )
    .fetch_all(&mut *tx)
    .await?;
    let subscriptions =
        sqlx::query!(r#"SELECT estado, count(*) AS "n!" FROM subscriptions GROUP BY estado"#)
            .fetch_all(&mut *tx)
            .await?;
    tx.commit().await?;
    Ok(Backlog {
        dlq: counts.dlq,
        pending: counts.pending,
        cancelled: counts.cancelled,
        oldest_pending: oldest
            .into_iter()
            .map(|r| (r.subscription_id, r.age.max(0.0)))
            .collect(),
        outbox_depth: counts.outbox_depth,
        outbox_oldest_seconds: counts.outbox_oldest.max(0.0),
        subscriptions: subscriptions.into_iter().map(|r| (r.estado, r.n)).collect(),
    })
}
