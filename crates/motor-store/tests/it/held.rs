//! A group commit's kept connection (`motor_store::held`) on a real
//! server: the same session serves batch after batch while they come
//! often, and is closed — never handed to anyone else — after a failed
//! batch, even one that left its transaction open; a worker's generic
//! plans stay its own. (When it goes back to the pool is `held`'s unit
//! test.)

use std::time::Duration;

use motor_store::held::Held;
use sqlx::Connection;

fn server_url() -> String {
    std::env::var("MOTOR_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

async fn backend(held: &mut Held) -> i32 {
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(held.conn().await.unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn batches_share_one_session_and_a_failed_batch_closes_it() {
    let pool = motor_store::connect(&format!("{}/postgres", server_url()), 2)
        .await
        .unwrap();
    let mut held = Held::new(pool.clone());
    let first = backend(&mut held).await;
    assert_eq!(backend(&mut held).await, first, "kept between batches");
    let other: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_ne!(other, first, "not in the pool while kept");

    // A batch fails inside its transaction: the session is closed, so
    // nobody gets a connection still in that transaction.
    let conn = held.conn().await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SELECT 1 / 0")
        .execute(&mut *tx)
        .await
        .unwrap_err();
    std::mem::forget(tx); // as a batch cut short, no rollback sent
    held.failed();
    let after = backend(&mut held).await;
    assert_ne!(after, first, "a failed batch's session is not kept");
    let mut alive = 0;
    for _ in 0..20 {
        alive =
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM pg_stat_activity WHERE pid = $1")
                .bind(first)
                .fetch_one(&pool)
                .await
                .unwrap();
        if alive == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(alive, 0, "the failed batch's session was closed");
    let in_transaction: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = 'postgres' AND state LIKE 'idle in transaction%'
           AND pid = ANY($1)",
    )
    .bind(vec![first, after, other])
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(in_transaction, 0);
    drop(held);
    pool.close().await;
}

/// `plan_cache_mode` of the session `conn` is.
async fn plans(conn: &mut sqlx::PgConnection) -> String {
    sqlx::query_scalar("SELECT current_setting('plan_cache_mode')")
        .fetch_one(conn)
        .await
        .unwrap()
}

/// A worker that keeps generic plans (the intake) sets its session so
/// while it holds it, and never lets the setting reach anyone else: the
/// session goes back to the pool reset, and is closed when the worker is
/// dropped holding it.
#[tokio::test]
async fn generic_plans_stay_with_the_worker_that_asked_for_them() {
    let pool = motor_store::connect(&format!("{}/postgres", server_url()), 1)
        .await
        .unwrap();
    let mut held = Held::new(pool.clone()).with_generic_plans();
    let first = backend(&mut held).await;
    assert_eq!(
        plans(held.conn().await.unwrap()).await,
        "force_generic_plan"
    );

    // Given back: the pool's only session, reset.
    held.give_back().await;
    let mut conn = pool.acquire().await.unwrap();
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(pid, first, "the same session, back in the pool");
    assert_eq!(plans(&mut conn).await, "auto");
    drop(conn);

    // Taken again, set again; dropped while held: closed, not given back.
    assert_eq!(
        plans(held.conn().await.unwrap()).await,
        "force_generic_plan"
    );
    drop(held);
    let mut conn = pool.acquire().await.unwrap();
    assert_eq!(plans(&mut conn).await, "auto");
    drop(conn);

    // A worker that did not ask keeps Postgres's choice.
    let mut plain = Held::new(pool.clone());
    assert_eq!(plans(plain.conn().await.unwrap()).await, "auto");
    drop(plain);
    pool.close().await;
}
