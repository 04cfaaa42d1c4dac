//! A batch of requests in one transaction (the API's group commit): each
//! answered in queue order as if it had come alone, a refused one writing
//! nothing, and a database error failing them all.

use motor_domain::command::IdempotencyKey;
use motor_store::commands::Acceptance;

use super::*;

#[tokio::test]
async fn a_batch_answers_each_request_in_queue_order_and_refusals_write_nothing() {
    let db = Db::new().await;
    let now = now();
    let before = db.sent("antes", "old", now).await;
    let other = InstanceId::new();
    db.add_instance(db.app, other).await;
    let stranger = AppId::new();
    db.add_app(stranger).await;

    let (k1, k2, old) = (key("k1"), key("k2"), key("old"));
    let hola = send("549", "hola", now);
    let chau = send("549", "chau", now);
    let stale = send_with(
        "549",
        "x",
        RawOptions {
            expected_generation: Some(5),
            ..RawOptions::default()
        },
        now,
    );
    let control = operation("reconectar", now);
    let antes = send("549", "antes", now);
    let on = |instance, new, key| Acceptance {
        app: db.app,
        instance,
        new,
        key,
        now,
    };
    let requests = [
        on(db.instance, &hola, Some(&k1)),       // 0: new
        on(db.instance, &hola, Some(&k1)),       // 1: 0's command
        on(db.instance, &chau, Some(&k1)),       // 2: key conflict with 0
        on(db.instance, &stale, None),           // 3: generation 5 ≠ 1
        on(InstanceId::new(), &hola, Some(&k2)), // 4: unknown instance
        Acceptance {
            app: stranger,
            ..on(db.instance, &hola, Some(&k2))
        }, // 5: not its app
        on(db.instance, &control, None),         // 6: new, no event
        on(other, &hola, Some(&k1)),             // 7: new (keys are per instance)
        on(db.instance, &antes, Some(&old)),     // 8: stored before
        on(db.instance, &chau, Some(&k2)),       // 9: new (4 and 5 wrote nothing)
    ];
    let mut tx = db.pool.begin().await.unwrap();
    let answers = commands::insert_batch(&mut tx, &requests).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(answers.len(), requests.len());

    let ok = |n: usize| answers[n].as_ref().unwrap_or_else(|e| panic!("{n}: {e:?}"));
    let first = ok(0);
    assert!(first.created);
    assert_eq!(status(&first.command), "en_cola");
    assert_eq!(first.command.next_try, Some(now));
    assert_eq!(first.command.idempotency_key.as_deref(), Some("k1"));
    assert_eq!((ok(1).created, ok(1).command.id), (false, first.command.id));
    assert!(
        matches!(answers[2], Err(CommandError::KeyConflict { existing }) if existing == first.command.id)
    );
    assert!(matches!(
        answers[3],
        Err(CommandError::GenerationMismatch {
            expected: 5,
            actual: 1
        })
    ));
    assert!(matches!(answers[4], Err(CommandError::InstanceNotFound)));
    assert!(matches!(answers[5], Err(CommandError::InstanceNotFound)));
    assert!(ok(6).created);
    assert_eq!(status(&ok(6).command), "aceptado");
    assert!(ok(7).created);
    assert_eq!(ok(7).command.instance_id, other);
    assert_eq!((ok(8).created, ok(8).command.id), (false, before.id));
    assert!(ok(9).created);

    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM commands")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(stored, 5, "before, 0, 6, 7 and 9");
    // The instance's ledger: command.accepted of `before`, then of 0 and
    // 9 in queue order (6 is a control command: no event), gapless.
    let ledger = db.ledger().await;
    let told: Vec<(i64, &str, Option<String>)> = ledger
        .iter()
        .map(|(seq, t, c, _)| (*seq, t.as_str(), c.clone()))
        .collect();
    let accepted = |c: &Command| Some(c.id.to_string());
    assert_eq!(
        told,
        [
            (1, "command.accepted", accepted(&before)),
            (2, "command.accepted", accepted(&first.command)),
            (3, "command.accepted", accepted(&ok(9).command)),
        ]
    );
    // One `{prefix}.commands` record per new command, in queue order.
    let records: Vec<String> = db
        .command_records()
        .await
        .into_iter()
        .map(|(_, payload)| payload["command_id"].as_str().unwrap().to_owned())
        .collect();
    let ids: Vec<String> = [
        &before,
        &first.command,
        &ok(6).command,
        &ok(7).command,
        &ok(9).command,
    ]
    .iter()
    .map(|c| c.id.to_string())
    .collect();
    assert_eq!(records, ids);
    db.drop_it().await;
}

#[tokio::test]
async fn a_database_error_fails_the_whole_batch() {
    let db = Db::new().await;
    let now = now();
    // A row the table refuses: the batch's one INSERT fails for all.
    sqlx::query(
        "CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN IF NEW.chat = 'boom' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    sqlx::query(
        "CREATE TRIGGER refuse_boom BEFORE INSERT ON commands
         FOR EACH ROW EXECUTE FUNCTION refuse_boom()",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    let (fine, boom) = (send("549", "hola", now), send("boom", "hola", now));
    let (a, b) = (key("a"), key("b"));
    let requests = [
        Acceptance {
            app: db.app,
            instance: db.instance,
            new: &fine,
            key: Some(&a),
            now,
        },
        Acceptance {
            app: db.app,
            instance: db.instance,
            new: &boom,
            key: Some(&b),
            now,
        },
    ];
    let mut tx = db.pool.begin().await.unwrap();
    assert!(commands::insert_batch(&mut tx, &requests).await.is_err());
    tx.rollback().await.unwrap();
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM commands")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(stored, 0);
    assert!(db.ledger().await.is_empty());
    assert!(db.command_records().await.is_empty());
    db.drop_it().await;
}

fn key(k: &str) -> IdempotencyKey {
    IdempotencyKey::parse(k).unwrap()
}
