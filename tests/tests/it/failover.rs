//! Motor on a primary and a synchronous standby (`scripts/pg-pair`, on
//! free ports in a temporary directory): while no primary answers, a
//! producer gets 503 with `Retry-After` within the pool's acquire timeout
//! (`MOTOR_DATABASE_ACQUIRE_TIMEOUT_MS`; never a 500, never a hang); once the standby is promoted the same
//! Motor writes to it, no restart.

use std::time::{Duration, Instant};

use motor::serve::Role;
use motor_system_tests::harness::services::PostgresPair;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::{Connection, PgConnection};

use crate::util::{Tenant, TestDb, TestMotor};

/// `MOTOR_DATABASE_ACQUIRE_TIMEOUT_MS`: how long a request may wait.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);

async fn post(m: &TestMotor, t: &Tenant, n: usize) -> (StatusCode, Option<String>, Value) {
    let res = m
        .http
        .post(m.url(&format!("/v1/instances/{}/events", t.instances[0])))
        .bearer_auth(&t.token)
        .json(&json!({"type": "x", "data": n, "source_id": format!("failover-{n}")}))
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("Motor answers (no hang past the client's 30 s)");
    let retry_after = res
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .map(|v| v.to_str().unwrap().to_owned());
    (
        res.status(),
        retry_after,
        res.json().await.unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_primary_answers_503_until_the_standby_is_promoted() {
    let pair = PostgresPair::start_new(true);
    let db = TestDb::on(&pair.primary_server()).await;
    let name = db.name.clone();
    let url = pair.url(&name);
    let m = TestMotor::start_configured(db, &[Role::Api], |c| {
        c.database_url = url;
        c.database_acquire_timeout_ms = ACQUIRE_TIMEOUT.as_millis() as u64;
    })
    .await;
    let t = m.tenant(1).await;
    let (status, _, before) = post(&m, &t, 0).await;
    assert_eq!(status, StatusCode::CREATED, "{before}");

    pair.kill_primary();
    let asked = Instant::now();
    let (status, retry_after, body) = post(&m, &t, 1).await;
    let took = asked.elapsed();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "no_disponible", "{body}");
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert!(
        took <= ACQUIRE_TIMEOUT + Duration::from_secs(2),
        "the 503 took {took:?}"
    );
    pair.promote();
    // The same Motor finds the promoted standby: every answer until then
    // is a 503, never a 500.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut n = 2;
    let after = loop {
        let (status, retry_after, body) = post(&m, &t, n).await;
        if status == StatusCode::CREATED {
            break body;
        }
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(retry_after.is_some(), "a 503 without Retry-After");
        assert!(
            Instant::now() < deadline,
            "no 201 within 30 s of the promote"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        n += 1;
    };

    // Synchronous replication: the event answered 201 before the loss is
    // in the promoted primary's ledger, and so is the one after.
    let mut promoted = PgConnection::connect(&format!("{}/{name}", pair.standby_server()))
        .await
        .unwrap();
    for event in [&before, &after] {
        let found: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE event_id = $1")
            .bind(uuid::Uuid::parse_str(event["event_id"].as_str().unwrap()).unwrap())
            .fetch_one(&mut promoted)
            .await
            .unwrap();
        assert_eq!(found, 1, "{event}");
    }
    m.stop().await;
}

/// `scripts/pg-pair rejoin`: after a failover the old primary (killed,
/// its last WAL never sent) is rewound onto the promoted primary's
/// history with `pg_rewind` and follows it as its synchronous standby —
/// the pair survives a second loss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_old_primary_rejoins_as_the_promoted_ones_synchronous_standby() {
    let pair = PostgresPair::start_new(true);
    let on = |server: String| async move {
        PgConnection::connect(&format!("{server}/postgres"))
            .await
            .unwrap()
    };
    let mut old = on(pair.primary_server()).await;
    sqlx::raw_sql("CREATE TABLE rejoin (n int); INSERT INTO rejoin SELECT generate_series(1, 10)")
        .execute(&mut old)
        .await
        .unwrap();
    drop(old);

    pair.kill_primary();
    pair.promote();
    let mut new = on(pair.standby_server()).await;
    sqlx::raw_sql("INSERT INTO rejoin SELECT generate_series(11, 20)")
        .execute(&mut new)
        .await
        .unwrap();

    pair.rejoin();
    let state: Vec<(String, String)> = sqlx::query_as(
        "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = 'standby'",
    )
    .fetch_all(&mut new)
    .await
    .unwrap();
    assert_eq!(state, [("streaming".to_owned(), "sync".to_owned())]);
    // A synchronous commit returns: the rejoined standby flushed it.
    tokio::time::timeout(
        Duration::from_secs(10),
        sqlx::raw_sql("INSERT INTO rejoin VALUES (21)").execute(&mut new),
    )
    .await
    .expect("the commit waits for a standby that streams")
    .unwrap();
    let mut rejoined = on(pair.primary_server()).await;
    let recovering: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
        .fetch_one(&mut rejoined)
        .await
        .unwrap();
    assert!(recovering, "the old primary is a standby now");
    // Synchronous commit means flushed there, not yet replayed: wait.
    let deadline = Instant::now() + Duration::from_secs(10);
    while rows(&mut rejoined).await != 21 {
        assert!(
            Instant::now() < deadline,
            "the rejoined standby never caught up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn rows(conn: &mut PgConnection) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM rejoin")
        .fetch_one(conn)
        .await
        .unwrap()
}
