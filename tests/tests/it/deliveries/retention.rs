//! Retention of `cancelada` rows: the operator's `retencion.dias_entregados`
//! from `cancelada_en`, except under a contract with its own period for
//! them (Visito: "Los metadatos se guardan 30 días después de terminar" —
//! 30 days after the cancel, whatever the setting says).

use motor::serve::Role;
use motor_domain::subscription::SubscriptionId;
use serde_json::json;

use super::{delivery, lanes::events, subscribe};
use crate::util::TestMotor;

/// Sets `retencion.dias_entregados`.
async fn retention_days(m: &TestMotor, days: i64) {
    let (status, settings) = crate::subscriptions::call(
        m,
        reqwest::Method::PATCH,
        "/v1/admin/settings",
        crate::util::ADMIN_TOKEN,
        Some(json!({ "retencion.dias_entregados": days })),
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{settings}");
}

/// `(seq, estado)` of a subscription's deliveries still in the table.
async fn left(m: &TestMotor, sub: SubscriptionId) -> Vec<(i64, String)> {
    sqlx::query_as("SELECT seq, estado FROM deliveries WHERE subscription_id = $1 ORDER BY seq")
        .bind(sub.as_uuid())
        .fetch_all(&m.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn visito_keeps_cancelled_deliveries_thirty_days_after_their_cancel() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let a = t.instances[0];
    let pool = &m.db.pool;
    let visito = subscribe(&m, &t, json!({"contrato": "visito"})).await;
    let motor = subscribe(&m, &t, json!({})).await;
    events(&m, &t, a, 4).await;
    // Cancelled `days` ago (as a pause cancels: the row's other times
    // older still).
    let cancel = |sub: SubscriptionId, seq: i64, days: i32| async move {
        sqlx::query(
            "UPDATE deliveries SET estado = 'cancelada', motivo = 'suscripcion_pausada',
                 cancelada_en = now() - make_interval(days => $3), proximo_intento = NULL,
                 actualizado_en = now() - make_interval(days => $3),
                 creado_en = now() - make_interval(days => $3 + 1)
             WHERE subscription_id = $1 AND seq = $2",
        )
        .bind(sub.as_uuid())
        .bind(seq)
        .bind(days)
        .execute(pool)
        .await
        .unwrap();
    };
    cancel(visito, 1, 31).await;
    cancel(visito, 2, 29).await;
    cancel(visito, 3, 10).await;
    cancel(motor, 1, 31).await;
    cancel(motor, 2, 10).await;
    let old = delivery(pool, visito, a, 1).await;
    sqlx::query("INSERT INTO delivery_attempts (delivery_id, numero, iniciado_en, duracion_ms, status) VALUES ($1, 1, now(), 5, 503)")
        .bind(old.as_uuid())
        .execute(pool)
        .await
        .unwrap();
    let config = motor_engine::SweeperConfig::default();

    // The operator keeps finished rows 60 days: Visito's 30 apply to its
    // cancelled rows; the motor one cancelled 31 days ago is kept.
    retention_days(&m, 60).await;
    let deleted = motor_engine::purge_once(&config, pool).await.unwrap();
    assert_eq!(deleted, 1, "only Visito's cancelled 31 days ago");
    let cancelada = |seq: i64| (seq, "cancelada".to_owned());
    let pendiente = |seq: i64| (seq, "pendiente".to_owned());
    assert_eq!(
        left(&m, visito).await,
        [cancelada(2), cancelada(3), pendiente(4)]
    );
    assert_eq!(
        left(&m, motor).await,
        [cancelada(1), cancelada(2), pendiente(3), pendiente(4)]
    );
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM delivery_attempts")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(attempts, 0, "its attempts went with it");

    // The operator keeps them 5 days: both motor ones go by the setting;
    // Visito's, younger than 30 days, stay — the operator's shorter period
    // does not apply to them.
    retention_days(&m, 5).await;
    let deleted = motor_engine::purge_once(&config, pool).await.unwrap();
    assert_eq!(deleted, 2, "the motor subscription's two, by the setting");
    assert_eq!(
        left(&m, visito).await,
        [cancelada(2), cancelada(3), pendiente(4)]
    );
    assert_eq!(left(&m, motor).await, [pendiente(3), pendiente(4)]);
    m.stop().await;
}
