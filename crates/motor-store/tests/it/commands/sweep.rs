//! The sweeper's jobs: expiry before a claim, and leases that ran out.

use motor_domain::command::{Report, Stage};

use super::*;

#[tokio::test]
async fn a_command_not_claimed_by_expires_at_fails_and_no_executor_gets_it() {
    let db = Db::new().await;
    let now = now();
    let swept = expiring(&db, "a", now).await;
    let claimed_late = expiring(&db, "b", now).await;
    let lasting = db.sent("c", "c", now).await;

    let mut tx = db.pool.begin().await.unwrap();
    assert!(commands::expire_due(&mut tx, later(now, 9), 100)
        .await
        .unwrap()
        .is_empty());
    tx.commit().await.unwrap();
    // A claim after expires_at expires the command instead.
    match db.claim(claimed_late.id, 30, later(now, 10)).await.unwrap() {
        Claimed::Expired(c) => assert_eq!(
            (status(&c), c.error_code.as_deref(), c.stage),
            ("fallido", Some("comando_vencido"), Some(Stage::Before))
        ),
        other => panic!("expected the claim to expire it: {other:?}"),
    }
    let mut tx = db.pool.begin().await.unwrap();
    let expired = commands::expire_due(&mut tx, later(now, 11), 100)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].id, swept.id);
    assert_eq!(
        (
            status(&expired[0]),
            expired[0].error_code.as_deref(),
            expired[0].stage
        ),
        ("fallido", Some("comando_vencido"), Some(Stage::Before))
    );
    let claim = db.claim(swept.id, 30, later(now, 12)).await.unwrap_err();
    assert!(is_illegal(&claim, CommandStatus::Failed), "{claim:?}");
    assert_eq!(status(&db.get(lasting.id).await), "en_cola");

    let failed: Vec<(Option<String>, Value)> = db
        .ledger()
        .await
        .into_iter()
        .filter(|(_, t, _, _)| t == "command.failed")
        .map(|(_, _, c, d)| (c, d))
        .collect();
    assert_eq!(failed.len(), 2);
    assert_eq!(failed[0].0, Some(claimed_late.id.to_string()));
    assert_eq!(failed[1].0, Some(swept.id.to_string()));
    assert_eq!(failed[1].1["error_code"], "comando_vencido");
    assert_eq!(failed[1].1["stage"], "previa");
    db.drop_it().await;
}

#[tokio::test]
async fn a_lease_that_runs_out_makes_the_command_ambiguous_at_the_boundary() {
    let db = Db::new().await;
    let now = now();
    let c = db.sent("hola", "k", now).await;
    let reported = db.sent("chau", "r", now).await;
    let (_, lease) = db.claimed(c.id, now).await;
    let (_, other_lease) = db.claimed(reported.id, now).await;
    // A report after the lease's end is still taken while ejecutando.
    let mut tx = db.pool.begin().await.unwrap();
    let completed = Report::Ambiguous { error_code: None };
    commands::report(
        &mut tx,
        db.app,
        reported.id,
        other_lease,
        &completed,
        later(now, 40),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();

    let mut tx = db.pool.begin().await.unwrap();
    assert!(commands::expire_leases(&mut tx, later(now, 29), 100)
        .await
        .unwrap()
        .is_empty());
    let expired = commands::expire_leases(&mut tx, later(now, 30), 100)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(expired.len(), 1);
    let ambiguous = &expired[0];
    assert_eq!(ambiguous.id, c.id);
    assert_eq!(
        (
            status(ambiguous),
            ambiguous.stage,
            ambiguous.error_code.as_deref()
        ),
        ("ambiguo", Some(Stage::Boundary), Some("reserva_vencida"))
    );
    // Never sent again by Motor, and its executor's late report is refused.
    let claim = db.claim(c.id, 30, later(now, 31)).await.unwrap_err();
    assert!(is_illegal(&claim, CommandStatus::Ambiguous), "{claim:?}");
    let mut tx = db.pool.begin().await.unwrap();
    let late = commands::report(
        &mut tx,
        db.app,
        c.id,
        lease,
        &Report::Completed,
        later(now, 31),
    )
    .await
    .unwrap_err();
    assert!(is_illegal(&late, CommandStatus::Ambiguous), "{late:?}");
    drop(tx);
    let ledger = db.ledger().await;
    let story: Vec<(i64, &str)> = ledger
        .iter()
        .filter(|(_, _, id, _)| id.as_deref() == Some(&c.id.to_string()))
        .map(|(s, t, _, _)| (*s, t.as_str()))
        .collect();
    assert_eq!(story, [(1, "command.accepted"), (4, "command.ambiguous")]);
    assert_eq!(ledger[3].3["stage"], "frontera");
    db.drop_it().await;
}

/// The sweeper looks every second and nearly always finds no command due:
/// then each look is its read alone, no transaction (`BEGIN`, the read,
/// `COMMIT` were three round trips, each a wake-up of Postgres and of
/// Motor); what it finds due is changed in one transaction of its own.
/// Counted on the wire, through a loopback relay of the connection.
#[tokio::test]
async fn a_look_with_nothing_due_opens_no_transaction() {
    let db = Db::new().await;
    let now = now();
    let due = expiring(&db, "a", now).await;
    let (url, begun) = counted(&db).await;
    let mut conn = PgConnection::connect_with(&url).await.unwrap();

    assert!(commands::expire_due(&mut conn, later(now, 9), 100)
        .await
        .unwrap()
        .is_empty());
    assert!(commands::expire_leases(&mut conn, later(now, 9), 100)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(begun.count(), 0, "nothing due: no transaction");

    let expired = commands::expire_due(&mut conn, later(now, 11), 100)
        .await
        .unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(begun.count(), 1, "one transaction for what was due");
    // Committed: another connection sees it.
    assert_eq!(status(&db.get(due.id).await), "fallido");
    conn.close().await.unwrap();
    db.drop_it().await;
}

/// A command sent under `key` that expires 10 s after `now`.
async fn expiring(db: &Db, key: &str, now: DateTime<Utc>) -> Command {
    let soon = ts(later(now, 10));
    let options = RawOptions {
        expires_at: Some(&soon),
        ..RawOptions::default()
    };
    db.insert(&send_with("549", key, options, now), Some(key), now)
        .await
        .unwrap()
        .command
}

/// `BEGIN`s a client sent through [`counted`]'s relay.
#[derive(Clone, Default)]
struct Begun(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Begun {
    fn count(&self) -> usize {
        // A simple query `BEGIN`: its type, its length (4 + 6), the text.
        const BEGIN: &[u8] = b"Q\0\0\0\x0aBEGIN\0";
        let sent = self.0.lock().unwrap();
        sent.windows(BEGIN.len()).filter(|w| *w == BEGIN).count()
    }
}

/// Options for a connection to `db` through a loopback relay that keeps
/// every byte the client sends (no TLS, so they can be read).
async fn counted(db: &Db) -> (sqlx::postgres::PgConnectOptions, Begun) {
    use std::str::FromStr;
    let name: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let server = sqlx::postgres::PgConnectOptions::from_str(&server_url()).unwrap();
    let upstream = format!("{}:{}", server.get_host(), server.get_port());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let begun = Begun::default();
    let kept = begun.clone();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (client, _) = listener.accept().await.unwrap();
        let server = tokio::net::TcpStream::connect(upstream).await.unwrap();
        let (mut from_client, mut to_client) = client.into_split();
        let (mut from_server, mut to_server) = server.into_split();
        tokio::spawn(async move { tokio::io::copy(&mut from_server, &mut to_client).await });
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from_client.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            kept.0.lock().unwrap().extend_from_slice(&buf[..n]);
            if to_server.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    });
    let options = server
        .host("127.0.0.1")
        .port(port)
        .database(&name)
        .ssl_mode(sqlx::postgres::PgSslMode::Disable);
    (options, begun)
}
