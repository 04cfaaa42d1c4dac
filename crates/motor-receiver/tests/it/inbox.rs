//! The Postgres inbox against a real server: a database of its own per
//! test (MOTOR_TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432),
//! two or three connections, dropped at the end.

use std::sync::atomic::{AtomicUsize, Ordering};

use http::StatusCode;
use motor_receiver::{Envelope, Inbox, InboxError, Received};
use sqlx::{postgres::PgPoolOptions, Connection, Executor, PgConnection, PgPool};
use uuid::Uuid;

use crate::support::BODY;

fn server_url() -> String {
    std::env::var("MOTOR_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

pub struct TestDb {
    name: String,
    pub pool: PgPool,
}

impl TestDb {
    /// A fresh database with an `effects` table for the receiver's effect.
    pub async fn new() -> Self {
        let name = format!(
            "motor_test_receiver_{}",
            &Uuid::new_v4().simple().to_string()[..12]
        );
        let mut admin = PgConnection::connect(&format!("{}/postgres", server_url()))
            .await
            .expect("postgres must be running (see scripts/test)");
        admin
            .execute(format!("CREATE DATABASE {name}").as_str())
            .await
            .unwrap();
        admin.close().await.unwrap();
        let pool = PgPoolOptions::new()
            .max_connections(3)
            .connect(&format!("{}/{name}", server_url()))
            .await
            .unwrap();
        pool.execute("CREATE TABLE effects (event_id uuid NOT NULL, seq bigint NOT NULL)")
            .await
            .unwrap();
        Self { name, pool }
    }

    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    pub async fn drop(self) {
        self.pool.close().await;
        let mut admin = PgConnection::connect(&format!("{}/postgres", server_url()))
            .await
            .unwrap();
        admin
            .execute(format!("DROP DATABASE {} WITH (FORCE)", self.name).as_str())
            .await
            .unwrap();
    }
}

fn envelope(event_id: Uuid, seq: i64) -> Envelope {
    let mut e = Envelope::from_slice(BODY).unwrap();
    e.event_id = event_id;
    e.seq = seq;
    e
}

/// The receiver's effect: one row per run, and a count of the runs.
async fn apply(
    tx: &mut PgConnection,
    event: &Envelope,
    runs: &AtomicUsize,
    fail: bool,
) -> Result<(), sqlx::Error> {
    runs.fetch_add(1, Ordering::SeqCst);
    sqlx::query("INSERT INTO effects (event_id, seq) VALUES ($1, $2)")
        .bind(event.event_id)
        .bind(event.seq)
        .execute(&mut *tx)
        .await?;
    if fail {
        return Err(sqlx::Error::Protocol("the receiver's effect failed".into()));
    }
    Ok(())
}

#[tokio::test]
async fn first_applies_duplicate_skips_failure_keeps_nothing() {
    let db = TestDb::new().await;
    let inbox = Inbox::new(db.pool.clone(), "crm");
    inbox.create().await.unwrap();
    inbox.create().await.unwrap(); // idempotent
    let runs = AtomicUsize::new(0);

    // First delivery: the effect runs and commits with the inbox row.
    let first = envelope(Uuid::new_v4(), 1);
    let got = inbox
        .receive(&first, async |tx| apply(tx, &first, &runs, false).await)
        .await;
    assert!(matches!(got, Received::Applied), "{got:?}");
    assert_eq!(got.status(), StatusCode::NO_CONTENT);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(db.count("effects").await, 1);
    assert_eq!(db.count("motor_inbox").await, 1);

    // The same event_id again (a retry or a replay): 204, nothing runs.
    let got = inbox
        .receive(&first, async |tx| apply(tx, &first, &runs, false).await)
        .await;
    assert!(matches!(got, Received::Duplicate), "{got:?}");
    assert_eq!(got.status(), StatusCode::NO_CONTENT);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(db.count("effects").await, 1);

    // A failing effect: 500, and neither its row nor the inbox row stays.
    let second = envelope(Uuid::new_v4(), 2);
    let got = inbox
        .receive(&second, async |tx| apply(tx, &second, &runs, true).await)
        .await;
    assert!(
        matches!(got, Received::Failed(InboxError::Effect(_))),
        "{got:?}"
    );
    assert_eq!(got.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(db.count("effects").await, 1);
    assert_eq!(db.count("motor_inbox").await, 1);

    // Motor retries it: now it applies.
    let got = inbox
        .receive(&second, async |tx| apply(tx, &second, &runs, false).await)
        .await;
    assert!(matches!(got, Received::Applied), "{got:?}");
    assert_eq!(db.count("effects").await, 2);

    // Another client of the same events keeps its own record.
    let other = Inbox::new(db.pool.clone(), "analytics");
    let got = other
        .receive(&first, async |tx| apply(tx, &first, &runs, false).await)
        .await;
    assert!(matches!(got, Received::Applied), "{got:?}");
    assert_eq!(db.count("motor_inbox").await, 3);
    db.drop().await;
}

#[tokio::test]
async fn concurrent_duplicates_apply_once() {
    let db = TestDb::new().await;
    let inbox = Inbox::new(db.pool.clone(), "crm");
    inbox.create().await.unwrap();
    let runs = AtomicUsize::new(0);
    let event = envelope(Uuid::new_v4(), 7);
    let (a, b) = tokio::join!(
        inbox.receive(&event, async |tx| apply(tx, &event, &runs, false).await),
        inbox.receive(&event, async |tx| apply(tx, &event, &runs, false).await),
    );
    let mut outcomes = [format!("{a:?}"), format!("{b:?}")];
    outcomes.sort();
    assert_eq!(outcomes, ["Applied", "Duplicate"]);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(db.count("effects").await, 1);
    db.drop().await;
}

#[tokio::test]
async fn a_broken_database_answers_500() {
    let db = TestDb::new().await;
    // No inbox table: the claim fails, the effect never runs.
    let inbox = Inbox::new(db.pool.clone(), "crm");
    let runs = AtomicUsize::new(0);
    let event = envelope(Uuid::new_v4(), 1);
    let got = inbox
        .receive(&event, async |tx| apply(tx, &event, &runs, false).await)
        .await;
    assert!(
        matches!(got, Received::Failed(InboxError::Database(_))),
        "{got:?}"
    );
    assert_eq!(got.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    db.drop().await;
}
