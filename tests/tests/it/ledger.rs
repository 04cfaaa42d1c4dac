//! `GET /v1/instances/{id}/events`: pages by after_seq and limit, filters
//! by types, answers next_after_seq and has_more, and refuses bad queries
//! naming the parameter.

use motor::serve::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::util::TestMotor;

#[tokio::test]
async fn pages_through_the_ledger() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    let events: Vec<Value> = (0..25)
        .map(|n| json!({"type": if n % 5 == 0 { "state.changed" } else { "message.sent" }, "data": {"n": n}}))
        .collect();
    let res = m
        .http
        .post(m.url(&format!("/v1/instances/{i}/events")))
        .bearer_auth(&t.token)
        .json(&events)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);

    let get = |query: String| {
        let req = m
            .http
            .get(m.url(&format!("/v1/instances/{i}/events{query}")))
            .bearer_auth(&t.token);
        async move {
            let res = req.send().await.unwrap();
            (res.status(), res.json::<Value>().await.unwrap())
        }
    };

    // Default limit 100: everything, no more.
    let (status, page) = get(String::new()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["events"].as_array().unwrap().len(), 25);
    assert_eq!(
        (page["next_after_seq"].as_i64(), page["has_more"].as_bool()),
        (Some(25), Some(false))
    );

    // Walk in pages of 10 as the docs' client loop does.
    let mut after = 0;
    let mut seen = Vec::new();
    loop {
        let (_, page) = get(format!("?after_seq={after}&limit=10")).await;
        for e in page["events"].as_array().unwrap() {
            seen.push(e["seq"].as_i64().unwrap());
            assert_eq!(
                e["data"]["n"].as_i64().unwrap() + 1,
                e["seq"].as_i64().unwrap()
            );
        }
        after = page["next_after_seq"].as_i64().unwrap();
        if !page["has_more"].as_bool().unwrap() {
            break;
        }
    }
    assert_eq!(seen, (1..=25).collect::<Vec<_>>());

    // Types filter: gaps in seq are the other types.
    let (_, page) = get("?types=state.changed&limit=3".into()).await;
    let seqs: Vec<i64> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 6, 11]);
    assert_eq!(
        (page["next_after_seq"].as_i64(), page["has_more"].as_bool()),
        (Some(11), Some(true))
    );
    let (_, page) = get("?types=state.changed,message.sent&after_seq=23".into()).await;
    assert_eq!(page["events"].as_array().unwrap().len(), 2);

    // Past the end: empty page, the cursor stays.
    let (_, page) = get("?after_seq=25".into()).await;
    assert_eq!(
        page,
        json!({"events": [], "next_after_seq": 25, "has_more": false})
    );
    m.stop().await;
}

/// A 64 KB event is TOASTed with lz4 (migration 0023) in the ledger, and
/// only there: its outbox record names it by seq and holds no copy
/// (migration 0028). The ledger serves it byte for byte.
#[tokio::test]
async fn a_large_event_is_stored_once_with_lz4_and_served_whole() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    // Compressible but not trivial: numbered words.
    let text: String = (0..12_000).map(|n| format!("w{n} ")).collect();
    assert!(text.len() > 64 * 1024);
    let res = m
        .http
        .post(m.url(&format!("/v1/instances/{i}/events")))
        .bearer_auth(&t.token)
        .json(&json!({"type": "message.sent", "data": {"texto": text}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);

    let (ledger, payload, event_seq): (Option<String>, Option<Vec<u8>>, Option<i64>) =
        sqlx::query_as(
            "SELECT (SELECT pg_column_compression(envelope) FROM events WHERE instance_id = $1),
                    o.payload, o.event_seq
             FROM outbox o WHERE o.key = $1::text AND o.topic = 'events'",
        )
        .bind(uuid::Uuid::from(i))
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
    assert_eq!(
        (ledger.as_deref(), payload, event_seq),
        (Some("lz4"), None, Some(1))
    );

    let page: Value = m
        .http
        .get(m.url(&format!("/v1/instances/{i}/events")))
        .bearer_auth(&t.token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        page["events"][0]["data"]["texto"].as_str(),
        Some(text.as_str())
    );
    m.stop().await;
}

#[tokio::test]
async fn bad_queries_name_the_parameter() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let i = t.instances[0];
    let twenty_one = vec!["t"; 21].join(",");
    let cases = [
        ("?limit=0", "query.limit"),
        ("?limit=501", "query.limit"),
        ("?limit=diez", "query.limit"),
        ("?after_seq=-1", "query.after_seq"),
        ("?after_seq=x", "query.after_seq"),
        (&*format!("?types={twenty_one}"), "query.types"),
        ("?types=a,,b", "query.types"),
    ];
    for (query, field) in cases {
        let res = m
            .http
            .get(m.url(&format!("/v1/instances/{i}/events{query}")))
            .bearer_auth(&t.token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{query}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["campo"], field, "{query}");
    }
    for ok in [
        "?limit=1",
        "?limit=500",
        &format!("?types={}", vec!["t"; 20].join(",")),
    ] {
        let res = m
            .http
            .get(m.url(&format!("/v1/instances/{i}/events{ok}")))
            .bearer_auth(&t.token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{ok}");
    }
    m.stop().await;
}
