//! Asixto's environments (`entorno`) end to end: a `live` and a `test`
//! subscription of one app, each with a receiver written from seed 003
//! (`asixto_receiver.py`), never see each other's events — live, replayed
//! or the `/test` probe — and every Asixto body says its environment; bad
//! names are refused naming the field. And the door's 4 KB metadata cap
//! under `asixto`.

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{secret, sub_id, Receiver};
use crate::{
    deliveries::post,
    dispatch::wait_state,
    replays::replay_ok,
    subscriptions::{assert_field, call, create, create_ok},
    util::{Tenant, TestMotor, ADMIN_TOKEN},
};

async fn asixto_app(m: &TestMotor, t: &Tenant) {
    let (status, app) = call(
        m,
        Method::PATCH,
        &format!("/v1/admin/apps/{}", t.app),
        ADMIN_TOKEN,
        Some(json!({"contrato": "asixto"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{app}");
}

/// The `entorno` column of the events with these ids.
async fn stored_environments(m: &TestMotor, ids: &[String]) -> BTreeSet<String> {
    let ids: Vec<Uuid> = ids.iter().map(|i| i.parse().unwrap()).collect();
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT DISTINCT entorno FROM events WHERE event_id = ANY ($1)")
            .bind(&ids)
            .fetch_all(&m.db.pool)
            .await
            .unwrap();
    rows.into_iter().map(|(e,)| e).collect()
}

fn event_ids(answer: &Value) -> Vec<String> {
    answer
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn environments_never_cross() {
    let m = crate::dispatch::motor(None).await;
    let t = m.tenant(1).await;
    asixto_app(&m, &t).await;
    let instance = t.instances[0];

    // Subscriptions: `live` by default (left out of the answer), `test`
    // when named; nothing else.
    let live_r = Receiver::start("asixto_receiver.py");
    let test_r = Receiver::start("asixto_receiver.py");
    let live = create_ok(&m, &t, json!({"url": live_r.url()})).await;
    assert!(live["suscripcion"].get("entorno").is_none(), "{live}");
    let test = create_ok(&m, &t, json!({"url": test_r.url(), "entorno": "test"})).await;
    assert_eq!(test["suscripcion"]["entorno"], "test");
    let (live_sub, test_sub) = (sub_id(&live), sub_id(&test));
    live_r
        .control(
            "/_secretos",
            json!({"secretos": [secret(&live["secreto"])]}),
        )
        .await;
    test_r
        .control(
            "/_secretos",
            json!({"secretos": [secret(&test["secreto"])]}),
        )
        .await;
    for bad in [json!("prod"), json!("Live"), json!(""), json!(1)] {
        assert_field(
            &create(
                &m,
                &t.token,
                json!({"nombre": "n", "url": "http://127.0.0.1:9/hook", "entorno": bad}),
            )
            .await,
            "body.entorno",
        );
    }
    // Fixed at creation: its own is accepted, the other refused.
    let path = format!("/v1/subscriptions/{test_sub}");
    let (status, same) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"entorno": "test"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{same}");
    assert_eq!(same["entorno"], "test");
    assert_field(
        &call(
            &m,
            Method::PATCH,
            &path,
            &t.token,
            Some(json!({"entorno": "live"})),
        )
        .await,
        "body.entorno",
    );

    // Events: 6 live (by default or by name), 4 test, interleaved in one
    // batch and alone; a bad name is refused naming the field.
    let mixed: Vec<Value> = (0..8)
        .map(|i| {
            let mut e = json!({"type": "job.succeeded", "data": {"i": i}});
            match i % 3 {
                0 => e["entorno"] = json!("test"),
                1 => e["entorno"] = json!("live"),
                _ => {}
            }
            e
        })
        .collect();
    let batch = post(&m, &t, instance, Value::Array(mixed)).await;
    let one_test = post(
        &m,
        &t,
        instance,
        json!({"type": "job.succeeded", "data": {"i": 8}, "entorno": "test"}),
    )
    .await;
    let one_live = post(
        &m,
        &t,
        instance,
        json!({"type": "job.succeeded", "data": {"i": 9}}),
    )
    .await;
    let ids = event_ids(&batch);
    let test_ids: Vec<String> = [0, 3, 6]
        .iter()
        .map(|i| ids[*i].clone())
        .chain([one_test["event_id"].as_str().unwrap().to_owned()])
        .collect();
    let live_ids: Vec<String> = [1, 2, 4, 5, 7]
        .iter()
        .map(|i| ids[*i].clone())
        .chain([one_live["event_id"].as_str().unwrap().to_owned()])
        .collect();
    // Kept in the ledger; Motor's envelope is unchanged.
    assert_eq!(
        stored_environments(&m, &test_ids).await,
        ["test".to_owned()].into()
    );
    assert_eq!(
        stored_environments(&m, &live_ids).await,
        ["live".to_owned()].into()
    );
    assert!(batch[0].get("entorno").is_none(), "{}", batch[0]);
    let events_path = format!("/v1/instances/{instance}/events");
    for (bad, field) in [
        (
            json!({"type": "t", "data": {}, "entorno": "prod"}),
            "body.entorno",
        ),
        (json!({"type": "t", "data": {}, "entorno": null}), ""),
        (
            json!([{"type": "t", "data": {}}, {"type": "t", "data": {}, "entorno": "TEST"}]),
            "body[1].entorno",
        ),
        (
            json!({"type": "t", "data": {}, "entorno": true}),
            "body.entorno",
        ),
    ] {
        let answer = call(&m, Method::POST, &events_path, &t.token, Some(bad)).await;
        if field.is_empty() {
            // null is absent: live (one more for the live receiver).
            assert_eq!(answer.0, StatusCode::CREATED, "{}", answer.1);
        } else {
            assert_field(&answer, field);
        }
    }

    // Each receiver takes exactly its environment's events.
    let live_log = live_r.wait_accepted(live_ids.len() + 1).await;
    let test_log = test_r.wait_accepted(test_ids.len()).await;
    wait_state(&m, live_sub, "entregada", live_ids.len() as i64 + 1).await;
    wait_state(&m, test_sub, "entregada", test_ids.len() as i64).await;
    let got = |log: &Value, env: &str| -> BTreeSet<String> {
        log["aceptadas"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                assert_eq!(e["environment"], env, "{e}");
                e["id"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let live_got = got(&live_log, "live");
    assert!(live_got.is_superset(&live_ids.iter().cloned().collect()));
    assert_eq!(live_got.len(), live_ids.len() + 1);
    assert_eq!(got(&test_log, "test"), test_ids.iter().cloned().collect());

    // A replay of the whole range covers only the subscription's
    // environment: the test subscription gets its 4 again, new ids with
    // replay_of, and the live one nothing.
    let last = one_live["seq"].as_i64().unwrap();
    let replay = replay_ok(
        &m,
        &t,
        test_sub,
        json!({"instancia_id": instance, "desde_seq": 1, "hasta_seq": last,
               "motivo": "environments"}),
    )
    .await;
    assert_eq!(replay["entregas"], test_ids.len(), "{replay}");
    let test_log = test_r.wait_accepted(2 * test_ids.len()).await;
    wait_state(&m, test_sub, "entregada", 2 * test_ids.len() as i64).await;
    let replayed: BTreeSet<String> = test_log["aceptadas"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            assert_eq!(e["environment"], "test", "{e}");
            e.get("replay_of").map(|o| o.as_str().unwrap().to_owned())
        })
        .collect();
    assert_eq!(replayed, test_ids.iter().cloned().collect());
    // Events named by id: those of the other environment are skipped.
    let replay = replay_ok(
        &m,
        &t,
        live_sub,
        json!({"event_ids": [test_ids[0], live_ids[0]], "motivo": "by id"}),
    )
    .await;
    assert_eq!(replay["entregas"], 1, "{replay}");
    let live_log = live_r.wait_accepted(live_ids.len() + 2).await;
    let replays: Vec<&Value> = live_log["aceptadas"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.get("replay_of").is_some())
        .collect();
    assert_eq!(replays.len(), 1);
    assert_eq!(replays[0]["replay_of"], live_ids[0].as_str());
    assert_eq!(replays[0]["environment"], "live");

    // The `/test` probe speaks the subscription's environment.
    let (status, probe) = call(
        &m,
        Method::POST,
        &format!("/v1/subscriptions/{test_sub}/test"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{probe}");
    let test_log = test_r.log().await;
    for e in test_log["aceptadas"].as_array().unwrap() {
        assert_eq!(e["environment"], "test", "{e}");
    }
    // Nothing of one environment reached the other's subscription.
    let crossed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM deliveries d JOIN events e ON e.event_id = d.event_id
         JOIN subscriptions s ON s.id = d.subscription_id WHERE e.entorno <> s.entorno",
    )
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(crossed, 0);
    m.stop().await;
}

/// Seed 003: "su metadata está acotado en 4 KB en la puerta" — under an
/// `asixto` app a `metadata` over 4,096 bytes of JSON is a 422 naming it,
/// even when the body cap would have dropped it; one that fits is kept,
/// and dropped with `metadata_omitted` only when the body would pass
/// 256 KB. A `motor` app has no cap of its own.
#[tokio::test]
async fn asixto_caps_metadata_at_four_kb_at_the_door() {
    let m = TestMotor::start(&[motor::serve::Role::Api]).await;
    let t = m.tenant(1).await;
    let path = format!("/v1/instances/{}/events", t.instances[0]);
    // `{"a":"…"}` is 8 bytes around the string.
    let metadata = |bytes: usize| json!({"a": "x".repeat(bytes - 8)});
    let send = |body: Value| call(&m, Method::POST, &path, &t.token, Some(body));

    // motor: 10 KB of metadata is fine.
    let (status, _) = send(json!({"type": "job.succeeded",
                                  "data": {"metadata": metadata(10_000)}}))
    .await;
    assert_eq!(status, StatusCode::CREATED);

    asixto_app(&m, &t).await;
    let (status, stored) = send(json!({"type": "job.succeeded",
                                       "data": {"metadata": metadata(4096)}}))
    .await;
    assert_eq!(status, StatusCode::CREATED, "{stored}");
    assert_eq!(stored["data"]["metadata"], metadata(4096));
    assert_field(
        &send(json!({"type": "job.succeeded", "data": {"metadata": metadata(4097)}})).await,
        "body.data.metadata",
    );
    assert_field(
        &send(
            json!([{"type": "job.succeeded", "data": {"metadata": metadata(10)}},
                     {"type": "job.succeeded", "data": {"metadata": metadata(5000)}}]),
        )
        .await,
        "body[1].data.metadata",
    );
    // A result that fills the body: a small metadata is dropped with
    // metadata_omitted; an oversized one is still refused first.
    let result = "r".repeat(256 * 1024 - 1000);
    let (status, stored) = send(json!({"type": "job.succeeded",
                                       "data": {"result": result, "metadata": metadata(2000)}}))
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(stored["data"]["metadata_omitted"], true);
    assert!(stored["data"].get("metadata").is_none());
    assert_field(
        &send(json!({"type": "job.succeeded",
                     "data": {"result": result, "metadata": metadata(5000)}}))
        .await,
        "body.data.metadata",
    );
    m.stop().await;
}
