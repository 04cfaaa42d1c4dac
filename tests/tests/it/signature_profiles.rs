//! Signing profiles (`firma`): chosen on create and PATCH, shown in every
//! subscription answer, refused by name when unknown, and used by
//! `POST /v1/subscriptions/{id}/test` — whose real request the
//! `motor-receiver` crate, the Standard Webhooks library and the public
//! docs' own verifiers accept. Deliveries under each profile, end to end,
//! are in `dispatch/profiles.rs`.

pub mod interop;

use std::{
    sync::{Arc, Mutex},
    time::SystemTime,
};

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode as AxumStatus},
    routing::post,
    Router,
};
use motor::serve::Role;
use motor_domain::signature::SigningProfile;
use motor_receiver::{Profile, Secret, VerifyError};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use self::interop::{assert_accepted, Shown};
use crate::{
    subscriptions::{assert_field, call, create, create_ok},
    util::{TestMotor, ADMIN_TOKEN},
};

fn receiver_profile(p: SigningProfile) -> Profile {
    Profile::parse(p.as_str()).unwrap()
}

#[tokio::test]
async fn signature_is_chosen_on_create_and_patch_and_shown_in_every_answer() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;

    // The default, and each profile by its wire spelling.
    let default = create_ok(&m, &t, json!({})).await;
    assert_eq!(default["suscripcion"]["firma"], "mw-v1");
    let mut ids = vec![(
        default["suscripcion"]["id"].as_str().unwrap().to_owned(),
        "mw-v1",
    )];
    for p in SigningProfile::ALL {
        let created = create_ok(&m, &t, json!({"firma": p.as_str()})).await;
        assert_eq!(created["suscripcion"]["firma"], p.as_str(), "{created}");
        ids.push((
            created["suscripcion"]["id"].as_str().unwrap().to_owned(),
            p.as_str(),
        ));
    }
    // GET, the list and the operator's routes show it.
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", &t.token, None).await;
    let listed: Vec<(String, String)> = list["suscripciones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_owned(),
                s["firma"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = ids
        .iter()
        .map(|(id, f)| (id.clone(), f.to_string()))
        .collect();
    assert_eq!(listed, expected);
    for (id, firma) in &ids {
        let (_, got) = call(
            &m,
            Method::GET,
            &format!("/v1/subscriptions/{id}"),
            &t.token,
            None,
        )
        .await;
        assert_eq!(got["firma"], *firma);
        let (_, got) = call(
            &m,
            Method::GET,
            &format!("/v1/admin/apps/{}/subscriptions/{id}", t.app),
            ADMIN_TOKEN,
            None,
        )
        .await;
        assert_eq!(got["firma"], *firma);
    }

    // Anything but the three spellings is a 422 naming body.firma, and
    // stores nothing.
    let bad = [
        json!(""),
        json!("MW-V1"),
        json!("mw_v1"),
        json!("t-v1 "),
        json!("standard_webhooks"),
        json!("hmac-sha256"),
        json!(5),
        json!(true),
        json!(["t-v1"]),
        json!({"perfil": "t-v1"}),
    ];
    for firma in &bad {
        assert_field(
            &create(
                &m,
                &t.token,
                json!({"nombre": "n", "url": "http://127.0.0.1:9/hook", "firma": firma}),
            )
            .await,
            "body.firma",
        );
    }
    let (_, list) = call(&m, Method::GET, "/v1/subscriptions", &t.token, None).await;
    assert_eq!(list["suscripciones"].as_array().unwrap().len(), ids.len());

    // PATCH changes it and bumps the version like any change; the same
    // value again changes nothing.
    let path = format!("/v1/subscriptions/{}", ids[0].0);
    let (status, s) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"firma": "standard-webhooks", "version_esperada": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{s}");
    assert_eq!(
        (s["firma"].clone(), s["version"].clone()),
        (json!("standard-webhooks"), json!(2))
    );
    let (_, s) = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"firma": "standard-webhooks"})),
    )
    .await;
    assert_eq!(s["version"], 2, "no change, no bump: {s}");
    // A stale version changes nothing, nor does a bad value.
    let stale = call(
        &m,
        Method::PATCH,
        &path,
        &t.token,
        Some(json!({"firma": "t-v1", "version_esperada": 1})),
    )
    .await;
    assert_eq!(stale.0, StatusCode::CONFLICT, "{}", stale.1);
    for firma in &bad {
        assert_field(
            &call(
                &m,
                Method::PATCH,
                &path,
                &t.token,
                Some(json!({"firma": firma})),
            )
            .await,
            "body.firma",
        );
    }
    let (_, s) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(
        (s["firma"].clone(), s["version"].clone()),
        (json!("standard-webhooks"), json!(2))
    );
    // Back to mw-v1 through the operator's route.
    let (status, s) = call(
        &m,
        Method::PATCH,
        &format!("/v1/admin/apps/{}/subscriptions/{}", t.app, ids[0].0),
        ADMIN_TOKEN,
        Some(json!({"firma": "mw-v1"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{s}");
    assert_eq!(
        (s["firma"].clone(), s["version"].clone()),
        (json!("mw-v1"), json!(3))
    );

    // The table itself admits only the three spellings.
    let refused = sqlx::query("UPDATE subscriptions SET firma = 'hmac' WHERE id = $1::uuid")
        .bind(&ids[0].0)
        .execute(&m.db.pool)
        .await
        .unwrap_err();
    assert_eq!(
        refused
            .as_database_error()
            .and_then(|e| e.constraint())
            .map(str::to_owned),
        Some("subscriptions_firma_check".to_owned())
    );
    m.stop().await;
}

/// One request as a receiver got it.
#[derive(Debug, Clone)]
struct Got {
    headers: HeaderMap,
    body: Bytes,
}

type Log = Arc<Mutex<Vec<Got>>>;

async fn hook(State(log): State<Log>, headers: HeaderMap, body: Bytes) -> AxumStatus {
    log.lock().unwrap().push(Got { headers, body });
    AxumStatus::NO_CONTENT
}

async fn receiver() -> (String, Log) {
    let log: Log = Arc::default();
    let app = Router::new()
        .route("/hook", post(hook))
        .with_state(log.clone());
    let addr = crate::util::serve_loopback(app).await;
    (format!("http://{addr}/hook"), log)
}

/// The signature headers each profile sends, and those it must not.
fn assert_profile_headers(profile: SigningProfile, got: &Got, signatures: usize) {
    let h = |name: &str| {
        got.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let envelope: Value = serde_json::from_slice(&got.body).unwrap();
    // Every profile: the contract's common headers.
    assert_eq!(h("content-type").as_deref(), Some("application/json"));
    assert_eq!(h("user-agent").as_deref(), Some("motor-whatsapp/webhooks"));
    assert_eq!(
        h("x-mw-event-id").unwrap(),
        envelope["event_id"].as_str().unwrap()
    );
    let delivery = h("x-mw-delivery-id").unwrap();
    let now = chrono::Utc::now().timestamp();
    let fresh = |ts: &str| {
        let age = now - ts.parse::<i64>().unwrap();
        assert!((0..=30).contains(&age), "timestamp {ts} is {age} s old");
    };
    match profile {
        SigningProfile::MwV1 => {
            fresh(&h("x-mw-timestamp").unwrap());
            assert_eq!(h("x-mw-key-id").unwrap().split(',').count(), signatures);
            let sig = h("x-mw-signature").unwrap();
            assert_eq!(sig.split(',').count(), signatures, "{sig}");
            assert!(sig.split(',').all(|s| s.starts_with("v1=")), "{sig}");
            assert!(h("webhook-signature").is_none());
        }
        SigningProfile::TV1 => {
            let sig = h("x-mw-signature").unwrap();
            let parts: Vec<&str> = sig.split(',').collect();
            assert_eq!(parts.len(), 1 + signatures, "{sig}");
            fresh(parts[0].strip_prefix("t=").unwrap());
            for p in &parts[1..] {
                let hex = p.strip_prefix("v1=").unwrap();
                assert!(
                    hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{sig}"
                );
            }
            assert!(h("x-mw-timestamp").is_none() && h("x-mw-key-id").is_none());
            assert!(h("webhook-signature").is_none());
        }
        SigningProfile::StandardWebhooks => {
            assert_eq!(
                h("webhook-id").unwrap(),
                delivery,
                "webhook-id is the delivery id"
            );
            fresh(&h("webhook-timestamp").unwrap());
            let sig = h("webhook-signature").unwrap();
            assert_eq!(sig.split(' ').count(), signatures, "{sig}");
            assert!(sig.split(' ').all(|s| s.starts_with("v1,")), "{sig}");
            for name in ["x-mw-timestamp", "x-mw-key-id", "x-mw-signature"] {
                assert!(h(name).is_none(), "{name} sent with standard-webhooks");
            }
        }
    }
}

/// Verifies with the receiver crate, as a receiver of `profile` does.
fn crate_verify(profile: SigningProfile, got: &Got, secret: &Shown) -> Result<(), VerifyError> {
    receiver_profile(profile)
        .verify(
            &got.headers,
            &got.body,
            &[Secret::new(&secret.valor)],
            SystemTime::now(),
        )
        .map(drop)
}

#[tokio::test]
async fn test_signs_with_the_subscriptions_profile_and_public_verifiers_accept_it() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let (url, log) = receiver().await;
    let probe = async |id: &str| -> Got {
        let before = log.lock().unwrap().len();
        let (status, answer) = call(
            &m,
            Method::POST,
            &format!("/v1/subscriptions/{id}/test"),
            &t.token,
            None,
        )
        .await;
        assert_eq!(
            (status, answer["ok"].clone()),
            (StatusCode::OK, json!(true)),
            "{answer}"
        );
        let got = log.lock().unwrap();
        assert_eq!(got.len(), before + 1);
        got[before].clone()
    };

    for profile in SigningProfile::ALL {
        let (status, created) = create(
            &m,
            &t.token,
            json!({"nombre": "receptor", "url": url, "firma": profile.as_str()}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let id = created["suscripcion"]["id"].as_str().unwrap().to_owned();
        let old = Shown::from_answer(&created["secreto"]);

        let got = probe(&id).await;
        assert_profile_headers(profile, &got, 1);
        crate_verify(profile, &got, &old).unwrap_or_else(|e| panic!("{profile}: {e}"));
        // Read under another profile, the same request does not verify.
        for other in SigningProfile::ALL.into_iter().filter(|p| *p != profile) {
            assert!(
                crate_verify(other, &got, &old).is_err(),
                "{profile} read as {other}"
            );
        }
        assert_accepted(profile, &got.headers, &got.body, std::slice::from_ref(&old));

        // During a rotation: one signature per key, each verifies alone.
        let (_, rotated) = call(
            &m,
            Method::POST,
            &format!("/v1/subscriptions/{id}/rotate"),
            &t.token,
            None,
        )
        .await;
        let new = Shown::from_answer(&rotated["secreto"]);
        let got = probe(&id).await;
        assert_profile_headers(profile, &got, 2);
        for secret in [&new, &old] {
            crate_verify(profile, &got, secret).unwrap_or_else(|e| panic!("{profile}: {e}"));
        }
        if profile == SigningProfile::MwV1 {
            let key_ids = got.headers["x-mw-key-id"].to_str().unwrap();
            assert_eq!(
                key_ids,
                format!("{},{}", new.key_id, old.key_id),
                "newest first"
            );
        }
        assert_accepted(
            profile,
            &got.headers,
            &got.body,
            &[new.clone(), old.clone()],
        );
    }

    // A PATCH of firma applies to the next request.
    let (_, created) = create(&m, &t.token, json!({"nombre": "receptor", "url": url})).await;
    let id = created["suscripcion"]["id"].as_str().unwrap().to_owned();
    let secret = Shown::from_answer(&created["secreto"]);
    assert_profile_headers(SigningProfile::MwV1, &probe(&id).await, 1);
    let (status, _) = call(
        &m,
        Method::PATCH,
        &format!("/v1/subscriptions/{id}"),
        &t.token,
        Some(json!({"firma": "t-v1"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let got = probe(&id).await;
    assert_profile_headers(SigningProfile::TV1, &got, 1);
    crate_verify(SigningProfile::TV1, &got, &secret).unwrap();
    m.stop().await;
}
