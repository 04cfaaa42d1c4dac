//! What the signer produces, checked by verifiers Motor does not own the
//! logic of: the `motor-receiver` crate (round trip, every profile), the
//! Standard Webhooks reference library (PyPI `standardwebhooks`), and the
//! receivers printed in the public docs (seed 000's Node, seed 003's
//! Python and TypeScript), run as written from `fixtures/`.

use std::{
    io::Write,
    path::PathBuf,
    process::{Command, Stdio},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::{engine::general_purpose::STANDARD, Engine};
use chrono::DateTime;
use motor_receiver::{Profile, Secret, VerifyError};
use proptest::prelude::*;
use serde_json::json;

use super::{sign_profile, ProfileHeaders, SigningKey, SigningProfile};
use crate::{secret::IssuedSecret, time::Timestamp};

const BODY: &[u8] = r#"{"schema_version":1,"event_id":"e1f0c2d4-0000-4000-8000-000000001187","instance_id":"8a1d2c3e-0000-4000-8000-0000000000a1","seq":1187,"type":"message.received","occurred_at":"2026-10-24T15:08:12Z","received_at":"2026-10-24T15:08:13Z","generation":1,"origin":"live","data":{"texto":"¡hola! ñ \n \"citas\""}}"#.as_bytes();
const DELIVERY: &str = "3c9a7e55-0000-4000-8000-0000000000e1";

fn receiver_profile(p: SigningProfile) -> Profile {
    Profile::parse(p.as_str()).expect("both crates spell the profiles alike")
}

/// A rotation live at `now`: (new, old), newest first when signing.
fn rotation(now: Timestamp) -> (SigningKey, SigningKey) {
    let new = IssuedSecret::generate();
    let old = IssuedSecret::generate();
    (
        SigningKey {
            key_id: new.key_id,
            secret: new.secret,
            created_at: now - chrono::Duration::minutes(10),
            expires_at: None,
        },
        SigningKey {
            key_id: old.key_id,
            secret: old.secret,
            created_at: now - chrono::Duration::days(30),
            expires_at: Some(now + chrono::Duration::minutes(50)),
        },
    )
}

fn system_time(t: Timestamp) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(t.timestamp() as u64)
}

fn secret(k: &SigningKey) -> Secret {
    Secret::new(k.secret.expose())
}

fn verify(
    signed: &ProfileHeaders,
    body: &[u8],
    secrets: &[Secret],
    now: Timestamp,
) -> Result<motor_receiver::Verified, VerifyError> {
    // The engine adds X-MW-Delivery-Id to every webhook request; mw-v1
    // signs it, the other profiles carry their own id or none.
    let mut headers: Vec<(&str, &str)> = signed.pairs().collect();
    headers.push(("X-MW-Delivery-Id", DELIVERY));
    receiver_profile(signed.profile).verify(&headers, body, secrets, system_time(now))
}

#[test]
fn every_profile_round_trips_through_motor_receiver() {
    let now = crate::time::now_millis();
    let (new, old) = rotation(now);
    let keys = [old.clone(), new.clone()];
    for profile in SigningProfile::ALL {
        let signed = sign_profile(profile, &keys, now, DELIVERY, BODY).unwrap();
        // Either secret of the rotation alone verifies, in either order.
        for secrets in [
            vec![secret(&new)],
            vec![secret(&old)],
            vec![secret(&new), secret(&old)],
            vec![secret(&old), secret(&new)],
        ] {
            let v =
                verify(&signed, BODY, &secrets, now).unwrap_or_else(|e| panic!("{profile}: {e:?}"));
            assert_eq!(v.timestamp, now.timestamp());
            assert_eq!(v.delivery_id.as_deref(), Some(DELIVERY), "{profile}");
        }
        // mw-v1 pairs each signature with its key id.
        if profile == SigningProfile::MwV1 {
            for k in [&new, &old] {
                let s = Secret::with_key_id(k.key_id.as_str(), k.secret.expose());
                let v = verify(&signed, BODY, &[s], now).unwrap();
                assert_eq!(v.key_id.as_deref(), Some(k.key_id.as_str()));
            }
        }
        // Another secret, another body, another clock: refused.
        let stranger = Secret::new(IssuedSecret::generate().secret.expose());
        assert_eq!(
            verify(&signed, BODY, &[stranger], now),
            Err(VerifyError::BadSignature),
            "{profile}"
        );
        let mut changed = BODY.to_vec();
        changed[20] ^= 1;
        assert_eq!(
            verify(&signed, &changed, &[secret(&new)], now),
            Err(VerifyError::BadSignature),
            "{profile}"
        );
        let late = now + chrono::Duration::seconds(301);
        assert!(matches!(
            verify(&signed, BODY, &[secret(&new)], late),
            Err(VerifyError::Stale { .. })
        ));
    }
}

proptest! {
    #[test]
    fn any_body_any_time_round_trips(
        body in proptest::collection::vec(any::<u8>(), 0..2048),
        secs in 0i64..4_000_000_000,
        profile in proptest::sample::select(SigningProfile::ALL.to_vec()),
    ) {
        let now = DateTime::from_timestamp(secs, 0).unwrap();
        let (new, old) = rotation(now);
        let signed = sign_profile(profile, &[new.clone(), old.clone()], now, DELIVERY, &body).unwrap();
        for k in [&new, &old] {
            prop_assert!(verify(&signed, &body, &[secret(k)], now).is_ok());
        }
    }
}

// --- other languages' verifiers ---------------------------------------------

/// This crate's directory as `cargo test` gives it when it runs the test:
/// one target dir serves several checkouts, and cargo may run a binary
/// built from another one (the path it was built with is the fallback).
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

fn fixture(name: &str) -> PathBuf {
    manifest_dir().join("src/signature/fixtures").join(name)
}

/// Runs `program fixture` with `input` on stdin; its exit code.
fn run(program: &str, fixture_name: &str, input: serde_json::Value) -> (i32, String) {
    let mut child = Command::new(program)
        .arg(fixture(fixture_name))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("`{program}` must be installed for this interop test (scripts/test checks the tools): {e}")
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), stderr)
}

fn headers_json(signed: &ProfileHeaders) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    for (name, value) in signed.pairs() {
        map.insert(name.to_ascii_lowercase(), json!(value));
    }
    map.insert("x-mw-delivery-id".into(), json!(DELIVERY));
    serde_json::Value::Object(map)
}

/// Signs now (those verifiers read the real clock) during a rotation.
fn signed_now(profile: SigningProfile) -> (ProfileHeaders, SigningKey, SigningKey) {
    let now = crate::time::now_millis();
    let (new, old) = rotation(now);
    let signed = sign_profile(profile, &[old.clone(), new.clone()], now, DELIVERY, BODY).unwrap();
    (signed, new, old)
}

#[test]
fn the_standard_webhooks_python_library_verifies_what_motor_signs() {
    let (signed, new, old) = signed_now(SigningProfile::StandardWebhooks);
    let request = |secret: &str, body: &[u8]| {
        json!({
            "secret": secret,
            "headers": headers_json(&signed),
            "body_b64": STANDARD.encode(body),
        })
    };
    let check = |secret: &str, body: &[u8]| {
        let (code, stderr) = run(
            "python3",
            "standardwebhooks_verify.py",
            request(secret, body),
        );
        assert_ne!(
            code, 3,
            "the Python package `standardwebhooks` is not installed: run scripts/test, \
             which installs it (or `pip install standardwebhooks`)"
        );
        (code, stderr)
    };
    // The exact strings Motor showed, each of the rotation.
    for k in [&new, &old] {
        let (code, stderr) = check(k.secret.expose(), BODY);
        assert_eq!(
            code, 0,
            "standardwebhooks refused Motor's signature: {stderr}"
        );
    }
    // And it is a real check: another secret or body is refused.
    let stranger = IssuedSecret::generate().secret;
    assert_eq!(check(stranger.expose(), BODY).0, 1);
    let mut changed = BODY.to_vec();
    changed[20] ^= 1;
    assert_eq!(check(new.secret.expose(), &changed).0, 1);
}

#[test]
fn the_node_receiver_of_seed_000_verifies_mw_v1() {
    let (signed, new, old) = signed_now(SigningProfile::MwV1);
    let request = |claves: serde_json::Value, body: &[u8]| {
        json!({
            "headers": headers_json(&signed),
            "body_b64": STANDARD.encode(body),
            "claves": claves,
        })
    };
    for k in [&new, &old] {
        let claves = json!({ k.key_id.as_str(): k.secret.expose() });
        let (code, stderr) = run("node", "seed000_verify.mjs", request(claves, BODY));
        assert_eq!(code, 0, "seed 000's receiver refused ({stderr})");
    }
    let wrong = json!({ new.key_id.as_str(): old.secret.expose() });
    assert_eq!(run("node", "seed000_verify.mjs", request(wrong, BODY)).0, 1);
    let mut changed = BODY.to_vec();
    changed[20] ^= 1;
    let claves = json!({ new.key_id.as_str(): new.secret.expose() });
    assert_eq!(
        run("node", "seed000_verify.mjs", request(claves, &changed)).0,
        1
    );
}

#[test]
fn the_python_and_typescript_verifiers_of_seed_003_verify_t_v1() {
    let (signed, new, old) = signed_now(SigningProfile::TV1);
    let header = signed.get("X-MW-Signature").unwrap().to_owned();
    let body_text = std::str::from_utf8(BODY).unwrap();
    let python = |secretos: Vec<&str>, body: &[u8]| {
        let input =
            json!({ "cabecera": header, "body_b64": STANDARD.encode(body), "secretos": secretos });
        run("python3", "seed003_verify.py", input)
    };
    let node = |secretos: Vec<&str>, body: &str| {
        let input = json!({ "cabecera": header, "cuerpo": body, "secretos": secretos });
        run("node", "seed003_verify.mjs", input)
    };
    for secretos in [
        vec![new.secret.expose()],
        vec![old.secret.expose()],
        vec![old.secret.expose(), new.secret.expose()],
    ] {
        let (code, stderr) = python(secretos.clone(), BODY);
        assert_eq!(code, 0, "seed 003's Python verifier refused ({stderr})");
        let (code, stderr) = node(secretos, body_text);
        assert_eq!(code, 0, "seed 003's TypeScript verifier refused ({stderr})");
    }
    let stranger = IssuedSecret::generate().secret;
    assert_eq!(python(vec![stranger.expose()], BODY).0, 1);
    assert_eq!(node(vec![stranger.expose()], body_text).0, 1);
    let changed = body_text.replace("hola", "hole");
    assert_eq!(python(vec![new.secret.expose()], changed.as_bytes()).0, 1);
    assert_eq!(node(vec![new.secret.expose()], &changed).0, 1);
}
