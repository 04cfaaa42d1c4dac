//! Concurrency: identical requests racing make one command; a cancel and
//! a claim racing leave exactly one winner.

use std::sync::Arc;

use tokio::sync::Barrier;

use super::*;

#[tokio::test]
async fn fifty_identical_concurrent_sends_make_one_command() {
    let db = Arc::new(Db::new().await);
    let now = now();
    let barrier = Arc::new(Barrier::new(50));
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (db, barrier) = (db.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            db.insert(&send("549", "hola", now), Some("evt-1:0"), now)
                .await
                .unwrap()
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    assert_eq!(answers.iter().filter(|a| a.created).count(), 1);
    let id = answers[0].command.id;
    assert!(answers.iter().all(|a| a.command.id == id));
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM commands")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(stored, 1);
    let ledger = db.ledger().await;
    assert_eq!(ledger.len(), 1, "one command.accepted: {ledger:?}");
    assert_eq!(db.command_records().await.len(), 1);
    Arc::into_inner(db).unwrap().drop_it().await;
}

#[tokio::test]
async fn a_cancel_and_a_claim_racing_have_exactly_one_winner() {
    let db = Arc::new(Db::new().await);
    let now = now();
    let (mut cancels, mut claims) = (0, 0);
    for round in 0..25 {
        let c = db
            .insert(&send("549", "hola", now), Some(&format!("k{round}")), now)
            .await
            .unwrap()
            .command;
        let barrier = Arc::new(Barrier::new(2));
        let cancel = {
            let (db, barrier) = (db.clone(), barrier.clone());
            tokio::spawn(async move {
                let mut tx = db.pool.begin().await.unwrap();
                barrier.wait().await;
                let result = commands::cancel(&mut tx, db.app, c.id, now).await;
                tx.commit().await.unwrap();
                result
            })
        };
        let claim = {
            let (db, barrier) = (db.clone(), barrier.clone());
            tokio::spawn(async move {
                let mut tx = db.pool.begin().await.unwrap();
                barrier.wait().await;
                let lease = std::time::Duration::from_secs(30);
                let result = commands::claim(&mut tx, db.app, c.id, lease, now).await;
                tx.commit().await.unwrap();
                result
            })
        };
        let (cancel, claim) = (cancel.await.unwrap(), claim.await.unwrap());
        let final_status = db.get(c.id).await.status;
        match (cancel, claim) {
            (Ok(_), Err(e)) => {
                assert!(is_illegal(&e, CommandStatus::Cancelled), "{e:?}");
                assert_eq!(final_status, CommandStatus::Cancelled);
                cancels += 1;
            }
            (Err(e), Ok(Claimed::Claimed { .. })) => {
                assert!(is_illegal(&e, CommandStatus::Executing), "{e:?}");
                assert_eq!(final_status, CommandStatus::Executing);
                claims += 1;
            }
            (cancel, claim) => panic!("round {round}: {cancel:?} and {claim:?}"),
        }
    }
    assert_eq!(cancels + claims, 25);
    // Each cancel appended its event, no claim did: 25 accepted + cancels.
    let cancelled = db
        .ledger()
        .await
        .into_iter()
        .filter(|(_, t, _, _)| t == "command.cancelled")
        .count();
    assert_eq!(cancelled, cancels);
    Arc::into_inner(db).unwrap().drop_it().await;
}
