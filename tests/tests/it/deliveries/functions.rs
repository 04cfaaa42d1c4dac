//! The group commit of delivered attempts runs as one call of
//! `motor_record_delivered` (migration 0024; its body now 0030's), and the
//! claim of parked first attempts after a commit as one call of
//! `motor_claim_freed` (0031); each runs two statements the plans test
//! reads from their files (`motor_store::deliveries::hot_statements`). A
//! change to one of those files that no migration brings into its
//! function would leave the plans test checking statements Motor no
//! longer runs: this test fails first.

use motor_store::deliveries::hot_statements;
use uuid::Uuid;

use crate::util::{scans, TestDb};

/// The body of function `name` as the database holds it.
async fn body(db: &TestDb, name: &str) -> String {
    sqlx::query_scalar("SELECT prosrc FROM pg_proc WHERE proname = $1")
        .bind(name)
        .fetch_one(&db.pool)
        .await
        .unwrap_or_else(|e| panic!("function {name}: {e}"))
}

#[tokio::test]
async fn the_functions_run_the_statements_the_plans_test_checks() {
    let db = TestDb::new().await;
    let statements = hot_statements();
    let text = |name: &str| {
        statements
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no hot statement {name}"))
            .sql
            .trim_end()
            .to_owned()
    };
    for (function, statement) in [
        ("motor_record_delivered", "record_delivered_many"),
        ("motor_next_after", "next_after_many"),
        ("motor_claim_freed", "claim_freed"),
        ("motor_claim_freed", "finishing_lanes"),
    ] {
        let body = body(&db, function).await;
        assert!(
            body.contains(&text(statement)),
            "{function} no longer runs {statement}.sql as the file has it: \
             a migration must replace the function with the file's text"
        );
    }
}

/// The functions run their statements as the plans test plans them: with
/// sequential and bitmap scans off and generic plans
/// (`motor_store::deliveries::BY_KEY_SETUP`'s settings), for the call
/// only, as `SET` clauses of their definitions do.
#[tokio::test]
async fn the_functions_probe_by_key_with_generic_plans() {
    let db = TestDb::new().await;
    for function in [
        "motor_record_delivered",
        "motor_next_after",
        "motor_claim_freed",
    ] {
        let settings: Vec<String> =
            sqlx::query_scalar("SELECT unnest(proconfig) FROM pg_proc WHERE proname = $1")
                .bind(function)
                .fetch_all(&db.pool)
                .await
                .unwrap();
        assert_eq!(
            settings,
            [
                "enable_seqscan=off",
                "enable_bitmapscan=off",
                "plan_cache_mode=force_generic_plan"
            ],
            "{function}'s settings"
        );
    }
}

/// A group commit's claim of what follows its heads reads each of their
/// subscriptions once, with its throttle, however many heads it has
/// (migration 0030): 40 heads of two subscriptions, an ordered one (each
/// lane's second delivery parked behind its head) and an unordered one,
/// recorded and each followed by a claim. Before, each head's
/// subscription was read twice and once more with its claim's throttle.
#[tokio::test]
async fn a_group_commit_reads_each_of_its_heads_subscriptions_once() {
    const LANES: i64 = 20;
    let db = TestDb::new().await;
    let (app, ordered, unordered) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    sqlx::raw_sql(&format!(
        "INSERT INTO apps (id, nombre) VALUES ('{app}', 'once');
         INSERT INTO instances (id, app_id, nombre)
             SELECT gen_random_uuid(), '{app}', 'i' || i FROM generate_series(1, {LANES}) i;
         INSERT INTO subscriptions (id, app_id, nombre, url, ordenado)
         VALUES ('{ordered}', '{app}', 'ordered', 'http://127.0.0.1/', true),
                ('{unordered}', '{app}', 'unordered', 'http://127.0.0.1/', false);
         INSERT INTO events (instance_id, seq, event_id, type, recibido_en, envelope)
             SELECT i.id, s, gen_random_uuid(), 'once', now(), '{{}}'
             FROM instances i, generate_series(1, 2) s WHERE i.app_id = '{app}';
         INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq,
                                 proximo_intento, aparcado_en)
             SELECT motor_uuid_v7(), sub.id, '{app}', e.instance_id, e.event_id, e.seq,
                    now() - interval '1 minute' + e.seq * interval '1 ms',
                    CASE WHEN sub.ordenado AND e.seq = 2 THEN now() END
             FROM events e, subscriptions sub WHERE sub.app_id = '{app}';"
    ))
    .execute(&db.pool)
    .await
    .unwrap();
    let heads: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM deliveries WHERE seq = 1 ORDER BY id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(heads.len() as i64, 2 * LANES);

    let mut tx = db.pool.begin().await.unwrap();
    let before = [
        scans(&mut tx, "subscriptions").await,
        scans(&mut tx, "subscription_throttle").await,
    ];
    let n = heads.len();
    let claimed: Vec<(Option<Uuid>, Option<Uuid>)> = sqlx::query_as(
        "SELECT head, id FROM motor_record_delivered(
             $1, $2, $3, $4, $5, $6, $7, $1, interval '30 seconds')",
    )
    .bind(&heads)
    .bind(vec![1_i32; n])
    .bind(vec![204_i32; n])
    .bind(vec![chrono::Utc::now(); n])
    .bind(vec![3_i32; n])
    .bind(vec!["whk_1".to_owned(); n])
    .bind(vec![None::<chrono::DateTime<chrono::Utc>>; n])
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    assert_eq!(claimed.len(), n, "one row a recorded head");
    assert!(
        claimed
            .iter()
            .all(|(head, next)| head.is_some() && next.is_some()),
        "every head's next delivery claimed: {claimed:?}"
    );
    let after = [
        scans(&mut tx, "subscriptions").await,
        scans(&mut tx, "subscription_throttle").await,
    ];
    // Each lane's (or the unordered subscription's) next one: the
    // deliveries at seq 2, each claimed once.
    let mut nexts: Vec<Uuid> = claimed.iter().filter_map(|(_, next)| *next).collect();
    nexts.sort();
    let seconds: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM deliveries WHERE seq = 2 ORDER BY id")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
    assert_eq!(nexts, seconds);
    tx.rollback().await.unwrap();
    assert_eq!(
        [after[0] - before[0], after[1] - before[1]],
        [2, 2],
        "each of the two subscriptions read once, and its throttle once"
    );
}
