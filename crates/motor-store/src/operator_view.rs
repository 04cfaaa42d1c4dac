//! What the operator sees across apps: the DLQ summarised by subscription
//! and error code, selections of the DLQ to retry, and every subscription
//! with its counts. Deliveries themselves are read by
//! `crate::deliveries::read`, the same reads the app API uses.

use motor_domain::{subscription::SubscriptionId, time::Timestamp, AppId, EventId};
use sqlx::PgExecutor;
use uuid::Uuid;

use crate::Result;

/// One group of the DLQ: a subscription's `fallida` deliveries with one
/// `ultimo_error`.
///
/// The DLQ holds the `fallida` deliveries not sent again: one whose event
/// has a later delivery to the same subscription (a retry, or a replay)
/// stays `fallida` as history but has left the DLQ (issue 36, item 6: a
/// successful retry made the count go down and the group go away).
#[derive(Debug, Clone, PartialEq)]
pub struct DlqGroup {
    pub app_id: Uuid,
    pub subscription_id: Uuid,
    pub subscription_name: String,
    pub subscription_state: String,
    pub last_error: Option<String>,
    pub failed: i64,
    pub last_failed_at: Timestamp,
}

/// The DLQ by subscription and error code, largest groups first;
/// `app` narrows it to one app.
pub async fn dlq(db: impl PgExecutor<'_>, app: Option<Uuid>) -> Result<Vec<DlqGroup>> {
    let rows = sqlx::query!(
        r#"SELECT g.subscription_id AS "subscription_id!", g.ultimo_error,
                  g.fallidas AS "failed!", g.ultima_en AS "last_at!", s.app_id,
                  s.nombre AS subscription_name, s.estado
           FROM (SELECT subscription_id, ultimo_error, count(*) AS fallidas,
                        max(actualizado_en) AS ultima_en
                 FROM deliveries d WHERE estado = 'fallida'
                   AND ($1::uuid IS NULL OR app_id = $1)
                   AND NOT EXISTS (SELECT 1 FROM deliveries r
                                   WHERE r.event_id = d.event_id
                                     AND r.subscription_id = d.subscription_id
                                     AND r.creado_en > d.creado_en)
                 GROUP BY subscription_id, ultimo_error) g
           JOIN subscriptions s ON s.id = g.subscription_id
           ORDER BY g.fallidas DESC, g.subscription_id, g.ultimo_error"#,
        app,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| DlqGroup {
            app_id: r.app_id,
            subscription_id: r.subscription_id,
            subscription_name: r.subscription_name,
            subscription_state: r.estado,
            last_error: r.ultimo_error,
            failed: r.failed,
            last_failed_at: r.last_at,
        })
        .collect())
}

/// Which `fallida` deliveries to retry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DlqSelection {
    pub subscription: Option<Uuid>,
    pub app: Option<Uuid>,
    pub last_errors: Vec<String>,
    pub delivery_ids: Vec<Uuid>,
    pub limit: i64,
}

/// The selection's failed deliveries, as (app, subscription, event),
/// oldest first; at most `limit`. A selection by subscription, app or
/// error takes only those still in the DLQ (not sent again since); one by
/// delivery ids takes the ids named. Deleted subscriptions' are left out
/// (they send nothing).
pub async fn failed_selection(
    db: impl PgExecutor<'_>,
    selection: &DlqSelection,
) -> Result<Vec<(AppId, SubscriptionId, EventId)>> {
    let rows = sqlx::query!(
        "SELECT d.app_id, d.subscription_id, d.event_id FROM deliveries d
         JOIN subscriptions s ON s.id = d.subscription_id AND s.estado <> 'eliminada'
         WHERE d.estado = 'fallida'
           AND ($1::uuid IS NULL OR d.subscription_id = $1)
           AND ($2::uuid IS NULL OR d.app_id = $2)
           AND (cardinality($3::text[]) = 0 OR d.ultimo_error = ANY ($3))
           AND (cardinality($4::uuid[]) = 0 OR d.id = ANY ($4))
           AND (cardinality($4::uuid[]) > 0 OR NOT EXISTS (
                SELECT 1 FROM deliveries r
                WHERE r.event_id = d.event_id AND r.subscription_id = d.subscription_id
                  AND r.creado_en > d.creado_en))
         ORDER BY d.creado_en, d.id
         LIMIT $5",
        selection.subscription,
        selection.app,
        &selection.last_errors,
        &selection.delivery_ids,
        selection.limit,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                AppId::from_uuid(r.app_id),
                SubscriptionId::from_uuid(r.subscription_id),
                EventId::from_uuid(r.event_id),
            )
        })
        .collect())
}

/// The app of a subscription (`None`: no such subscription).
pub async fn subscription_app(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<AppId>> {
    let app: Option<Uuid> =
        sqlx::query_scalar!("SELECT app_id FROM subscriptions WHERE id = $1", id)
            .fetch_optional(db)
            .await?;
    Ok(app.map(AppId::from_uuid))
}

/// A subscription as the console lists it (no secret, no credentials).
#[derive(Debug, Clone, PartialEq)]
pub struct OpSubscription {
    pub id: Uuid,
    pub app_id: Uuid,
    pub app: String,
    pub name: String,
    pub url: String,
    pub state: String,
    pub reason: Option<String>,
    pub suspended_at: Option<Timestamp>,
    pub ordered: bool,
    pub pending: i64,
    pub failed: i64,
    /// Why it is failing now: the `ultimo_error` of one of its open
    /// deliveries that has one (a retrying head), if any.
    pub failing_with: Option<String>,
}

/// Every subscription of every app but the deleted ones, suspended first,
/// then paused, then by app and name; with their open counts.
pub async fn subscriptions(db: impl PgExecutor<'_>) -> Result<Vec<OpSubscription>> {
    let rows = sqlx::query!(
        r#"SELECT s.id, s.app_id, a.nombre AS app, s.nombre, s.url, s.estado, s.motivo,
                s.suspendido_en, s.ordenado,
                COALESCE(c.pendientes, 0) AS "pending!", COALESCE(c.fallidas, 0) AS "failed!",
                (SELECT d.ultimo_error FROM deliveries d
                 WHERE d.subscription_id = s.id AND d.estado = 'pendiente'
                   AND d.ultimo_error IS NOT NULL
                 LIMIT 1) AS fallando_con
         FROM subscriptions s
         JOIN apps a ON a.id = s.app_id
         LEFT JOIN (SELECT subscription_id,
                           count(*) FILTER (WHERE estado = 'pendiente') AS pendientes,
                           count(*) FILTER (WHERE estado = 'fallida') AS fallidas
                    FROM deliveries WHERE estado IN ('pendiente', 'fallida')
                    GROUP BY subscription_id) c ON c.subscription_id = s.id
         WHERE s.estado <> 'eliminada'
         ORDER BY CASE s.estado WHEN 'suspendida' THEN 0 WHEN 'pausada' THEN 1 ELSE 2 END,
                  a.nombre, s.nombre, s.id"#,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| OpSubscription {
            id: r.id,
            app_id: r.app_id,
            app: r.app,
            name: r.nombre,
            url: r.url,
            state: r.estado,
            reason: r.motivo,
            suspended_at: r.suspendido_en,
            ordered: r.ordenado,
            pending: r.pending,
            failed: r.failed,
            failing_with: r.fallando_con,
        })
        .collect())
}
