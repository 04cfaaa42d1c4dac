//! Operator alerts: opened by the delivery engine when it suspends a
//! subscription, closed by the operator or by the reactivation.

use motor_domain::time::Timestamp;
use motor_domain::{alert::Alert, subscription::SubscriptionId, AppId};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::{Result, StoreError};

/// An `alerts` row.
struct AlertRow {
    id: Uuid,
    app_id: Option<Uuid>,
    subscription_id: Option<Uuid>,
    reason: String,
    detail: String,
    opened_at: Timestamp,
    closed_at: Option<Timestamp>,
}

/// Opens an alert; an open alert for the same subscription and motivo is
/// kept instead of opening a second one.
pub async fn open(
    conn: &mut PgConnection,
    app: AppId,
    subscription: Option<SubscriptionId>,
    motivo: &str,
    detalle: &str,
) -> Result<()> {
    sqlx::query!(
        "INSERT INTO alerts (id, app_id, subscription_id, motivo, detalle)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (subscription_id, motivo) WHERE cerrado_en IS NULL DO NOTHING",
        Uuid::now_v7(),
        Uuid::from(app),
        subscription.map(|s| *s.as_uuid()),
        motivo,
        detalle,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Closes every open alert of a subscription (it was reactivated).
pub async fn close_for_subscription(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
) -> Result<u64> {
    Ok(sqlx::query!(
        "UPDATE alerts SET cerrado_en = now() WHERE subscription_id = $1 AND cerrado_en IS NULL",
        subscription.as_uuid(),
    )
    .execute(conn)
    .await?
    .rows_affected())
}

/// Alerts, newest first; `abiertas` filters on open (`true`) or closed
/// (`false`), `app` on one app.
pub async fn list(
    db: impl PgExecutor<'_>,
    abiertas: Option<bool>,
    app: Option<AppId>,
    limit: i64,
) -> Result<Vec<Alert>> {
    let rows = sqlx::query_as!(
        AlertRow,
        r#"SELECT id, app_id, subscription_id, motivo AS reason, detalle AS detail,
                  abierto_en AS opened_at, cerrado_en AS closed_at
           FROM alerts
           WHERE ($1::boolean IS NULL OR (cerrado_en IS NULL) = $1)
             AND ($2::uuid IS NULL OR app_id = $2)
           ORDER BY abierto_en DESC, id DESC
           LIMIT $3"#,
        abiertas,
        app.map(Uuid::from),
        limit,
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(alert).collect())
}

/// Closes one alert; closing a closed alert keeps its first closing time.
pub async fn close(db: impl PgExecutor<'_>, id: Uuid) -> Result<Alert> {
    sqlx::query_as!(
        AlertRow,
        r#"UPDATE alerts SET cerrado_en = COALESCE(cerrado_en, now()) WHERE id = $1
           RETURNING id, app_id, subscription_id, motivo AS reason, detalle AS detail,
                     abierto_en AS opened_at, cerrado_en AS closed_at"#,
        id,
    )
    .fetch_optional(db)
    .await?
    .map(alert)
    .ok_or(StoreError::NotFound("alert"))
}

fn alert(row: AlertRow) -> Alert {
    Alert {
        id: row.id,
        app_id: row.app_id.map(AppId::from_uuid),
        subscription_id: row.subscription_id.map(SubscriptionId::from_uuid),
        reason: row.reason,
        detail: row.detail,
        opened_at: row.opened_at,
        closed_at: row.closed_at,
    }
}
