//! Disabling on sustained failure (seed 003 §8). Every failed attempt
//! (retried or final) counts against its subscription in
//! `subscription_health` — since when its attempts fail, and how many in a
//! row — and every success forgets it. When both thresholds are passed at
//! once (`webhooks.desactivar_tras_horas` and
//! `webhooks.desactivar_tras_fallos`), the subscription is suspended with
//! `fallos_sostenidos`, an alert opens, and an event
//! `webhook_endpoint.disabled` is appended to the ledger of the app's
//! system instance and delivered to every other `activa` subscription of
//! the app, whatever their `instancias` and `tipos` — through the normal
//! pipeline (signed, retried, ordered, replayable). All of it in the
//! transaction that records the attempt. Nothing pending is lost: a
//! suspended subscription keeps its deliveries `pendiente`, and
//! reactivation releases them in lane order.

use motor_domain::{
    contract::Environment,
    destination::{CanonicalHost, Destination},
    event::{EventType, NewEvent, Origin},
    subscription::{SubscriptionId, SuspensionReason},
    time::{self, Timestamp},
    AppId,
};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::{deliveries, ledger, operator, settings, subscriptions, Result};

/// The type of the event other subscriptions receive.
pub const DISABLED_EVENT: &str = "webhook_endpoint.disabled";

/// Counts a failed attempt of `subscription` made at `at`; disables the
/// subscription when the failure is now sustained. Whether it did.
pub async fn record_failure(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
    at: Timestamp,
) -> Result<bool> {
    let row = sqlx::query!(
        "INSERT INTO subscription_health (subscription_id, fallando_desde, fallos_consecutivos)
         VALUES ($1, $2, 1)
         ON CONFLICT (subscription_id) DO UPDATE
             SET fallos_consecutivos = subscription_health.fallos_consecutivos + 1
         RETURNING fallando_desde, fallos_consecutivos",
        subscription.as_uuid(),
        at,
    )
    .fetch_one(&mut *conn)
    .await?;
    let since: Timestamp = row.fallando_desde;
    let failures: i64 = row.fallos_consecutivos;
    let settings = settings::load(&mut *conn).await?;
    if !settings.sustained_failure(since, failures, chrono::Utc::now()) {
        return Ok(false);
    }
    disable(conn, subscription, since, failures).await
}

/// A success (or a reactivation): the subscription's failures are
/// forgotten. Probes the key only when it is healthy.
pub async fn forget(db: impl PgExecutor<'_>, subscriptions: &[Uuid]) -> Result<()> {
    sqlx::query!(
        "DELETE FROM subscription_health WHERE subscription_id = ANY ($1)",
        subscriptions
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Suspends with `fallos_sostenidos` (and its alert) and tells the app's
/// other `activa` subscriptions. False when it was not `activa`/`pausada`
/// any more (another attempt disabled it first).
async fn disable(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
    since: Timestamp,
    failures: i64,
) -> Result<bool> {
    let detalle = format!(
        "every attempt failed since {} ({failures} in a row)",
        time::format(&since)
    );
    if !subscriptions::suspend(
        conn,
        subscription,
        SuspensionReason::SustainedFailures,
        &detalle,
    )
    .await?
    {
        return Ok(false);
    }
    // Just suspended, so suspendido_en is set.
    let row = sqlx::query!(
        r#"SELECT app_id, nombre, url, suspendido_en AS "suspendido_en!", entorno
           FROM subscriptions WHERE id = $1"#,
        subscription.as_uuid(),
    )
    .fetch_one(&mut *conn)
    .await?;
    let app = AppId::from_uuid(row.app_id);
    let url = row.url;
    let host = Destination::parse(&url, "url")
        .ok()
        .map(|d| match d.host_port().0 {
            CanonicalHost::Domain(d) => d.clone(),
            CanonicalHost::Ip(ip) => ip.to_string(),
        });
    let counts = deliveries::read::counts(&mut *conn, &[subscription]).await?;
    let (pendientes, fallidas) = counts.first().copied().unwrap_or_default();
    let disabled_at: Timestamp = row.suspendido_en;
    let data = serde_json::json!({
        "suscripcion_id": subscription,
        "nombre": row.nombre,
        "url_host": host,
        "fallando_desde": time::format(&since),
        "desactivada_en": time::format(&disabled_at),
        "fallos_consecutivos": failures,
        "pendientes": pendientes,
        "fallidas": fallidas,
    });
    let event = NewEvent {
        event_type: EventType::parse(DISABLED_EVENT).expect("a valid type"),
        data,
        occurred_at: Some(disabled_at),
        origin: Origin::Live,
        command_id: None,
        source_id: None,
        // Told in the disabled subscription's environment, to the
        // subscriptions of that one (`fan_out_system`).
        environment: Environment::parse(&row.entorno).unwrap_or_default(),
        order_key: None,
    };
    let system = operator::system_instance(&mut *conn, app).await?;
    ledger::append(conn, system, &[event]).await?;
    deliveries::fan_out_system(conn, app, subscription, system).await?;
    Ok(true)
}
