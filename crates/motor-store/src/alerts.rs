//! Operator alerts: opened by the delivery engine when it suspends a
//! subscription, closed by the operator or by the reactivation.

use motor_domain::{alert::Alert, subscription::SubscriptionId, AppId};
use sqlx::{postgres::PgRow, PgConnection, PgExecutor, Row};
use uuid::Uuid;

use crate::{Result, StoreError};

const COLUMNS: &str = "id, app_id, subscription_id, motivo, detalle, abierto_en, cerrado_en";

/// Opens an alert; an open alert for the same subscription and motivo is
/// kept instead of opening a second one.
pub async fn open(
    conn: &mut PgConnection,
    app: AppId,
    subscription: Option<SubscriptionId>,
    motivo: &str,
    detalle: &str,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO alerts (id, app_id, subscription_id, motivo, detalle)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (subscription_id, motivo) WHERE cerrado_en IS NULL DO NOTHING",
    )
    .bind(Uuid::now_v7())
    .bind(Uuid::from(app))
    .bind(subscription.map(|s| *s.as_uuid()))
    .bind(motivo)
    .bind(detalle)
    .execute(conn)
    .await?;
    Ok(())
}

/// Closes every open alert of a subscription (it was reactivated).
pub async fn close_for_subscription(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
) -> Result<u64> {
    Ok(sqlx::query(
        "UPDATE alerts SET cerrado_en = now() WHERE subscription_id = $1 AND cerrado_en IS NULL",
    )
    .bind(subscription.as_uuid())
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
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM alerts
         WHERE ($1::boolean IS NULL OR (cerrado_en IS NULL) = $1)
           AND ($2::uuid IS NULL OR app_id = $2)
         ORDER BY abierto_en DESC, id DESC
         LIMIT $3"
    ))
    .bind(abiertas)
    .bind(app.map(Uuid::from))
    .bind(limit)
    .fetch_all(db)
    .await?;
    Ok(rows.iter().map(from_row).collect())
}

/// Closes one alert; closing a closed alert keeps its first closing time.
pub async fn close(db: impl PgExecutor<'_>, id: Uuid) -> Result<Alert> {
    sqlx::query(&format!(
        "UPDATE alerts SET cerrado_en = COALESCE(cerrado_en, now()) WHERE id = $1 RETURNING {COLUMNS}"
    ))
    .bind(id)
    .fetch_optional(db)
    .await?
    .map(|r| from_row(&r))
    .ok_or(StoreError::NotFound("alert"))
}

fn from_row(row: &PgRow) -> Alert {
    Alert {
        id: row.get("id"),
        app_id: row.get::<Option<Uuid>, _>("app_id").map(AppId::from_uuid),
        suscripcion_id: row
            .get::<Option<Uuid>, _>("subscription_id")
            .map(SubscriptionId::from_uuid),
        motivo: row.get("motivo"),
        detalle: row.get("detalle"),
        abierta_en: row.get("abierto_en"),
        cerrada_en: row.get("cerrado_en"),
    }
}
