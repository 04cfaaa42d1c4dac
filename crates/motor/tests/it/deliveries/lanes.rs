//! The engine's Postgres side, driven directly through the store: claims
//! (one winner, lane order, parking and release), recording each kind of
//! decision, reactivation and the sweeper; and the detail route's shape
//! after real attempts.

use std::time::Duration;

use chrono::Utc;
use motor::serve::Role;
use motor_domain::{
    delivery::{Decision, DeliveryId, ErrorCode, Estado, Jitter, Lane, Outcome, RetryPolicy, Tier},
    subscription::{Estado as SubEstado, SubscriptionId},
    InstanceId,
};
use motor_store::{
    deliveries::{
        claim, due_lane_heads, record_attempt, release_lane_heads, requeue, Attempt, Claim,
        Claimed, Recorded, Skip,
    },
    Pool,
};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::Row;

use super::{clear_outbox, delivery, jobs, post, set_estado, subscribe};
use crate::{
    subscriptions::call,
    util::{Tenant, TestMotor},
};

const LEASE: Duration = Duration::from_secs(60);

fn ev(n: usize) -> Value {
    json!({"type": "message.received", "data": {"n": n}})
}

/// A tenant with `instances` instances and one subscription.
async fn setup(m: &TestMotor, instances: usize, ordenado: bool) -> (Tenant, SubscriptionId) {
    let t = m.tenant(instances).await;
    let sub = subscribe(m, &t, json!({ "ordenado": ordenado })).await;
    (t, sub)
}

/// Posts `n` events to an instance, one request each.
async fn events(m: &TestMotor, t: &Tenant, instance: InstanceId, n: usize) {
    for i in 0..n {
        post(m, t, instance, ev(i)).await;
    }
}

async fn claim_ok(pool: &Pool, id: DeliveryId, attempt: u32) -> Claimed {
    match claim(pool, id, attempt, LEASE).await.unwrap() {
        Claim::Claimed(c) => *c,
        other => panic!("{id} attempt {attempt}: {other:?}"),
    }
}

fn attempt(status: Option<u16>, error: Option<ErrorCode>) -> Attempt {
    Attempt {
        iniciado_en: Utc::now(),
        duracion_ms: 41,
        status,
        error,
        key_ids: vec!["whk_a".into()],
    }
}

/// The decision the real rules take for an HTTP status.
fn decide(c: &Claimed, status: u16, retry_after: Option<&str>) -> Decision {
    let now = Utc::now();
    RetryPolicy::production().decide(
        c.creada_en,
        now,
        c.attempt,
        Outcome::from_status(status, retry_after, now),
        Jitter::NONE,
    )
}

/// Claims nothing else happens to: attempt `c.attempt` answered `status`.
async fn finish(pool: &Pool, c: &Claimed, status: u16) -> Recorded {
    let error = (!(200..300).contains(&status)).then_some(ErrorCode::Http(status));
    let decision = decide(c, status, None);
    record_attempt(pool, c, &attempt(Some(status), error), &decision)
        .await
        .unwrap()
}

fn released(r: Recorded) -> Option<DeliveryId> {
    match r {
        Recorded::Done { released, .. } => released,
        Recorded::Stale => panic!("stale"),
    }
}

async fn row(pool: &Pool, id: DeliveryId) -> sqlx::postgres::PgRow {
    sqlx::query(
        "SELECT estado, intentos, ultimo_status, ultimo_error, proximo_intento, lease_until,
                parked_at, entregada_en FROM deliveries WHERE id = $1",
    )
    .bind(id.as_uuid())
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Jobs in the outbox for one delivery, on `topic`.
async fn jobs_for(
    pool: &Pool,
    topic: &str,
    id: DeliveryId,
) -> Vec<motor_domain::delivery::DeliveryJob> {
    jobs(pool, topic)
        .await
        .into_iter()
        .filter(|j| j.job.delivery_id == id)
        .map(|j| j.job)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_of_one_delivery_have_exactly_one_winner() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 3, true).await;
    for &instance in &t.instances {
        events(&m, &t, instance, 1).await;
        let id = delivery(&m.db.pool, sub, instance, 1).await;
        let mut tasks = Vec::new();
        for _ in 0..12 {
            let pool = m.db.pool.clone();
            tasks.push(tokio::spawn(async move {
                claim(&pool, id, 1, LEASE).await.unwrap()
            }));
        }
        let mut won = Vec::new();
        for task in tasks {
            match task.await.unwrap() {
                Claim::Claimed(c) => won.push(c),
                Claim::Skipped(Skip::Leased(until)) => assert!(until > Utc::now()),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(won.len(), 1);
        let c = &won[0];
        let envelope: String =
            sqlx::query_scalar("SELECT envelope FROM events WHERE instance_id = $1 AND seq = 1")
                .bind(instance.as_uuid())
                .fetch_one(&m.db.pool)
                .await
                .unwrap();
        assert_eq!(
            (
                c.delivery_id,
                c.subscription_id,
                c.instance_id,
                c.seq,
                c.lane,
                c.attempt
            ),
            (id, sub, instance, 1, Lane::Live, 1)
        );
        assert_eq!(
            (c.url.as_str(), c.ordenado, c.app_id),
            ("http://127.0.0.1:9/hook", true, t.app)
        );
        assert_eq!(c.envelope, envelope);
        assert!(c.lease_until > Utc::now() + chrono::TimeDelta::seconds(50));
        // Still leased: another claim, even for the same attempt, fails.
        assert!(matches!(
            claim(&m.db.pool, id, 1, LEASE).await.unwrap(),
            Claim::Skipped(Skip::Leased(_))
        ));
    }
    m.stop().await;
}

#[tokio::test]
async fn an_ordered_lane_parks_behind_its_head_and_the_heads_finish_releases_it() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 2, true).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    events(&m, &t, a, 3).await;
    events(&m, &t, b, 1).await;
    let [a1, a2, a3] = [1, 2, 3].map(|s| (a, s));
    let mut ids = Vec::new();
    for (i, s) in [a1, a2, a3] {
        ids.push(delivery(&m.db.pool, sub, i, s).await);
    }
    let (a1, a2, a3) = (ids[0], ids[1], ids[2]);
    let b1 = delivery(&m.db.pool, sub, b, 1).await;

    // Seq 2 and 3 wait for seq 1; instance b's lane never waits for a's.
    assert_eq!(
        claim(&m.db.pool, a2, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    assert_eq!(
        claim(&m.db.pool, a3, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    assert!(row(&m.db.pool, a2)
        .await
        .get::<Option<chrono::DateTime<Utc>>, _>("parked_at")
        .is_some());
    let cb = claim_ok(&m.db.pool, b1, 1).await;
    assert_eq!(released(finish(&m.db.pool, &cb, 204).await), None);

    clear_outbox(&m.db.pool).await;
    let c1 = claim_ok(&m.db.pool, a1, 1).await;
    // While seq 1 is in flight, seq 2 still waits.
    assert_eq!(
        claim(&m.db.pool, a2, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    // Seq 1's finish writes seq 2's job (only seq 2's: seq 3 waits for 2).
    let done = finish(&m.db.pool, &c1, 200).await;
    assert_eq!(
        done,
        Recorded::Done {
            estado: Estado::Entregada,
            released: Some(a2),
            suspended: false
        }
    );
    let out = jobs(&m.db.pool, "deliveries").await;
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(
        (out[0].job.delivery_id, out[0].job.attempt, out[0].job.seq),
        (a2, 1, 2)
    );
    assert_eq!(out[0].key, a.to_string());
    let r = row(&m.db.pool, a1).await;
    assert_eq!(r.get::<String, _>("estado"), "entregada");
    assert!(r
        .get::<Option<chrono::DateTime<Utc>>, _>("entregada_en")
        .is_some());
    assert!(r
        .get::<Option<chrono::DateTime<Utc>>, _>("proximo_intento")
        .is_none());
    assert!(r
        .get::<Option<chrono::DateTime<Utc>>, _>("lease_until")
        .is_none());

    assert_eq!(
        claim(&m.db.pool, a3, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    let c2 = claim_ok(&m.db.pool, a2, 1).await;
    assert_eq!(released(finish(&m.db.pool, &c2, 200).await), Some(a3));
    let c3 = claim_ok(&m.db.pool, a3, 1).await;
    assert_eq!(released(finish(&m.db.pool, &c3, 200).await), None);
    m.stop().await;
}

#[tokio::test]
async fn in_the_happy_path_a_finish_releases_nothing() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, true).await;
    let a = t.instances[0];
    events(&m, &t, a, 2).await;
    clear_outbox(&m.db.pool).await;
    let c1 = claim_ok(&m.db.pool, delivery(&m.db.pool, sub, a, 1).await, 1).await;
    assert_eq!(released(finish(&m.db.pool, &c1, 200).await), None);
    assert!(jobs(&m.db.pool, "deliveries").await.is_empty());
    claim_ok(&m.db.pool, delivery(&m.db.pool, sub, a, 2).await, 1).await;
    m.stop().await;
}

#[tokio::test]
async fn an_unordered_subscription_does_not_block() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, false).await;
    let a = t.instances[0];
    events(&m, &t, a, 3).await;
    let c3 = claim_ok(&m.db.pool, delivery(&m.db.pool, sub, a, 3).await, 1).await;
    let c2 = claim_ok(&m.db.pool, delivery(&m.db.pool, sub, a, 2).await, 1).await;
    assert!(!c3.ordenado);
    assert_eq!(released(finish(&m.db.pool, &c3, 200).await), None);
    assert_eq!(released(finish(&m.db.pool, &c2, 200).await), None);
    claim_ok(&m.db.pool, delivery(&m.db.pool, sub, a, 1).await, 1).await;
    m.stop().await;
}

#[tokio::test]
async fn a_fallida_head_goes_to_the_dlq_and_unblocks_its_lane() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, true).await;
    let a = t.instances[0];
    events(&m, &t, a, 2).await;
    let (d1, d2) = (
        delivery(&m.db.pool, sub, a, 1).await,
        delivery(&m.db.pool, sub, a, 2).await,
    );
    assert_eq!(
        claim(&m.db.pool, d2, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    let c1 = claim_ok(&m.db.pool, d1, 1).await;
    let done = finish(&m.db.pool, &c1, 404).await;
    assert_eq!(
        done,
        Recorded::Done {
            estado: Estado::Fallida,
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
    sqlx::query("UPDATE deliveries SET creada_en = now() - interval '73 hours' WHERE id = $1")
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
                estado: Estado::Fallida,
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
async fn a_retry_keeps_the_head_pendiente_and_schedules_the_next_attempt_in_a_tier() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, true).await;
    let a = t.instances[0];
    events(&m, &t, a, 2).await;
    let (d1, d2) = (
        delivery(&m.db.pool, sub, a, 1).await,
        delivery(&m.db.pool, sub, a, 2).await,
    );
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
    )
    .await
    .unwrap();
    assert_eq!(
        done,
        Recorded::Done {
            estado: Estado::Pendiente,
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
        .get::<Option<chrono::DateTime<Utc>>, _>("lease_until")
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
    assert!(matches!(
        claim(&m.db.pool, d1, 2, LEASE).await.unwrap(),
        Claim::Skipped(Skip::NotDue(_))
    ));
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
    let (t, sub) = setup(&m, 1, true).await;
    let a = t.instances[0];
    events(&m, &t, a, 2).await;
    let (d1, d2) = (
        delivery(&m.db.pool, sub, a, 1).await,
        delivery(&m.db.pool, sub, a, 2).await,
    );
    let c1 = claim_ok(&m.db.pool, d1, 1).await;
    assert_eq!(
        claim(&m.db.pool, d2, 1, LEASE).await.unwrap(),
        Claim::Parked
    );
    let done = finish(&m.db.pool, &c1, 401).await;
    assert_eq!(
        done,
        Recorded::Done {
            estado: Estado::Pendiente,
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
        (alerts[0].suscripcion_id, alerts[0].motivo.as_str()),
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
        Claim::Skipped(Skip::Inactive(SubEstado::Suspendida))
    );
    clear_outbox(&m.db.pool).await;
    events(&m, &t, a, 1).await;
    assert!(jobs(&m.db.pool, "deliveries").await.is_empty());
    // Reactivated, the lane's head (seq 1, attempt 2) gets a job at once.
    sqlx::query("UPDATE subscriptions SET estado = 'activa', motivo = NULL, suspendida_en = NULL WHERE id = $1")
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
    let (t, sub) = setup(&m, 1, true).await;
    let a = t.instances[0];
    events(&m, &t, a, 1).await;
    let d1 = delivery(&m.db.pool, sub, a, 1).await;
    let c1 = claim_ok(&m.db.pool, d1, 1).await;
    clear_outbox(&m.db.pool).await;
    assert!(matches!(
        finish(&m.db.pool, &c1, 500).await,
        Recorded::Done {
            estado: Estado::Pendiente,
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

#[tokio::test]
async fn reactivation_releases_the_head_of_every_lane() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let ordered = subscribe(&m, &t, json!({})).await;
    let unordered = subscribe(&m, &t, json!({"ordenado": false})).await;
    set_estado(&m, &t, ordered, "pausada").await;
    set_estado(&m, &t, unordered, "pausada").await;
    events(&m, &t, a, 3).await;
    events(&m, &t, b, 2).await;
    assert!(jobs(&m.db.pool, "deliveries").await.is_empty());
    let mut conn = m.db.pool.acquire().await.unwrap();
    // Still paused: nothing to release.
    assert!(release_lane_heads(&mut conn, ordered)
        .await
        .unwrap()
        .is_empty());

    set_estado(&m, &t, ordered, "activa").await;
    set_estado(&m, &t, unordered, "activa").await;
    let heads = release_lane_heads(&mut conn, ordered).await.unwrap();
    let mut got: Vec<(InstanceId, i64, u32)> = heads
        .iter()
        .map(|j| (j.instance_id, j.seq, j.attempt))
        .collect();
    got.sort();
    let mut want = vec![(a, 1, 1), (b, 1, 1)];
    want.sort();
    assert_eq!(got, want);
    // Unordered: every open delivery is its own head.
    let all = release_lane_heads(&mut conn, unordered).await.unwrap();
    assert_eq!(all.len(), 5);
    assert_eq!(jobs(&m.db.pool, "deliveries").await.len(), 7);
    // A head in flight (leased) is not released again.
    clear_outbox(&m.db.pool).await;
    claim_ok(&m.db.pool, delivery(&m.db.pool, ordered, a, 1).await, 1).await;
    let heads = release_lane_heads(&mut conn, ordered).await.unwrap();
    assert_eq!(
        heads
            .iter()
            .map(|j| (j.instance_id, j.seq))
            .collect::<Vec<_>>(),
        [(b, 1)]
    );
    m.stop().await;
}

#[tokio::test]
async fn the_sweeper_finds_expired_leases_and_lost_wake_ups() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 2, true).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    events(&m, &t, a, 2).await;
    events(&m, &t, b, 1).await;
    let (a1, a2) = (
        delivery(&m.db.pool, sub, a, 1).await,
        delivery(&m.db.pool, sub, a, 2).await,
    );
    let b1 = delivery(&m.db.pool, sub, b, 1).await;
    let pool = &m.db.pool;
    let stale = Duration::from_secs(30);

    // Fresh deliveries have live jobs: not swept. Once stale, only heads are.
    assert!(due_lane_heads(pool, stale, 100).await.unwrap().is_empty());
    let mut heads = due_lane_heads(pool, Duration::ZERO, 100).await.unwrap();
    heads.sort();
    let mut want = vec![a1, b1];
    want.sort();
    assert_eq!(heads, want);

    // An attempt whose process died: its lease runs out, then it is swept
    // at once (the lease was its grace).
    let c = match claim(pool, a1, 1, Duration::from_millis(20)).await.unwrap() {
        Claim::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    assert!(due_lane_heads(pool, Duration::ZERO, 100).await.unwrap() == [b1]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(due_lane_heads(pool, stale, 100).await.unwrap(), [a1]);
    clear_outbox(pool).await;
    let out = requeue(pool, &[a1]).await.unwrap();
    assert_eq!((out.len(), out[0].delivery_id, out[0].attempt), (1, a1, 1));
    assert_eq!(jobs_for(pool, "deliveries", a1).await.len(), 1);
    // The dead attempt can no longer record; the new job claims it.
    let c2 = claim_ok(pool, a1, 1).await;
    assert!(due_lane_heads(pool, Duration::ZERO, 100).await.unwrap() == [b1]);
    assert!(matches!(
        finish(pool, &c2, 200).await,
        Recorded::Done { .. }
    ));
    assert_eq!(finish(pool, &c, 200).await, Recorded::Stale);

    // A lost wake-up: seq 2 was parked but its release never came (say the
    // head's finish raced the park). Once stale it is swept, and a requeue
    // holds it off the sweep while its job travels.
    sqlx::query("UPDATE deliveries SET proximo_intento = now() - interval '5 minutes', parked_at = now() WHERE id = $1")
        .bind(a2.as_uuid())
        .execute(pool)
        .await
        .unwrap();
    assert_eq!(due_lane_heads(pool, stale, 100).await.unwrap(), [a2]);
    let out = requeue(pool, &[a2, b1]).await.unwrap();
    assert_eq!(out.len(), 2); // b1 is due too (requeue checks state, not staleness)
    assert!(due_lane_heads(pool, stale, 100).await.unwrap().is_empty());
    let r = row(pool, a2).await;
    assert!(r
        .get::<Option<chrono::DateTime<Utc>>, _>("parked_at")
        .is_none());

    // Requeue re-checks: a delivered or paused delivery is not requeued.
    let cb = claim_ok(pool, b1, 1).await;
    finish(pool, &cb, 200).await;
    assert!(requeue(pool, &[b1]).await.unwrap().is_empty());
    set_estado(&m, &t, sub, "pausada").await;
    sqlx::query(
        "UPDATE deliveries SET proximo_intento = now() - interval '5 minutes'
         WHERE estado = 'pendiente'",
    )
    .execute(pool)
    .await
    .unwrap();
    assert!(due_lane_heads(pool, stale, 100).await.unwrap().is_empty());
    assert!(requeue(pool, &[a2]).await.unwrap().is_empty());
    m.stop().await;
}

/// The race the park's lock closes: a claim of seq 2 that runs while seq
/// 1's finish commits is either claimed, or parked and released by that
/// finish — never parked with no release.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_park_racing_the_heads_finish_is_never_lost() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, true).await;
    let a = t.instances[0];
    let (mut claimed, mut parked) = (0, 0);
    for round in 0..25 {
        let head_seq = 2 * round + 1;
        events(&m, &t, a, 2).await;
        let head = delivery(&m.db.pool, sub, a, head_seq as i64).await;
        let next = delivery(&m.db.pool, sub, a, head_seq as i64 + 1).await;
        let c = claim_ok(&m.db.pool, head, 1).await;
        let pool = m.db.pool.clone();
        let claiming = tokio::spawn(async move { claim(&pool, next, 1, LEASE).await.unwrap() });
        let pool = m.db.pool.clone();
        let finishing = tokio::spawn(async move { finish(&pool, &c, 200).await });
        let (claim_result, recorded) = (claiming.await.unwrap(), finishing.await.unwrap());
        let c_next = match claim_result {
            Claim::Claimed(c) => {
                claimed += 1;
                *c
            }
            Claim::Parked => {
                parked += 1;
                assert_eq!(
                    released(recorded),
                    Some(next),
                    "round {round}: parked and not released"
                );
                claim_ok(&m.db.pool, next, 1).await
            }
            other => panic!("round {round}: {other:?}"),
        };
        finish(&m.db.pool, &c_next, 200).await;
    }
    eprintln!("claimed {claimed}, parked and released {parked}");
    assert_eq!(claimed + parked, 25);
    m.stop().await;
}

#[tokio::test]
async fn the_detail_shows_every_attempt_as_documented() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, true).await;
    let a = t.instances[0];
    events(&m, &t, a, 1).await;
    let d = delivery(&m.db.pool, sub, a, 1).await;
    let c = claim_ok(&m.db.pool, d, 1).await;
    let first = Attempt {
        iniciado_en: motor_domain::time::parse("2026-10-24T15:08:13Z").unwrap(),
        duracion_ms: 41,
        status: Some(503),
        error: Some(ErrorCode::Http(503)),
        key_ids: vec!["whk_new".into(), "whk_old".into()],
    };
    record_attempt(&m.db.pool, &c, &first, &decide(&c, 503, None))
        .await
        .unwrap();

    let path = format!("/v1/deliveries/{d}");
    let (status, body) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "delivery_id",
            "suscripcion_id",
            "suscripcion",
            "instance_id",
            "instancia",
            "event_id",
            "seq",
            "type",
            "estado",
            "intentos",
            "proximo_intento_en",
            "ultimo_status",
            "ultimo_error",
            "creada_en",
            "intentos_detalle"
        ]
    );
    let event_id: uuid::Uuid =
        sqlx::query_scalar("SELECT event_id FROM events WHERE instance_id = $1 AND seq = 1")
            .bind(a.as_uuid())
            .fetch_one(&m.db.pool)
            .await
            .unwrap();
    assert_eq!(body["delivery_id"], d.to_string());
    assert_eq!(body["suscripcion_id"], sub.to_string());
    assert_eq!(body["suscripcion"], "CRM principal");
    assert_eq!(body["instance_id"], a.to_string());
    assert_eq!(body["instancia"], "instance 0");
    assert_eq!(body["event_id"], event_id.to_string());
    assert_eq!(
        (body["seq"].clone(), body["type"].clone()),
        (json!(1), json!("message.received"))
    );
    assert_eq!(
        (body["estado"].clone(), body["intentos"].clone()),
        (json!("pendiente"), json!(1))
    );
    assert_eq!(
        (body["ultimo_status"].clone(), body["ultimo_error"].clone()),
        (json!(503), json!("http_503"))
    );
    let proximo = motor_domain::time::parse(body["proximo_intento_en"].as_str().unwrap()).unwrap();
    assert!(proximo > Utc::now() - chrono::TimeDelta::seconds(5));
    assert!(motor_domain::time::parse(body["creada_en"].as_str().unwrap()).is_some());
    assert_eq!(
        body["intentos_detalle"],
        json!([{ "numero": 1, "iniciado_en": "2026-10-24T15:08:13Z", "duracion_ms": 41, "status": 503,
                 "error": "http_503", "key_ids": "whk_new,whk_old" }])
    );

    // The second attempt delivers it: no next attempt, no error.
    sqlx::query("UPDATE deliveries SET proximo_intento = now() WHERE id = $1")
        .bind(d.as_uuid())
        .execute(&m.db.pool)
        .await
        .unwrap();
    let c2 = claim_ok(&m.db.pool, d, 2).await;
    let second = Attempt {
        status: Some(200),
        error: None,
        key_ids: vec!["whk_new".into()],
        ..first
    };
    record_attempt(&m.db.pool, &c2, &second, &Decision::Delivered)
        .await
        .unwrap();
    let (_, body) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(
        (body["estado"].clone(), body["intentos"].clone()),
        (json!("entregada"), json!(2))
    );
    assert_eq!(body["proximo_intento_en"], Value::Null);
    assert_eq!(
        (body["ultimo_status"].clone(), body["ultimo_error"].clone()),
        (json!(200), Value::Null)
    );
    assert_eq!(body["intentos_detalle"][1]["numero"], 2);
    assert_eq!(body["intentos_detalle"][1]["error"], Value::Null);
    assert_eq!(body["intentos_detalle"][1]["key_ids"], "whk_new");

    // A list item is the detail without intentos_detalle.
    let (_, page) = call(&m, Method::GET, "/v1/deliveries", &t.token, None).await;
    let mut item = page["entregas"][0].clone();
    let mut detail = body.clone();
    detail.as_object_mut().unwrap().remove("intentos_detalle");
    assert_eq!(
        item.as_object_mut().unwrap().keys().collect::<Vec<_>>(),
        detail.as_object().unwrap().keys().collect::<Vec<_>>()
    );
    assert_eq!(item, detail);
    m.stop().await;
}
