//! Recording an attempt, one test per kind of decision: fallida (DLQ,
//! redirect, exhaustion), retry in a tier, suspension with an alert, a
//! second record of the same attempt, and the record of a claim that lost
//! its lease to another.

use chrono::Utc;
use motor::serve::Role;
use motor_domain::{
    delivery::{Decision, DeliveryState, ErrorCode, Tier},
    subscription::SubscriptionState,
};
use motor_store::deliveries::{
    claim, record_attempt, release_lane_heads, Claim, Next, Recorded, Skip,
};
use serde_json::Value;
use sqlx::Row;

use super::{
    clear_outbox, delivery, jobs,
    lanes::{
        attempt, claim_ok, decide, events, finish, finish_with, jobs_for, one_claimed, released,
        row, two_events, LEASE,
    },
};
use crate::util::TestMotor;

#[tokio::test]
async fn a_failed_head_goes_to_the_dlq_and_unblocks_its_lane() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub, d1, d2) = two_events(&m, true).await;
    let a = t.instances[0];
    assert_eq!(
        claim(&m.db.pool, d2, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    let c1 = claim_ok(&m.db.pool, d1, 1).await;
    let done = finish(&m.db.pool, &c1, 404).await;
    assert_eq!(
        done,
        Recorded::Done {
            state: DeliveryState::Failed,
            next: None,
            released: Some(d2),
            suspended: false
        }
    );
    let r = row(&m.db.pool, d1).await;
    assert_eq!(r.get::<String, _>("estado"), "fallida");
    assert_eq!(
        r.get::<Option<String>, _>("ultimo_error").as_deref(),
        Some("http_404")
    );
    assert_eq!(r.get::<Option<i32>, _>("ultimo_status"), Some(404));
    assert_eq!(r.get::<i32, _>("intentos"), 1);
    assert!(r
        .get::<Option<chrono::DateTime<Utc>>, _>("proximo_intento")
        .is_none());
    // The DLQ record is the envelope itself, keyed by instance.
    let dlq = sqlx::query("SELECT key, payload, headers FROM outbox WHERE topic = 'dlq'")
        .fetch_all(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(dlq.len(), 1);
    assert_eq!(dlq[0].get::<String, _>("key"), a.to_string());
    assert_eq!(dlq[0].get::<Vec<u8>, _>("payload"), c1.envelope.as_bytes());
    let headers = dlq[0].get::<sqlx::types::Json<Value>, _>("headers").0;
    assert_eq!(headers["delivery_id"], d1.to_string());
    assert_eq!(headers["ultimo_error"], "http_404");
    assert_eq!(jobs_for(&m.db.pool, "deliveries", d2).await.len(), 2); // fan-out + release
    let c2 = claim_ok(&m.db.pool, d2, 1).await;
    finish(&m.db.pool, &c2, 200).await;
    // A redirect ends fallida as `redireccion`; a retryable failure 72 h
    // after creation as `<code>_agotada`. Both go to the DLQ too.
    events(&m, &t, a, 2).await;
    let (d3, d4) = (
        delivery(&m.db.pool, sub, a, 3).await,
        delivery(&m.db.pool, sub, a, 4).await,
    );
    let c3 = claim_ok(&m.db.pool, d3, 1).await;
    finish(&m.db.pool, &c3, 302).await;
    sqlx::query("UPDATE deliveries SET creado_en = now() - interval '73 hours' WHERE id = $1")
        .bind(d4.as_uuid())
        .execute(&m.db.pool)
        .await
        .unwrap();
    let c4 = claim_ok(&m.db.pool, d4, 1).await;
    let done = finish(&m.db.pool, &c4, 503).await;
    assert!(
        matches!(
            done,
            Recorded::Done {
                state: DeliveryState::Failed,
                ..
            }
        ),
        "{done:?}"
    );
    for (id, code) in [(d3, "redireccion"), (d4, "http_503_agotada")] {
        let r = row(&m.db.pool, id).await;
        assert_eq!(r.get::<String, _>("estado"), "fallida");
        assert_eq!(
            r.get::<Option<String>, _>("ultimo_error").as_deref(),
            Some(code)
        );
    }
    let dlq: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox WHERE topic = 'dlq'")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(dlq, 3);
    m.stop().await;
}

#[tokio::test]
async fn a_retry_keeps_the_head_pending_and_schedules_the_next_attempt_in_a_tier() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (_, _, d1, d2) = two_events(&m, true).await;
    let c1 = claim_ok(&m.db.pool, d1, 1).await;
    // 503 with Retry-After: 3600 → wait one hour, in the 1 h tier.
    let decision = decide(&c1, 503, Some("3600"));
    let Decision::Retry {
        due_at,
        tier,
        next_attempt,
        ..
    } = decision
    else {
        panic!("{decision:?}");
    };
    assert_eq!((tier, next_attempt), (Tier::H1, 2));
    let done = record_attempt(
        &m.db.pool,
        &c1,
        &attempt(Some(503), Some(ErrorCode::Http(503))),
        &decision,
        Next::Release,
    )
    .await
    .unwrap();
    assert_eq!(
        done,
        Recorded::Done {
            state: DeliveryState::Pending,
            next: None,
            released: None,
            suspended: false
        }
    );
    let r = row(&m.db.pool, d1).await;
    assert_eq!(r.get::<String, _>("estado"), "pendiente");
    assert_eq!(r.get::<i32, _>("intentos"), 1);
    assert_eq!(
        r.get::<Option<String>, _>("ultimo_error").as_deref(),
        Some("http_503")
    );
    let proximo: chrono::DateTime<Utc> = r.get("proximo_intento");
    assert!(
        (proximo - due_at).num_milliseconds().abs() <= 1,
        "{proximo} {due_at}"
    );
    assert!(r
        .get::<Option<chrono::DateTime<Utc>>, _>("reservado_hasta")
        .is_none());
    let retry = jobs_for(&m.db.pool, "retry.1h", d1).await;
    assert_eq!(retry.len(), 1);
    assert_eq!((retry[0].attempt, retry[0].seq), (2, 1));
    assert!((retry[0].due_at - due_at).num_milliseconds().abs() <= 1);

    // The old attempt's job is stale; the next one is not due; seq 2 waits.
    assert_eq!(
        claim(&m.db.pool, d1, 1, LEASE).await.unwrap(),
        Claim::Skipped(Skip::Stale)
    );
    match claim(&m.db.pool, d1, 2, LEASE).await.unwrap() {
        Claim::Skipped(Skip::NotDue { due, wait }) => {
            assert_eq!(due, proximo, "the row's due time");
            assert!(
                wait > std::time::Duration::from_secs(3500)
                    && wait <= std::time::Duration::from_secs(3600),
                "{wait:?} until it, by Postgres's clock"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        claim(&m.db.pool, d2, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    // Once due, attempt 2 is claimed; its success releases seq 2.
    sqlx::query(
        "UPDATE deliveries SET proximo_intento = now() - interval '1 second' WHERE id = $1",
    )
    .bind(d1.as_uuid())
    .execute(&m.db.pool)
    .await
    .unwrap();
    let c1b = claim_ok(&m.db.pool, d1, 2).await;
    assert_eq!(released(finish(&m.db.pool, &c1b, 200).await), Some(d2));
    let numeros: Vec<i32> = sqlx::query_scalar(
        "SELECT numero FROM delivery_attempts WHERE delivery_id = $1 ORDER BY numero",
    )
    .bind(d1.as_uuid())
    .fetch_all(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(numeros, [1, 2]);
    m.stop().await;
}

#[tokio::test]
async fn a_401_suspends_the_subscription_with_an_alert_and_keeps_the_delivery() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub, d1, d2) = two_events(&m, true).await;
    let a = t.instances[0];
    let c1 = claim_ok(&m.db.pool, d1, 1).await;
    assert_eq!(
        claim(&m.db.pool, d2, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    let done = finish(&m.db.pool, &c1, 401).await;
    assert_eq!(
        done,
        Recorded::Done {
            state: DeliveryState::Pending,
            next: None,
            released: None,
            suspended: true
        }
    );
    let s = sqlx::query("SELECT estado, motivo FROM subscriptions WHERE id = $1")
        .bind(sub.as_uuid())
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(s.get::<String, _>("estado"), "suspendida");
    assert_eq!(
        s.get::<Option<String>, _>("motivo").as_deref(),
        Some("rechazo_401")
    );
    let alerts = motor_store::alerts::list(&m.db.pool, Some(true), Some(t.app), 10)
        .await
        .unwrap();
    assert_eq!(alerts.len(), 1);
    assert_eq!(
        (alerts[0].subscription_id, alerts[0].reason.as_str()),
        (Some(sub), "rechazo_401")
    );
    let r = row(&m.db.pool, d1).await;
    assert_eq!(r.get::<String, _>("estado"), "pendiente");
    assert_eq!(r.get::<i32, _>("intentos"), 1);
    assert_eq!(
        r.get::<Option<String>, _>("ultimo_error").as_deref(),
        Some("http_401")
    );
    // Nothing goes out while suspended; new events accumulate without jobs.
    assert_eq!(
        claim(&m.db.pool, d1, 2, LEASE).await.unwrap(),
        Claim::Skipped(Skip::Inactive(SubscriptionState::Suspended))
    );
    clear_outbox(&m.db.pool).await;
    events(&m, &t, a, 1).await;
    assert!(jobs(&m.db.pool, "deliveries").await.is_empty());
    // Reactivated, the lane's head (seq 1, attempt 2) gets a job at once.
    sqlx::query("UPDATE subscriptions SET estado = 'activa', motivo = NULL, suspendido_en = NULL WHERE id = $1")
        .bind(sub.as_uuid())
        .execute(&m.db.pool)
        .await
        .unwrap();
    let mut conn = m.db.pool.acquire().await.unwrap();
    let out = release_lane_heads(&mut conn, sub).await.unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].delivery_id, out[0].attempt), (d1, 2));
    assert!(out[0].due_at <= Utc::now());
    assert_eq!(jobs_for(&m.db.pool, "deliveries", d1).await.len(), 1);
    let c = claim_ok(&m.db.pool, d1, 2).await;
    assert_eq!(released(finish(&m.db.pool, &c, 200).await), Some(d2));
    m.stop().await;
}

#[tokio::test]
async fn recording_an_attempt_twice_is_stale_and_writes_nothing() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (_, _, c1) = one_claimed(&m, true).await;
    let d1 = c1.delivery_id;
    clear_outbox(&m.db.pool).await;
    assert!(matches!(
        finish(&m.db.pool, &c1, 500).await,
        Recorded::Done {
            state: DeliveryState::Pending,
            ..
        }
    ));
    assert_eq!(finish(&m.db.pool, &c1, 200).await, Recorded::Stale);
    assert_eq!(finish(&m.db.pool, &c1, 404).await, Recorded::Stale);
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM delivery_attempts")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(
        row(&m.db.pool, d1).await.get::<String, _>("estado"),
        "pendiente"
    );
    let outbox: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(outbox, 1); // only the retry job
    m.stop().await;
}

/// A process stalled past its lease (its record waited seconds for a
/// connection) while the sweeper's job let another claim take the
/// delivery: the late record, success or failure, is stale — the other
/// claim's attempt is on its way and records the outcome. Accepting it
/// would mark the delivery `entregada` (and free its lane) while the other
/// claim still sends it. A lease the sweeper cleared with nobody claiming
/// since still takes the record.
#[tokio::test]
async fn a_record_after_another_claim_took_the_lease_is_stale() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (_, _, first) = one_claimed(&m, true).await;
    let d1 = first.delivery_id;
    let expire = |pool| async move {
        sqlx::query(
            "UPDATE deliveries SET reservado_hasta = now() - interval '1 second' WHERE id = $1",
        )
        .bind(d1.as_uuid())
        .execute(pool)
        .await
        .unwrap();
    };
    expire(&m.db.pool).await;
    let second = claim_ok(&m.db.pool, d1, 1).await;
    assert_ne!(first.lease_until, second.lease_until);

    assert_eq!(finish(&m.db.pool, &first, 500).await, Recorded::Stale);
    assert_eq!(finish(&m.db.pool, &first, 200).await, Recorded::Stale);
    assert_eq!(
        finish_with(&m.db.pool, &first, 200, Next::Claim(LEASE)).await,
        Recorded::Stale
    );
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM delivery_attempts")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
    assert_eq!(
        row(&m.db.pool, d1).await.get::<String, _>("estado"),
        "pendiente"
    );

    // The claim that holds the lease records; the fused path too.
    assert!(matches!(
        finish_with(&m.db.pool, &second, 200, Next::Claim(LEASE)).await,
        Recorded::Done {
            state: DeliveryState::Delivered,
            ..
        }
    ));

    // Cleared by a requeue, nobody claiming since: the late record counts.
    let (t, sub, late) = one_claimed(&m, true).await;
    let _ = (t, sub);
    sqlx::query("UPDATE deliveries SET reservado_hasta = NULL WHERE id = $1")
        .bind(late.delivery_id.as_uuid())
        .execute(&m.db.pool)
        .await
        .unwrap();
    assert!(matches!(
        finish(&m.db.pool, &late, 200).await,
        Recorded::Done {
            state: DeliveryState::Delivered,
            ..
        }
    ));
    m.stop().await;
}
