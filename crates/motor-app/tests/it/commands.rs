//! The accept of commands through the process's group commit: concurrent
//! requests share commits, identical ones still make one command, and each
//! request gets its own answer.

use std::sync::Arc;

use motor_app::{
    commands::{self, Acceptor},
    instances, AppError,
};
use motor_domain::{
    command::{RawOptions, RawSend},
    principal::Principal,
    time, Scope,
};
use serde_json::{json, Value};
use tokio::sync::Barrier;

use crate::{app, db};

fn caller(app: motor_domain::AppId) -> Principal {
    Principal {
        key_id: "test".into(),
        app_id: app,
        scopes: vec![Scope::CommandsWrite],
        instances: Vec::new(),
        read_scopes: Vec::new(),
    }
}

async fn count(pool: &motor_store::Pool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_identical_concurrent_sends_make_one_command_through_the_group_commit() {
    let pool = db().await;
    let acme = app(&pool, "Acme").await;
    let a = instances::create(&pool, acme.id, "a").await.unwrap();
    let acceptor = Acceptor::start(pool.clone(), None);
    let barrier = Arc::new(Barrier::new(50));
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (acceptor, barrier) = (acceptor.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            let content = json!({"texto": "hola"});
            let raw = RawSend {
                chat: Some("549"),
                content: Some(&content),
                options: RawOptions::default(),
            };
            barrier.wait().await;
            commands::send(
                &acceptor,
                &caller(acme.id),
                a.id,
                Some("evt-1"),
                raw,
                time::now_millis(),
            )
            .await
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap().unwrap());
    }
    assert_eq!(answers.iter().filter(|s| s.created).count(), 1);
    let id = answers[0].command.id;
    assert!(answers.iter().all(|s| s.command.id == id));
    assert_eq!(count(&pool, "SELECT count(*) FROM commands").await, 1);
    assert_eq!(count(&pool, "SELECT count(*) FROM events").await, 1);
    assert_eq!(
        count(
            &pool,
            "SELECT count(*) FROM outbox WHERE topic = 'commands'"
        )
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sends_each_get_their_own_answer_and_the_ledger_stays_gapless() {
    let pool = db().await;
    let acme = app(&pool, "Acme").await;
    let a = instances::create(&pool, acme.id, "a").await.unwrap();
    let b = instances::create(&pool, acme.id, "b").await.unwrap();
    let acceptor = Acceptor::start(pool.clone(), None);
    // Key `n` twice: 40 first uses, then 40 repeats (half of them with
    // another text: a conflict), all at once over two instances.
    let mut tasks = Vec::new();
    for n in 0..80 {
        let acceptor = acceptor.clone();
        let instance = if n % 2 == 0 { a.id } else { b.id };
        let text = if n >= 40 && n % 4 >= 2 {
            "otro"
        } else {
            "hola"
        };
        tasks.push(tokio::spawn(async move {
            let content = json!({ "texto": text });
            let raw = RawSend {
                chat: Some("549"),
                content: Some(&content),
                options: RawOptions::default(),
            };
            let key = format!("k{}", n % 40);
            let answer = commands::send(
                &acceptor,
                &caller(acme.id),
                instance,
                Some(&key),
                raw,
                time::now_millis(),
            )
            .await;
            (key, text, answer)
        }));
    }
    let mut by_key: std::collections::HashMap<String, Vec<_>> = Default::default();
    for task in tasks {
        let (key, text, answer) = task.await.unwrap();
        by_key.entry(key).or_default().push((text, answer));
    }
    assert_eq!(by_key.len(), 40);
    for (key, answers) in &by_key {
        // Whichever came first stored; the other repeats it, or conflicts
        // when it asked for something else.
        let stored: Vec<_> = answers
            .iter()
            .filter_map(|(text, a)| match a {
                Ok(s) if s.created => Some((*text, s.command.id)),
                _ => None,
            })
            .collect();
        assert_eq!(stored.len(), 1, "{key}: {answers:?}");
        let (stored_text, id) = stored[0];
        for (text, answer) in answers {
            match answer {
                Ok(s) => {
                    assert_eq!(s.command.id, id, "{key}");
                    assert_eq!(*text, stored_text, "{key}");
                }
                Err(AppError::Conflict(_)) => assert_ne!(*text, stored_text, "{key}"),
                Err(e) => panic!("{key}: {e:?}"),
            }
        }
    }
    assert_eq!(count(&pool, "SELECT count(*) FROM commands").await, 40);
    for instance in [a.id, b.id] {
        let seqs: Vec<i64> =
            sqlx::query_scalar("SELECT seq FROM events WHERE instance_id = $1 ORDER BY seq")
                .bind(uuid::Uuid::from(instance))
                .fetch_all(&pool)
                .await
                .unwrap();
        assert_eq!(seqs, (1..=20).collect::<Vec<_>>());
        // Each event tells of a command of its instance.
        let told: Vec<Value> = sqlx::query_scalar::<_, String>(
            "SELECT envelope FROM events WHERE instance_id = $1 ORDER BY seq",
        )
        .bind(uuid::Uuid::from(instance))
        .fetch_all(&pool)
        .await
        .unwrap()
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
        assert!(told.iter().all(|e| e["type"] == "command.accepted"));
    }
}
