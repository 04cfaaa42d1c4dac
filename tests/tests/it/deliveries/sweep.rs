//! Bringing lanes back: reactivation releases every lane's head, and the
//! sweeper finds expired leases and lost wake-ups without touching fresh or
//! parked deliveries.

use std::time::Duration;

use chrono::Utc;
use motor::serve::Role;
use motor_domain::InstanceId;
use motor_store::deliveries::{
    claim, due_lane_heads, release_lane_heads, requeue, Claim, Recorded,
};
use serde_json::json;
use sqlx::Row;

use super::{
    clear_outbox, delivery, jobs,
    lanes::{claim_ok, events, finish, jobs_for, row, setup},
    set_state, subscribe,
};
use crate::util::TestMotor;

#[tokio::test]
async fn reactivation_releases_the_head_of_every_lane() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0], t.instances[1]);
    let ordered = subscribe(&m, &t, json!({})).await;
    let unordered = subscribe(&m, &t, json!({"ordenado": false})).await;
    set_state(&m, &t, ordered, "pausada").await;
    set_state(&m, &t, unordered, "pausada").await;
    events(&m, &t, a, 3).await;
    events(&m, &t, b, 2).await;
    assert!(jobs(&m.db.pool, "deliveries").await.is_empty());
    let mut conn = m.db.pool.acquire().await.unwrap();
    // Still paused: nothing to release.
    assert!(release_lane_heads(&mut conn, ordered)
        .await
        .unwrap()
        .is_empty());

    // Reactivation (PATCH estado=activa) releases in its own transaction:
    // the head of each ordered lane, every open unordered delivery.
    set_state(&m, &t, ordered, "activa").await;
    set_state(&m, &t, unordered, "activa").await;
    let released = jobs(&m.db.pool, "deliveries").await;
    let mut got: Vec<(InstanceId, i64, u32)> = released
        .iter()
        .filter(|j| j.job.subscription_id == ordered)
        .map(|j| (j.job.instance_id, j.job.seq, j.job.attempt))
        .collect();
    got.sort();
    let mut want = vec![(a, 1, 1), (b, 1, 1)];
    want.sort();
    assert_eq!(got, want);
    let unordered_jobs = released
        .iter()
        .filter(|j| j.job.subscription_id == unordered)
        .count();
    assert_eq!(
        unordered_jobs, 5,
        "unordered: every open delivery is its own head"
    );
    assert_eq!(released.len(), 7);
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
    // (A lease long enough to still hold on the next line on a loaded
    // machine.)
    let lease = Duration::from_secs(2);
    let c = match claim(pool, a1, 1, lease).await.unwrap() {
        Claim::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    assert!(due_lane_heads(pool, Duration::ZERO, 100).await.unwrap() == [b1]);
    tokio::time::sleep(lease + Duration::from_millis(100)).await;
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
    sqlx::query("UPDATE deliveries SET proximo_intento = now() - interval '5 minutes', aparcado_en = now() WHERE id = $1")
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
        .get::<Option<chrono::DateTime<Utc>>, _>("aparcado_en")
        .is_none());

    // Requeue re-checks: a delivered or paused delivery is not requeued.
    let cb = claim_ok(pool, b1, 1).await;
    finish(pool, &cb, 200).await;
    assert!(requeue(pool, &[b1]).await.unwrap().is_empty());
    set_state(&m, &t, sub, "pausada").await;
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

/// The pid of the sweeper's own connection, once it has one.
async fn sweeper_backend(pool: &motor_store::Pool) -> i32 {
    for _ in 0..200 {
        let pid: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity
             WHERE application_name = 'motor-sweeper' AND datname = current_database()",
        )
        .fetch_optional(pool)
        .await
        .unwrap();
        if let Some(pid) = pid {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the sweeper never connected");
}

#[tokio::test]
async fn the_sweeper_connects_again_when_its_connection_is_killed_and_still_sweeps() {
    let m = TestMotor::start(&[Role::Api, Role::Sweeper]).await;
    let (t, sub) = setup(&m, 1, true).await;
    let a = t.instances[0];
    let pool = &m.db.pool;
    let first = sweeper_backend(pool).await;
    let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(first)
        .fetch_one(pool)
        .await
        .unwrap();
    assert!(killed);
    // A lost wake-up: an open head with no job, due for minutes.
    events(&m, &t, a, 1).await;
    let head = delivery(pool, sub, a, 1).await;
    clear_outbox(pool).await;
    sqlx::query(
        "UPDATE deliveries SET proximo_intento = now() - interval '5 minutes' WHERE id = $1",
    )
    .bind(head.as_uuid())
    .execute(pool)
    .await
    .unwrap();
    let mut requeued = Vec::new();
    for _ in 0..300 {
        requeued = jobs_for(pool, "deliveries", head).await;
        if !requeued.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        requeued.len(),
        1,
        "the sweeper did not requeue the lost head"
    );
    assert_ne!(sweeper_backend(pool).await, first, "a new connection");
    m.stop().await;
}

#[tokio::test]
async fn the_sweeper_leaves_an_unordered_subscription_whose_chains_are_moving() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, false).await;
    let a = t.instances[0];
    events(&m, &t, a, 12).await;
    let pool = &m.db.pool;
    let stale = Duration::from_secs(30);
    // A backlog due for minutes (oldest first by seq), its `leased`
    // oldest held by attempts in flight, as chains hold the front of it.
    let hold = |leased: i64| async move {
        sqlx::query(
            "UPDATE deliveries SET
                 proximo_intento = now() - interval '10 minutes' + seq * interval '1 second',
                 reservado_hasta = CASE WHEN seq <= $2 THEN now() + interval '1 minute' END
             WHERE subscription_id = $1",
        )
        .bind(sub.as_uuid())
        .bind(leased)
        .execute(pool)
        .await
        .unwrap();
    };
    let swept_seqs = || async {
        let ids: Vec<uuid::Uuid> = due_lane_heads(pool, stale, 100)
            .await
            .unwrap()
            .iter()
            .map(|id| *id.as_uuid())
            .collect();
        sqlx::query_scalar::<_, i64>("SELECT seq FROM deliveries WHERE id = ANY($1) ORDER BY seq")
            .bind(&ids)
            .fetch_all(pool)
            .await
            .unwrap()
    };

    // Eight in flight at the front: one process's slots are busy, the
    // chains claim the rest; nothing to requeue.
    hold(8).await;
    assert_eq!(swept_seqs().await, Vec::<i64>::new());
    // Seven: it runs below a process's capacity (a crash took the rest),
    // so the stale unleased ones are requeued.
    hold(7).await;
    assert_eq!(swept_seqs().await, (8..=12).collect::<Vec<i64>>());
    // None in flight: every stale one.
    hold(0).await;
    assert_eq!(swept_seqs().await, (1..=12).collect::<Vec<i64>>());
    m.stop().await;
}

#[tokio::test]
async fn retention_deletes_old_delivered_rows_and_never_the_dlq() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, false).await;
    let a = t.instances[0];
    events(&m, &t, a, 4).await;
    // seq 1: delivered 31 days ago (with an attempt row); seq 2: delivered
    // yesterday; seq 3: failed 90 days ago; seq 4: still pending.
    let pool = &m.db.pool;
    let age = |seq: i64, estado: &'static str, days: i32| {
        sqlx::query(
            "UPDATE deliveries SET estado = $3,
                 proximo_intento = CASE WHEN $3 = 'pendiente' THEN proximo_intento END,
                 entregado_en = CASE WHEN $3 = 'entregada' THEN now() - make_interval(days => $4) END,
                 ultimo_error = CASE WHEN $3 = 'fallida' THEN 'http_404' END,
                 creado_en = now() - make_interval(days => $4)
             WHERE subscription_id = $1 AND seq = $2",
        )
        .bind(sub.as_uuid())
        .bind(seq)
        .bind(estado)
        .bind(days)
        .execute(pool)
    };
    age(1, "entregada", 31).await.unwrap();
    age(2, "entregada", 1).await.unwrap();
    age(3, "fallida", 90).await.unwrap();
    let old = delivery(pool, sub, a, 1).await;
    sqlx::query("INSERT INTO delivery_attempts (delivery_id, numero, iniciado_en, duracion_ms, status) VALUES ($1, 1, now(), 5, 204)")
        .bind(old.as_uuid())
        .execute(pool)
        .await
        .unwrap();

    let config = motor_engine::SweeperConfig::default();
    let deleted = motor_engine::purge_once(&config, pool).await.unwrap();
    assert_eq!(
        deleted, 1,
        "only the delivery older than retencion.dias_entregados (30)"
    );
    let left: Vec<(i64, String)> = sqlx::query_as(
        "SELECT seq, estado FROM deliveries WHERE subscription_id = $1 ORDER BY seq",
    )
    .bind(sub.as_uuid())
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(
        left,
        [
            (2, "entregada".to_owned()),
            (3, "fallida".to_owned()),
            (4, "pendiente".to_owned())
        ]
    );
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM delivery_attempts")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(attempts, 0, "its attempts went with it");
    m.stop().await;
}

/// Visito: "Los metadatos se guardan 30 días después de terminar" — a
/// `visito` subscription's finished deliveries, delivered or failed, are
/// deleted 30 days after they finished (its DLQ too), whatever
/// `retencion.dias_entregados` says; pending ones stay.
#[tokio::test]
async fn visito_keeps_finished_deliveries_thirty_days_after_they_finish() {
    let m = TestMotor::start(&[Role::Api]).await;
    let (t, sub) = setup(&m, 1, false).await;
    let a = t.instances[0];
    let pool = &m.db.pool;
    sqlx::query("UPDATE subscriptions SET contrato = 'visito' WHERE id = $1")
        .bind(sub.as_uuid())
        .execute(pool)
        .await
        .unwrap();
    // The operator's period is shorter than Visito's: Visito's applies.
    let (status, settings) = crate::subscriptions::call(
        &m,
        reqwest::Method::PATCH,
        "/v1/admin/settings",
        crate::util::ADMIN_TOKEN,
        Some(json!({"retencion.dias_entregados": 5})),
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{settings}");
    events(&m, &t, a, 6).await;
    let finish = |seq: i64, estado: &'static str, days: i32| {
        sqlx::query(
            "UPDATE deliveries SET estado = $3, proximo_intento = NULL,
                 entregado_en = CASE WHEN $3 = 'entregada' THEN now() - make_interval(days => $4) END,
                 ultimo_error = CASE WHEN $3 = 'fallida' THEN 'http_503_agotada' END,
                 actualizado_en = now() - make_interval(days => $4),
                 creado_en = now() - make_interval(days => $4 + 1)
             WHERE subscription_id = $1 AND seq = $2",
        )
        .bind(sub.as_uuid())
        .bind(seq)
        .bind(estado)
        .bind(days)
        .execute(pool)
    };
    finish(1, "entregada", 31).await.unwrap();
    finish(2, "entregada", 10).await.unwrap();
    finish(3, "fallida", 31).await.unwrap();
    finish(4, "fallida", 29).await.unwrap();
    finish(5, "entregada", 29).await.unwrap();
    let old = delivery(pool, sub, a, 3).await;
    sqlx::query("INSERT INTO delivery_attempts (delivery_id, numero, iniciado_en, duracion_ms, status) VALUES ($1, 1, now(), 5, 503)")
        .bind(old.as_uuid())
        .execute(pool)
        .await
        .unwrap();

    let config = motor_engine::SweeperConfig::default();
    let deleted = motor_engine::purge_once(&config, pool).await.unwrap();
    assert_eq!(deleted, 2, "the two finished more than 30 days ago");
    let left: Vec<(i64, String)> = sqlx::query_as(
        "SELECT seq, estado FROM deliveries WHERE subscription_id = $1 ORDER BY seq",
    )
    .bind(sub.as_uuid())
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(
        left,
        [
            (2, "entregada".to_owned()),
            (4, "fallida".to_owned()),
            (5, "entregada".to_owned()),
            (6, "pendiente".to_owned())
        ]
    );
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM delivery_attempts")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(attempts, 0, "its attempts went with it");
    m.stop().await;
}

/// Two hundred subscriptions made after the sweeper started (many tenants
/// subscribing): a pass analyses `subscriptions`, so every connection
/// plans the statements that join it again with its real size
/// (`motor_store::statistics`). Only an `ANALYZE` sets `last_analyze`
/// (autovacuum's is `last_autoanalyze`).
#[tokio::test]
async fn the_sweeper_analyses_subscriptions_once_many_were_made() {
    let m = TestMotor::start(&[Role::Api, Role::Sweeper]).await;
    let (_t, sub) = setup(&m, 1, true).await;
    let pool = &m.db.pool;
    let analysed = || async {
        sqlx::query_scalar::<_, Option<chrono::DateTime<Utc>>>(
            "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'subscriptions'",
        )
        .fetch_one(pool)
        .await
        .unwrap()
    };
    // A pass that reached its check (the sweeper's last statement).
    let sweeper = sweeper_backend(pool).await;
    let mut checked = false;
    for _ in 0..300 {
        checked = sqlx::query_scalar::<_, bool>(
            "SELECT query LIKE '%pg_stat_user_tables%' FROM pg_stat_activity WHERE pid = $1",
        )
        .bind(sweeper)
        .fetch_one(pool)
        .await
        .unwrap();
        if checked {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(checked, "no sweeper pass checked the tables");
    assert_eq!(
        analysed().await,
        None,
        "one subscription: under the threshold"
    );
    let mut conn = pool.acquire().await.unwrap();
    sqlx::query(
        "INSERT INTO subscriptions (id, app_id, nombre, url, ordenado)
         SELECT gen_random_uuid(), s.app_id, 'many ' || n, s.url, true
         FROM subscriptions s, generate_series(1, 200) n WHERE s.id = $1",
    )
    .bind(sub.as_uuid())
    .execute(&mut *conn)
    .await
    .unwrap();
    // Counted once this backend reports them (when idle, within seconds).
    sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(&mut *conn)
        .await
        .unwrap();
    drop(conn);
    let mut at = None;
    for _ in 0..300 {
        at = analysed().await;
        if at.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(at.is_some(), "the sweeper did not analyse subscriptions");
    m.stop().await;
}

/// A user that neither owns Motor's tables nor is a superuser may not
/// analyse them: `analyze_grown` leaves them to autovacuum instead of
/// asking at every pass for an `ANALYZE` Postgres would skip with a
/// warning. The owner, on the same counts, analyses them.
#[tokio::test]
async fn tables_the_user_may_not_analyse_are_left_to_autovacuum() {
    use futures::FutureExt;
    use motor_store::statistics::analyze_grown;
    use sqlx::{Connection, Executor, PgConnection};

    let db = crate::util::TestDb::new().await;
    let role = format!("{}_reader", db.name);
    let mut owner = crate::util::connect(&db.url).await;
    owner
        .execute(format!("CREATE ROLE {role} LOGIN").as_str())
        .await
        .unwrap();
    let outcome = std::panic::AssertUnwindSafe(async {
        owner
            .execute(
                "INSERT INTO apps (id, nombre) VALUES (gen_random_uuid(), 'reader');
                 INSERT INTO subscriptions (id, app_id, nombre, url, ordenado)
                 SELECT gen_random_uuid(), a.id, 'many ' || n, 'http://127.0.0.1/', true
                 FROM apps a, generate_series(1, 200) n;
                 SELECT pg_stat_force_next_flush();",
            )
            .await
            .unwrap();
        // Until the collector has the counts (the inserting backend
        // reports them once idle).
        let mut counted = 0;
        for _ in 0..200 {
            counted = sqlx::query_scalar::<_, i64>(
                "SELECT n_mod_since_analyze FROM pg_stat_user_tables
                 WHERE relname = 'subscriptions'",
            )
            .fetch_one(&mut owner)
            .await
            .unwrap();
            if counted >= 200 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(counted, 200, "the collector has the inserts");
        let options = motor_store::connect_options(&db.url)
            .unwrap()
            .username(&role);
        let mut reader = PgConnection::connect_with(&options).await.unwrap();
        assert_eq!(
            analyze_grown(&mut reader).await.unwrap(),
            Vec::<String>::new()
        );
        reader.close().await.unwrap();
        assert_eq!(analyze_grown(&mut owner).await.unwrap(), ["subscriptions"]);
    })
    .catch_unwind()
    .await;
    owner
        .execute(format!("DROP ROLE {role}").as_str())
        .await
        .unwrap();
    owner.close().await.unwrap();
    db.drop_then(outcome).await;
}

/// Updates are no growth: every event moves its instance's `last_seq`,
/// and counted by changes (autovacuum's measure) `instances` was analysed
/// at every sweeper pass under load, each `ANALYZE` making every
/// connection plan its hot statements again. Rows inserted are.
#[tokio::test]
async fn updates_alone_are_no_reason_to_analyse() {
    use futures::FutureExt;
    use motor_store::statistics::analyze_grown;
    use sqlx::{Connection, Executor};

    let db = crate::util::TestDb::new().await;
    let mut conn = crate::util::connect(&db.url).await;
    let outcome = std::panic::AssertUnwindSafe(async {
        // Waits until the collector has `conn`'s counts for `instances`
        // (`column` at least `at_least`); returns it.
        async fn counted(conn: &mut sqlx::PgConnection, column: &str, at_least: i64) -> i64 {
            conn.execute("SELECT pg_stat_force_next_flush()")
                .await
                .unwrap();
            let mut n = 0;
            for _ in 0..200 {
                n = sqlx::query_scalar::<_, i64>(&format!(
                    "SELECT {column} FROM pg_stat_user_tables WHERE relname = 'instances'"
                ))
                .fetch_one(&mut *conn)
                .await
                .unwrap();
                if n >= at_least {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            n
        }
        conn.execute(
            "INSERT INTO apps (id, nombre) VALUES (gen_random_uuid(), 'updates');
             INSERT INTO instances (id, app_id, nombre)
             SELECT gen_random_uuid(), a.id, 'i' || n FROM apps a, generate_series(1, 100) n;",
        )
        .await
        .unwrap();
        // 100 and the system instance the migrations made.
        assert!(counted(&mut conn, "n_live_tup", 100).await >= 100);
        assert_eq!(analyze_grown(&mut conn).await.unwrap(), ["instances"]);
        for _ in 0..20 {
            conn.execute("UPDATE instances SET last_seq = last_seq + 1")
                .await
                .unwrap();
        }
        assert!(
            counted(&mut conn, "n_mod_since_analyze", 2_000).await >= 2_000,
            "the collector has the updates"
        );
        assert_eq!(
            analyze_grown(&mut conn).await.unwrap(),
            Vec::<String>::new(),
            "2,000 updates of 100 rows are no growth"
        );
        conn.execute(
            "INSERT INTO instances (id, app_id, nombre)
             SELECT gen_random_uuid(), a.id, 'more ' || n FROM apps a, generate_series(1, 100) n;",
        )
        .await
        .unwrap();
        assert!(counted(&mut conn, "n_live_tup", 200).await >= 200);
        assert_eq!(
            analyze_grown(&mut conn).await.unwrap(),
            ["instances"],
            "twice the rows"
        );
    })
    .catch_unwind()
    .await;
    conn.close().await.unwrap();
    db.drop_then(outcome).await;
}
