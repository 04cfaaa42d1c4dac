//! Subscription secrets: shown once on create and rotate and nowhere else
//! (answers, database dump, logs); rotation signs with both keys, newest
//! first, then with one; a wrong master key stops start-up.

use hmac::{Hmac, Mac};
use motor::serve::Role;
use motor_domain::{
    seal::SealingKey,
    signature::{self, SigningKey},
    subscription::SubscriptionId,
};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::{
    subscriptions::{call, create_ok, sub_id, ts},
    util::{self, TestMotor, ADMIN_TOKEN},
};

/// Logs of every Motor in this test process, for grepping.
fn captured_logs() -> &'static std::sync::Mutex<Vec<u8>> {
    static LOGS: std::sync::OnceLock<&'static std::sync::Mutex<Vec<u8>>> =
        std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static std::sync::Mutex<Vec<u8>> =
            Box::leak(Box::new(std::sync::Mutex::new(Vec::new())));
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || LogWriter(logs))
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other test installs a subscriber");
        logs
    })
}

struct LogWriter(&'static std::sync::Mutex<Vec<u8>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_secret_shows_once_and_is_nowhere_else() {
    let logs = captured_logs();
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({})).await;
    let id = created["suscripcion"]["id"].as_str().unwrap().to_owned();
    let first = created["secreto"]["valor"].as_str().unwrap().to_owned();
    let path = format!("/v1/subscriptions/{id}");
    let (status, rotated) = call(&m, Method::POST, &format!("{path}/rotate"), &t.token, None).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let second = rotated["secreto"]["valor"].as_str().unwrap().to_owned();
    assert_ne!(first, second);

    // Every other answer about the subscription: no secret value.
    let mut answers = Vec::new();
    answers.push(
        call(&m, Method::GET, "/v1/subscriptions", &t.token, None)
            .await
            .1,
    );
    answers.push(call(&m, Method::GET, &path, &t.token, None).await.1);
    answers.push(
        call(
            &m,
            Method::PATCH,
            &path,
            &t.token,
            Some(json!({"nombre": "n2"})),
        )
        .await
        .1,
    );
    answers.push(
        call(
            &m,
            Method::PATCH,
            &path,
            &t.token,
            Some(json!({"url": "ftp://x.io/"})),
        )
        .await
        .1,
    );
    answers.push(
        call(
            &m,
            Method::PATCH,
            &path,
            &t.token,
            Some(json!({"version_esperada": 1})),
        )
        .await
        .1,
    );
    for answer in &answers {
        let text = answer.to_string();
        for secret in [&first, &second] {
            assert!(!text.contains(secret.as_str()), "{text}");
        }
        assert!(!text.contains("whsec_"), "{text}");
    }

    // The database holds them sealed only.
    let dump = std::process::Command::new("pg_dump")
        .args(["--data-only", &m.db.url])
        .output()
        .expect("pg_dump must be installed");
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let dump = String::from_utf8_lossy(&dump.stdout).into_owned();
    assert!(
        dump.contains(created["secreto"]["key_id"].as_str().unwrap()),
        "the dump has the key rows"
    );
    for secret in [&first, &second] {
        let hex = &secret["whsec_".len()..];
        assert!(!dump.contains(hex), "a secret is in the database dump");
    }
    m.stop().await;

    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(logs.contains("api listening"), "the capture works");
    for secret in [&first, &second] {
        assert!(
            !logs.contains(&secret["whsec_".len()..]),
            "a secret is in the logs"
        );
    }
}

fn hmac_hex(secret: &str, ts: &str, delivery: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{ts}.{delivery}.").as_bytes());
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// The live keys as the delivery engine will load them: from the store,
/// opened with the master key.
async fn engine_keys(m: &TestMotor, id: SubscriptionId) -> Vec<SigningKey> {
    let key = util::config(&m.db, "x").sealing_key().unwrap();
    open_keys(&key, m, id).await
}

async fn open_keys(key: &SealingKey, m: &TestMotor, id: SubscriptionId) -> Vec<SigningKey> {
    motor_store::subscriptions::live_keys(&m.db.pool, id)
        .await
        .unwrap()
        .into_iter()
        .map(|k| {
            SigningKey::open(
                key,
                id.as_uuid(),
                &k.key_id,
                &k.sealed,
                k.created_at,
                k.expires_at,
            )
            .unwrap()
        })
        .collect()
}

#[tokio::test]
async fn rotation_signs_with_both_keys_newest_first_then_one() {
    let m = TestMotor::start(&[Role::Api]).await;
    let t = m.tenant(1).await;
    let created = create_ok(&m, &t, json!({})).await;
    let id = sub_id(&created);
    let (old_id, old) = (
        created["secreto"]["key_id"].as_str().unwrap().to_owned(),
        created["secreto"]["valor"].as_str().unwrap().to_owned(),
    );
    let path = format!("/v1/subscriptions/{id}");

    let (status, rotated) = call(&m, Method::POST, &format!("{path}/rotate"), &t.token, None).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let (new_id, new) = (
        rotated["secreto"]["key_id"].as_str().unwrap().to_owned(),
        rotated["secreto"]["valor"].as_str().unwrap().to_owned(),
    );
    let s = &rotated["suscripcion"];
    assert_eq!(s["version"], 2);
    let claves = s["claves"].as_array().unwrap();
    assert_eq!(claves.len(), 2, "{s}");
    assert_eq!(
        (
            claves[0]["key_id"].as_str().unwrap(),
            claves[1]["key_id"].as_str().unwrap()
        ),
        (new_id.as_str(), old_id.as_str())
    );
    assert_eq!(claves[0]["vence_en"], Value::Null);
    // The old key retires after the default window of 60 minutes.
    let window = ts(&claves[1]["vence_en"]) - ts(&claves[0]["creado_en"]);
    assert!((59..=60).contains(&window.num_minutes()), "{window}");

    // What the engine signs with verifies under either secret.
    let keys = engine_keys(&m, id).await;
    let body = br#"{"schema_version":1,"seq":1}"#;
    let now = motor_domain::time::now_millis();
    let h = signature::sign(&keys, now, "delivery-1", body).unwrap();
    assert_eq!(h.key_ids, format!("{new_id},{old_id}"));
    assert_eq!(
        h.signatures,
        format!(
            "v1={},v1={}",
            hmac_hex(&new, &h.timestamp, "delivery-1", body),
            hmac_hex(&old, &h.timestamp, "delivery-1", body)
        )
    );

    // After the window (moved into the past here) only the new key signs.
    sqlx::query("UPDATE subscription_keys SET vence_en = now() - interval '1 second' WHERE vence_en IS NOT NULL")
        .execute(&m.db.pool)
        .await
        .unwrap();
    let (_, s) = call(&m, Method::GET, &path, &t.token, None).await;
    assert_eq!(s["claves"].as_array().unwrap().len(), 1);
    assert_eq!(s["claves"][0]["key_id"], new_id.as_str());
    let keys = engine_keys(&m, id).await;
    let h = signature::sign(&keys, motor_domain::time::now_millis(), "d", body).unwrap();
    assert_eq!(h.key_ids, new_id);
    assert_eq!(
        h.signatures,
        format!("v1={}", hmac_hex(&new, &h.timestamp, "d", body))
    );

    // The window is a setting; rotating again keeps at most two keys.
    let (status, _) = call(
        &m,
        Method::PATCH,
        "/v1/admin/settings",
        ADMIN_TOKEN,
        Some(json!({"webhooks.ventana_rotacion_minutos": 5})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, r2) = call(&m, Method::POST, &format!("{path}/rotate"), &t.token, None).await;
    let (_, r3) = call(&m, Method::POST, &format!("{path}/rotate"), &t.token, None).await;
    let claves = r3["suscripcion"]["claves"].as_array().unwrap();
    assert_eq!(claves.len(), 2, "{r3}");
    assert_eq!(claves[0]["key_id"], r3["secreto"]["key_id"]);
    assert_eq!(claves[1]["key_id"], r2["secreto"]["key_id"]);
    let window = ts(&claves[1]["vence_en"]) - ts(&claves[0]["creado_en"]);
    assert!((4..=5).contains(&window.num_minutes()), "{window}");
    assert_eq!(engine_keys(&m, id).await.len(), 2);
    assert_eq!(r3["suscripcion"]["version"], 4);
    m.stop().await;
}

#[tokio::test]
async fn a_wrong_master_key_fails_at_start_up() {
    let db = util::TestDb::new().await;
    let mut config = util::config(&db, &util::topic_prefix());
    config.master_key = Some("k".repeat(40));
    let (stop, started) = (
        tokio_util::sync::CancellationToken::new(),
        tokio::sync::oneshot::channel(),
    );
    let first = {
        let (config, stop) = (config.clone(), stop.clone());
        tokio::spawn(
            async move { motor::serve::run(config, &[Role::Api], stop, Some(started.0)).await },
        )
    };
    started.1.await.expect("the right key starts");
    stop.cancel();
    first.await.unwrap().unwrap();

    for wrong in [Some("w".repeat(40)), None] {
        config.master_key = wrong;
        let err = motor::serve::run(
            config.clone(),
            &[Role::Api],
            tokio_util::sync::CancellationToken::new(),
            None,
        )
        .await
        .expect_err("a wrong key must not start");
        assert!(format!("{err:#}").contains("MOTOR_MASTER_KEY"), "{err:#}");
    }
    config.master_key = Some("short".into());
    let err = motor::serve::run(
        config,
        &[Role::Api],
        tokio_util::sync::CancellationToken::new(),
        None,
    )
    .await
    .expect_err("a weak key must not start");
    assert!(format!("{err:#}").contains("MOTOR_MASTER_KEY"), "{err:#}");
}
