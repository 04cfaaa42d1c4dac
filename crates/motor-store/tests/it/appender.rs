//! The intake's appends (`motor_store::ledger::Appender`) against a real
//! Postgres: an instance the appender wrote to last is appended in one
//! statement, and whenever somebody else wrote to it since — another
//! writer, a relink, a stored `source_id`, a writer holding its lock at
//! that moment — that statement writes nothing and the batch is appended
//! the usual way, gapless.

use std::time::Duration;

use motor_domain::{event::EventBatch, InstanceId, NewEvent};
use motor_store::ledger::{self, Appended, Appender, Request, Ways};
use serde_json::{json, Value};
use sqlx::{pool::PoolConnection, Connection, PgConnection, Postgres};
use uuid::Uuid;

use crate::commands::Db;

fn events(body: Value) -> Vec<NewEvent> {
    EventBatch::parse(&body).unwrap().into_events()
}

/// A test's database, with an appender and the connection it appends on.
struct Writer {
    db: Db,
    conn: PoolConnection<Postgres>,
    appender: Appender,
}

impl Writer {
    async fn new() -> Self {
        let db = Db::new().await;
        let conn = db.pool.acquire().await.unwrap();
        Self {
            db,
            conn,
            appender: Appender::new(),
        }
    }

    /// Appends `body` to the test's instance: the request's answer.
    async fn append_answer(&mut self, body: Value) -> Appended {
        let events = events(body);
        let (appended, _) = self
            .appender
            .append(
                &mut self.conn,
                &[Request {
                    instance: self.db.instance,
                    events: &events,
                }],
                None,
            )
            .await
            .unwrap();
        appended.into_iter().next().unwrap()
    }

    /// Appends `body` to the test's instance: each event's (seq,
    /// generation), in order.
    async fn append(&mut self, body: Value) -> Vec<(i64, i64)> {
        self.append_answer(body)
            .await
            .envelopes
            .iter()
            .map(|e| {
                let e: Value = serde_json::from_str(e).unwrap();
                (
                    e["seq"].as_i64().unwrap(),
                    e["generation"].as_i64().unwrap(),
                )
            })
            .collect()
    }

    fn ways(&self) -> Ways {
        self.appender.ways()
    }

    /// The instance's stored seqs, its last_seq and its outbox records.
    async fn stored(&self) -> (Vec<i64>, i64, i64) {
        let db = &self.db;
        let seqs: Vec<i64> =
            sqlx::query_scalar("SELECT seq FROM events WHERE instance_id = $1 ORDER BY seq")
                .bind(Uuid::from(db.instance))
                .fetch_all(&db.pool)
                .await
                .unwrap();
        let last_seq: i64 = sqlx::query_scalar("SELECT last_seq FROM instances WHERE id = $1")
            .bind(Uuid::from(db.instance))
            .fetch_one(&db.pool)
            .await
            .unwrap();
        let records: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox WHERE topic = 'events'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
        (seqs, last_seq, records)
    }

    async fn end(self) {
        drop(self.conn);
        self.db.drop_it().await;
    }
}

/// Appends one event to `instance` as a library caller does, in the
/// caller's transaction on `conn`.
async fn append_elsewhere(conn: &mut PgConnection, instance: InstanceId) {
    ledger::append(
        conn,
        instance,
        &events(json!({"type": "t.other", "data": {}})),
    )
    .await
    .unwrap();
}

fn ways(one_statement: u64, locked: u64, stale: u64) -> Ways {
    Ways {
        one_statement,
        locked,
        stale,
    }
}

#[tokio::test]
async fn an_instance_written_last_by_the_appender_is_appended_in_one_statement() {
    let mut w = Writer::new().await;
    let one = json!([{"type": "t.a", "data": {}}, {"type": "t.a", "data": {}}]);
    assert_eq!(w.append(one.clone()).await, [(1, 1), (2, 1)]);
    assert_eq!(w.ways(), ways(0, 1, 0), "the first batch reads the lock");
    assert_eq!(w.append(one).await, [(3, 1), (4, 1)]);
    assert_eq!(w.ways(), ways(1, 1, 0));
    // Committed without a transaction block: another session sees it all.
    assert_eq!(w.stored().await, (vec![1, 2, 3, 4], 4, 4));
    w.end().await;
}

#[tokio::test]
async fn a_write_by_someone_else_is_seen_and_the_batch_goes_the_usual_way() {
    let mut w = Writer::new().await;
    let one = json!({"type": "t.a", "data": {}});
    w.append(one.clone()).await;
    let mut tx = w.db.pool.begin().await.unwrap();
    append_elsewhere(&mut tx, w.db.instance).await;
    tx.commit().await.unwrap();
    assert_eq!(
        w.append(one.clone()).await,
        [(3, 1)],
        "numbered after the other writer's event, not from what it wrote last"
    );
    assert_eq!(w.ways(), ways(0, 2, 1));
    assert_eq!(
        w.stored().await,
        (vec![1, 2, 3], 3, 3),
        "nothing written twice"
    );
    // The instance has two writers now: left to the usual way for a while.
    w.append(one).await;
    assert_eq!(w.ways(), ways(0, 3, 1));
    w.end().await;
}

#[tokio::test]
async fn a_relink_is_seen_and_the_events_carry_the_new_generation() {
    let mut w = Writer::new().await;
    let one = json!({"type": "t.a", "data": {}});
    w.append(one.clone()).await;
    w.db.relink().await;
    assert_eq!(w.append(one).await, [(2, 2)]);
    assert_eq!(w.ways(), ways(0, 2, 1));
    w.end().await;
}

#[tokio::test]
async fn a_stored_source_id_is_answered_with_its_event() {
    let mut w = Writer::new().await;
    let first = json!({"type": "t.a", "data": {"n": 1}, "source_id": "wamid.1"});
    let answers = [
        w.append_answer(first.clone()).await,
        w.append_answer(first).await,
    ];
    assert_eq!(answers[0].stored, 1);
    assert_eq!(answers[1].stored, 0, "the second is the stored event");
    assert_eq!(answers[1].envelopes, answers[0].envelopes);
    assert_eq!(w.ways(), ways(0, 2, 1));
    assert_eq!(w.stored().await, (vec![1], 1, 1));
    w.end().await;
}

#[tokio::test]
async fn a_writer_holding_the_lock_is_waited_for_and_then_seen() {
    let mut w = Writer::new().await;
    let one = json!({"type": "t.a", "data": {}});
    w.append(one.clone()).await;

    // Another writer holds the instance's lock and has appended, not yet
    // committed, when the appender's statement starts: the statement's
    // snapshot does not show that event; its lock waits for the commit
    // and then reads the instance as the other writer left it.
    let pool = w.db.pool.clone();
    let mut other = pool.acquire().await.unwrap();
    let mut tx = other.begin().await.unwrap();
    append_elsewhere(&mut tx, w.db.instance).await;
    let waiting = tokio::spawn(async move {
        let answer = w.append(one).await;
        (answer, w)
    });
    let blocked = async {
        loop {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            if waiting > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), blocked)
        .await
        .expect("the appender's statement waits for the lock");
    tx.commit().await.unwrap();
    let (answer, w) = waiting.await.unwrap();
    assert_eq!(answer, [(3, 1)]);
    assert_eq!(w.ways(), ways(0, 2, 1));
    assert_eq!(w.stored().await, (vec![1, 2, 3], 3, 3));
    drop(other);
    w.end().await;
}
