//! The producer API: gapless seq under contention, source_id dedup,
//! Idempotency-Key, the answer's shape, and bad input that writes nothing.

use std::collections::HashMap;

use motor::serve::Role;
use motor_domain::InstanceId;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::Row;

use crate::util::{Tenant, TestDb, TestMotor};

async fn post(
    m: &TestMotor,
    t: &Tenant,
    instance: InstanceId,
    body: &Value,
) -> (StatusCode, Value) {
    let res = m
        .http
        .post(m.url(&format!("/v1/instances/{instance}/events")))
        .bearer_auth(&t.token)
        .json(body)
        .send()
        .await
        .unwrap();
    (res.status(), res.json().await.unwrap())
}

/// seq per instance, in seq order, straight from the ledger table.
async fn seqs(m: &TestMotor, instance: InstanceId) -> Vec<i64> {
    sqlx::query("SELECT seq FROM events WHERE instance_id = $1 ORDER BY seq")
        .bind(uuid::Uuid::from(instance))
        .fetch_all(&m.db.pool)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get("seq"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seq_is_gapless_under_contention() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(4).await;
    const WRITERS: usize = 16;
    const EVENTS: usize = 500;

    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let http = m.http.clone();
        let url = m.url("");
        let token = t.token.clone();
        let instances = t.instances.clone();
        tasks.push(tokio::spawn(async move {
            // Each writer sends 500 events: singles and batches of 1..=25,
            // spread over the 4 instances. Every 5th event repeats a
            // source_id of the writer's own (the provider redelivering).
            let mut sent = 0;
            let mut round = 0;
            let mut new_sources: HashMap<InstanceId, usize> = HashMap::new();
            let mut seen = std::collections::HashSet::new();
            while sent < EVENTS {
                let instance = instances[(w + round) % instances.len()];
                let size = if round % 3 == 0 { 1 } else { (round % 25) + 1 }.min(EVENTS - sent);
                let events: Vec<Value> = (0..size)
                    .map(|i| {
                        let n = sent + i;
                        let source = if n % 5 == 4 { n - 1 } else { n };
                        if seen.insert((instance, source)) {
                            *new_sources.entry(instance).or_default() += 1;
                        }
                        json!({"type": "message.sent", "data": {"w": w, "n": n},
                               "source_id": format!("w{w}-i{instance}-{source}")})
                    })
                    .collect();
                let body = if size == 1 {
                    events[0].clone()
                } else {
                    Value::Array(events)
                };
                let res = http
                    .post(format!("{url}/v1/instances/{instance}/events"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                assert!(res.status().is_success(), "{}", res.text().await.unwrap());
                sent += size;
                round += 1;
            }
            new_sources
        }));
    }
    let mut expected: HashMap<InstanceId, usize> = HashMap::new();
    for task in tasks {
        for (instance, n) in task.await.unwrap() {
            *expected.entry(instance).or_default() += n;
        }
    }
    let mut total = 0;
    for instance in &t.instances {
        let seqs = seqs(&m, *instance).await;
        let n = expected[instance];
        assert_eq!(seqs.len(), n, "instance {instance}: one seq per new event");
        let gapless = seqs.iter().enumerate().all(|(i, seq)| *seq == i as i64 + 1);
        assert!(gapless, "instance {instance}: seq is not 1..={n}");
        total += n;
    }
    // Some events repeated a source_id (within one batch or across
    // requests) and consumed no number.
    assert!(
        total < WRITERS * EVENTS,
        "the test must exercise duplicates"
    );
    m.stop().await;
}

/// Group commit: concurrent requests to one process share transactions
/// (their events carry one transaction id), and each request is answered
/// with its own envelope — the one the ledger holds for its event.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_share_commits_and_each_gets_its_own_answer() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(8).await;
    const REQUESTS: usize = 400;
    const SENDERS: usize = 64;

    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..SENDERS {
        let (http, url, token) = (m.http.clone(), m.url(""), t.token.clone());
        let (instances, next) = (t.instances.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= REQUESTS {
                    return answers;
                }
                let instance = instances[n % instances.len()];
                let res = http
                    .post(format!("{url}/v1/instances/{instance}/events"))
                    .bearer_auth(&token)
                    .json(&json!({"type": "message.sent", "data": {"n": n}}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), StatusCode::CREATED);
                answers.push((n, instance, res.text().await.unwrap()));
            }
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.extend(task.await.unwrap());
    }
    assert_eq!(answers.len(), REQUESTS);
    for (n, instance, body) in &answers {
        let envelope: Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            envelope["data"]["n"],
            json!(n),
            "a request got another's answer"
        );
        assert_eq!(envelope["instance_id"], json!(instance));
        let stored: String =
            sqlx::query_scalar("SELECT envelope FROM events WHERE instance_id = $1 AND seq = $2")
                .bind(uuid::Uuid::from(*instance))
                .bind(envelope["seq"].as_i64().unwrap())
                .fetch_one(&m.db.pool)
                .await
                .unwrap();
        assert_eq!(&stored, body, "the answer is the stored envelope");
    }
    for instance in &t.instances {
        let seqs = seqs(&m, *instance).await;
        assert_eq!(seqs, (1..=(REQUESTS / 8) as i64).collect::<Vec<_>>());
    }
    let transactions: i64 = sqlx::query_scalar("SELECT count(DISTINCT xmin::text) FROM events")
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert!(
        transactions < REQUESTS as i64,
        "{transactions} transactions for {REQUESTS} concurrent requests: none shared a commit"
    );
    m.stop().await;
}

/// `MOTOR_INTAKE_PACE_MS`: requests that come within the pace after a
/// commit began wait for it, and share the next commit; the first, with
/// no commit before it, goes at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_within_the_intake_pace_wait_for_it_and_share_a_commit() {
    const PACE_MS: u64 = 1_500;
    let m = TestMotor::start_configured(TestDb::new().await, &[Role::Api], |c| {
        c.intake_pace_ms = PACE_MS;
    })
    .await;
    let t = m.tenant(2).await;
    let event = |n: i32| json!({"type": "message.sent", "data": {"n": n}});
    let xmin = |instance: InstanceId, seq: i64| {
        let pool = m.db.pool.clone();
        async move {
            sqlx::query_scalar::<_, String>(
                "SELECT xmin::text FROM events WHERE instance_id = $1 AND seq = $2",
            )
            .bind(uuid::Uuid::from(instance))
            .bind(seq)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };

    let first = std::time::Instant::now();
    let (status, _) = post(&m, &t, t.instances[0], &event(0)).await;
    assert_eq!(status, StatusCode::CREATED);
    let (one, two) = (event(1), event(2));
    let (second, third) = tokio::join!(
        post(&m, &t, t.instances[0], &one),
        post(&m, &t, t.instances[1], &two),
    );
    let waited = first.elapsed();
    assert_eq!(
        (second.0, third.0),
        (StatusCode::CREATED, StatusCode::CREATED)
    );
    assert!(
        waited >= std::time::Duration::from_millis(PACE_MS - 200),
        "two requests right after a commit were answered {waited:?} after it, within the pace"
    );
    let (a, b, c) = (
        xmin(t.instances[0], 1).await,
        xmin(t.instances[0], 2).await,
        xmin(t.instances[1], 1).await,
    );
    assert_eq!(b, c, "the two paced requests share a commit");
    assert_ne!(a, b, "the first went alone");
    m.stop().await;
}

#[tokio::test]
async fn object_in_object_out_array_in_array_out() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];

    let (status, one) = post(
        &m,
        &t,
        i,
        &json!({"type": "a", "data": {"k": [1, 2]},
        "occurred_at": "2026-10-24T17:10:01+02:00", "origin": "history", "command_id": "c-1"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(one["seq"], 1);
    assert_eq!(one["schema_version"], 1);
    assert_eq!(one["type"], "a");
    assert_eq!(one["origin"], "history");
    assert_eq!(one["command_id"], "c-1");
    assert_eq!(one["occurred_at"], "2026-10-24T15:10:01Z");
    assert_eq!(one["generation"], 1);
    assert_eq!(one["instance_id"], i.to_string());
    assert_eq!(one["data"], json!({"k": [1, 2]}));

    let (status, many) = post(
        &m,
        &t,
        i,
        &json!([{"type": "b", "data": 1}, {"type": "c", "data": 2}]),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let many = many.as_array().unwrap();
    assert_eq!(
        many.iter()
            .map(|e| e["seq"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [2, 3]
    );
    assert_eq!(
        many.iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["b", "c"]
    );
    assert_eq!(many[0]["origin"], "live");
    assert!(many[0].get("command_id").is_none());
    m.stop().await;
}

#[tokio::test]
async fn known_source_id_returns_the_stored_event_and_burns_no_seq() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let (a, b) = (t.instances[0], t.instances[1]);

    let (status, first) = post(
        &m,
        &t,
        a,
        &json!({"type": "x", "data": 1, "source_id": "wamid.1"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, again) = post(
        &m,
        &t,
        a,
        &json!({"type": "x", "data": 2, "source_id": "wamid.1"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "nothing new stored");
    assert_eq!(again, first);

    // A batch mixing known, new and repeated-within-the-batch sources.
    let (status, batch) = post(
        &m,
        &t,
        a,
        &json!([
            {"type": "x", "data": 3, "source_id": "wamid.1"},
            {"type": "x", "data": 4, "source_id": "wamid.2"},
            {"type": "x", "data": 5, "source_id": "wamid.2"},
            {"type": "x", "data": 6}
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let seqs: Vec<i64> = batch
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 2, 3]);
    assert_eq!(batch[0], first);
    assert_eq!(batch[1], batch[2]);
    assert_eq!(seqs_of(&m, a).await, [1, 2, 3]);

    // source_id is per instance.
    let (status, other) = post(
        &m,
        &t,
        b,
        &json!({"type": "x", "data": 1, "source_id": "wamid.1"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(other["seq"], 1);
    assert_ne!(other["event_id"], first["event_id"]);
    m.stop().await;
}

async fn seqs_of(m: &TestMotor, instance: InstanceId) -> Vec<i64> {
    seqs(m, instance).await
}

#[tokio::test]
async fn idempotency_key_replays_the_first_answer_and_refuses_another_body() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(2).await;
    let i = t.instances[0];
    let send = |instance: InstanceId, key: &'static str, body: Value| {
        let req = m
            .http
            .post(m.url(&format!("/v1/instances/{instance}/events")))
            .bearer_auth(&t.token)
            .header("Idempotency-Key", key)
            .json(&body);
        async move {
            let res = req.send().await.unwrap();
            (res.status(), res.text().await.unwrap())
        }
    };
    let body = json!([{"type": "a", "data": 1}, {"type": "b", "data": 2}]);
    let (s1, first) = send(i, "k-1", body.clone()).await;
    assert_eq!(s1, StatusCode::CREATED);
    let (s2, second) = send(i, "k-1", body.clone()).await;
    assert_eq!(s2, StatusCode::CREATED);
    assert_eq!(second, first, "the same bytes as the first answer");
    assert_eq!(seqs(&m, i).await, [1, 2], "nothing stored twice");

    let (s3, conflict) = send(i, "k-1", json!({"type": "a", "data": 1})).await;
    assert_eq!(s3, StatusCode::CONFLICT);
    assert_eq!(
        serde_json::from_str::<Value>(&conflict).unwrap()["error"]["code"],
        "conflicto"
    );

    // Keys are per instance.
    let (s4, _) = send(t.instances[1], "k-1", json!({"type": "z", "data": 0})).await;
    assert_eq!(s4, StatusCode::CREATED);

    let res = m
        .http
        .post(m.url(&format!("/v1/instances/{i}/events")))
        .bearer_auth(&t.token)
        .header("Idempotency-Key", "k".repeat(201))
        .json(&json!({"type": "a", "data": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let err: Value = res.json().await.unwrap();
    assert_eq!(err["error"]["campo"], "header.Idempotency-Key");
    m.stop().await;
}

#[tokio::test]
async fn bad_input_names_the_field_and_writes_nothing() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    let ok = json!({"type": "t", "data": 1});

    let cases: Vec<(Value, StatusCode, &str)> = vec![
        (
            json!({"data": 1}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.type",
        ),
        (
            json!({"type": "", "data": 1}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.type",
        ),
        (
            json!({"type": "t".repeat(201), "data": 1}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.type",
        ),
        (
            json!({"type": 7, "data": 1}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.type",
        ),
        (
            json!({"type": "t"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.data",
        ),
        (
            json!({"type": "t", "data": "x".repeat(256 * 1024)}),
            StatusCode::PAYLOAD_TOO_LARGE,
            "body.data",
        ),
        (
            json!({"type": "t", "data": 1, "origin": "elsewhere"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.origin",
        ),
        (
            json!({"type": "t", "data": 1, "occurred_at": "yesterday"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.occurred_at",
        ),
        (
            json!({"type": "t", "data": 1, "colour": "red"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.colour",
        ),
        (
            json!([ok, ok, {"type": "t", "data": 1, "source_id": 5}]),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body[2].source_id",
        ),
        (
            Value::Array(vec![ok.clone(); 501]),
            StatusCode::PAYLOAD_TOO_LARGE,
            "body",
        ),
        (json!([]), StatusCode::UNPROCESSABLE_ENTITY, "body"),
        // Postgres text cannot hold NUL: a 422, not a 500.
        (
            json!({"type": "t", "data": 1, "source_id": "a\u{0}b"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.source_id",
        ),
        (
            json!({"type": "t", "data": 1, "command_id": "\u{0}"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body.command_id",
        ),
        (
            json!("just a string"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body",
        ),
    ];
    for (body, status, field) in cases {
        let (got, err) = post(&m, &t, i, &body).await;
        assert_eq!(
            (got, err["error"]["campo"].as_str()),
            (status, Some(field)),
            "{err}"
        );
        assert!(err["error"]["code"].is_string() && err["error"]["message"].is_string());
    }

    let res = m
        .http
        .post(m.url(&format!("/v1/instances/{i}/events")))
        .bearer_auth(&t.token)
        .header("content-type", "application/json")
        .body("{\"type\": \"t\", ")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let err: Value = res.json().await.unwrap();
    assert_eq!(err["error"]["code"], "json_invalido");

    // A full batch of 500 is fine, and only now does anything exist.
    assert!(
        seqs(&m, i).await.is_empty(),
        "rejected requests wrote nothing"
    );
    let (status, _) = post(&m, &t, i, &Value::Array(vec![ok.clone(); 500])).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(seqs(&m, i).await.len(), 500);
    let pending = motor_store::outbox::pending(&m.db.pool).await.unwrap();
    assert_eq!(pending, 500, "one outbox record per new event");

    // Unknown instance: 404, for a well-formed id and for garbage.
    let (status, err) = post(&m, &t, InstanceId::new(), &ok).await;
    assert_eq!(
        (status, err["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("no_encontrado"))
    );
    let res = m
        .http
        .post(m.url("/v1/instances/nope/events"))
        .bearer_auth(&t.token)
        .json(&ok)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    m.stop().await;
}

#[tokio::test]
async fn library_append_commits_with_the_callers_transaction() {
    let db = crate::util::TestDb::new().await;
    let t = Tenant::create(&db.pool, 1).await;
    let i = t.instances[0];
    let events =
        vec![motor_domain::NewEvent::parse(&json!({"type": "lib", "data": {}}), "e").unwrap()];

    // Rolled back: nothing, and the seq is not consumed.
    let mut tx = db.pool.begin().await.unwrap();
    let appended = motor_store::ledger::append(&mut tx, i, &events)
        .await
        .unwrap();
    assert_eq!(appended.stored, 1);
    tx.rollback().await.unwrap();

    let mut tx = db.pool.begin().await.unwrap();
    sqlx::query("CREATE TABLE producer_own (n int)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let appended = motor_store::ledger::append(&mut tx, i, &events)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let envelope: Value = serde_json::from_str(&appended.envelopes[0]).unwrap();
    assert_eq!(
        envelope["seq"], 1,
        "the rolled-back append burned no number"
    );
    assert_eq!(motor_store::outbox::pending(&db.pool).await.unwrap(), 1);
}

#[tokio::test]
async fn health_readiness_and_metrics() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    for path in ["/healthz", "/readyz"] {
        let res = m.http.get(m.url(path)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        assert_eq!(res.json::<Value>().await.unwrap()["status"], "ok");
    }
    let body = json!([{"type": "a", "data": 1, "source_id": "s"}, {"type": "a", "data": 1, "source_id": "s"}, {"type": "b", "data": 2}]);
    let (status, _) = post(&m, &t, t.instances[0], &body).await;
    assert_eq!(status, StatusCode::CREATED);
    let metrics = m.metrics().await;
    assert!(
        metrics.contains("motor_events_stored_total 2\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("motor_events_duplicate_total 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("motor_ingest_requests_total 1\n"),
        "{metrics}"
    );
    m.stop().await;
}
