//! The ledger's operations: group-committed appends stay gapless and in
//! each caller's order; an `Idempotency-Key` answers its first answer.

use motor_app::{
    events::{self, Intake, Ledger, NOTHING_NEW, STORED_NEW},
    instances, AppError,
};
use motor_domain::InstanceId;
use serde_json::{json, Value};

use crate::{app, db};

fn seqs(body: &str) -> Vec<i64> {
    let value: Value = serde_json::from_str(body).unwrap();
    match value {
        Value::Array(items) => items.iter().map(|e| e["seq"].as_i64().unwrap()).collect(),
        one => vec![one["seq"].as_i64().unwrap()],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_share_commits_and_stay_gapless() {
    let pool = db().await;
    let acme = app(&pool, "Acme").await;
    let a = instances::create(&pool, acme.id, "a").await.unwrap();
    let b = instances::create(&pool, acme.id, "b").await.unwrap();
    let ledger = Ledger::start(pool.clone(), None, Intake::PACE);
    let mut tasks = Vec::new();
    for n in 0..40 {
        let ledger = ledger.clone();
        let instance = if n % 2 == 0 { a.id } else { b.id };
        tasks.push(tokio::spawn(async move {
            let body = json!([
                {"type": "t.x", "data": {"n": n, "i": 0}},
                {"type": "t.x", "data": {"n": n, "i": 1}},
            ]);
            ledger.append(acme.id, instance, None, &body).await
        }));
    }
    for task in tasks {
        let answer = task.await.unwrap().unwrap();
        assert_eq!(answer.status, STORED_NEW);
        let s = seqs(&answer.body);
        assert_eq!(s[1], s[0] + 1, "a request's events are consecutive");
    }
    for instance in [a.id, b.id] {
        let page = events::read_page(&pool, instance, None, None, None)
            .await
            .unwrap();
        let all: Vec<i64> = page.events.iter().flat_map(|e| seqs(e)).collect();
        assert_eq!(all, (1..=40).collect::<Vec<_>>());
        assert_eq!(page.next_after_seq, 40);
        assert!(!page.has_more);
    }
}

#[tokio::test]
async fn an_idempotency_key_answers_the_first_answer_again() {
    let pool = db().await;
    let acme = app(&pool, "Acme").await;
    let i = instances::create(&pool, acme.id, "i").await.unwrap();
    let ledger = Ledger::start(pool.clone(), None, Intake::PACE);
    let batch = json!([{"type": "t.x", "data": 1, "source_id": "s-1"}]);

    let first = ledger
        .append(acme.id, i.id, Some("k"), &batch)
        .await
        .unwrap();
    assert_eq!(first.status, STORED_NEW);
    assert!(first.appended.is_some());
    let again = ledger
        .append(acme.id, i.id, Some("k"), &batch)
        .await
        .unwrap();
    assert_eq!((again.status, &again.body), (first.status, &first.body));
    assert!(again.appended.is_none(), "nothing written for a repeat");
    assert!(matches!(
        ledger
            .append(acme.id, i.id, Some("k"), &json!({"type": "t.y", "data": 2}))
            .await,
        Err(AppError::Conflict(_))
    ));
    // The same source through the group commit: stored once, 200.
    let known = ledger.append(acme.id, i.id, None, &batch[0]).await.unwrap();
    assert_eq!(known.status, NOTHING_NEW);
    assert_eq!(seqs(&known.body), [1]);

    match ledger
        .append(acme.id, i.id, None, &json!({"data": 1}))
        .await
    {
        Err(AppError::Invalid(e)) => assert_eq!(e.field, "type"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        ledger
            .append(acme.id, InstanceId::new(), None, &batch)
            .await,
        Err(AppError::NotFound("instance"))
    ));
    match events::read_page(&pool, i.id, Some("-1"), None, None).await {
        Err(AppError::Invalid(e)) => assert_eq!(e.field, "after_seq"),
        other => panic!("{other:?}"),
    }
}
