//! standard-webhooks: `webhook-id`, `webhook-timestamp`,
//! `webhook-signature: v1,<base64> …`, and the specification's published
//! test vectors (standard-webhooks/standard-webhooks, libraries/*/tests).

use http::StatusCode;
use motor_receiver::{standard_webhooks, Profile, Secret, Verifier, VerifyError};

use crate::support::*;

const MSG_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";

fn v1(secret: &str, id: &str, ts: &str, body: &[u8]) -> String {
    format!(
        "v1,{}",
        b64(&tag(
            &sw_key(secret),
            &[id.as_bytes(), b".", ts.as_bytes(), b".", body]
        ))
    )
}

fn signed_at(ts: i64, secrets: &[&str]) -> Headers {
    let ts = ts.to_string();
    let sigs: Vec<String> = secrets.iter().map(|s| v1(s, MSG_ID, &ts, BODY)).collect();
    headers(&[
        ("webhook-id", MSG_ID),
        ("webhook-timestamp", &ts),
        ("webhook-signature", &sigs.join(" ")),
    ])
}

fn signed() -> Headers {
    signed_at(NOW, &[SECRET_A])
}

fn a() -> Vec<Secret> {
    vec![Secret::new(SECRET_A)]
}

/// (secret, msg id, timestamp, payload, signature) as the specification's
/// libraries publish them.
const VECTORS: [(&str, &str, i64, &str, &str); 2] = [
    // libraries/python/tests/test_webhooks.py::test_sign_function, and the
    // Go, JavaScript, … ports.
    (
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        r#"{"test": 2432232314}"#,
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    ),
    // libraries/rust/src/lib.rs::test_sign
    (
        "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
        "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
        1649367553,
        r#"{"email":"test@example.com","username":"test_user"}"#,
        "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=",
    ),
];

#[test]
fn the_published_vectors_verify() {
    for (secret, id, ts, payload, signature) in VECTORS {
        let h = headers(&[
            ("webhook-id", id),
            ("webhook-timestamp", &ts.to_string()),
            ("webhook-signature", signature),
        ]);
        let verifier = Verifier::new(Profile::StandardWebhooks, [Secret::new(secret)]).unwrap();
        let v = verifier.verify(&h, payload.as_bytes(), at(ts)).unwrap();
        assert_eq!(v.delivery_id.as_deref(), Some(id));
        assert_eq!(v.timestamp, ts);
        // The secret without its prefix is the same key (the libraries'
        // test_signature_verification_with_and_without_prefix).
        let bare = Secret::new(secret.strip_prefix("whsec_").unwrap());
        assert!(standard_webhooks::verify(&h, payload.as_bytes(), &[bare], at(ts)).is_ok());
        // Five minutes and a second later it is stale, in either direction.
        for off in [-301, 301] {
            let e = verifier
                .verify(&h, payload.as_bytes(), at(ts + off))
                .unwrap_err();
            assert_eq!(e.status(), StatusCode::REQUEST_TIMEOUT);
        }
    }
}

#[test]
fn the_published_negative_vectors_fail() {
    let (secret, id, ts, payload, good) = VECTORS[0];
    let secrets = [Secret::new(secret)];
    let with = |sig: &str| {
        let h = headers(&[
            ("webhook-id", id),
            ("webhook-timestamp", &ts.to_string()),
            ("webhook-signature", sig),
        ]);
        standard_webhooks::verify(&h, payload.as_bytes(), &secrets, at(ts))
    };
    // test_invalid_signature_raises_error: one bit off in the last byte.
    assert_eq!(
        with("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="),
        Err(VerifyError::BadSignature)
    );
    // test_multi_sig_payload_is_valid: wrong v1s and a v2 around the good one.
    let multi = [
        "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
        "v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
        good,
        "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
    ]
    .join(" ");
    assert!(with(&multi).is_ok());
    // The Rust library's test_no_verify_with_multiple_signatures.
    let wrong = [
        "v1,tFtCZ5RDCPxzWQRWXWPgrCgE2frDBe9gjpbWQxnVfsQ=",
        "v1,Mm7xgUVICxZfQ3bgf0h0Dof65L/IFx+PnZvnDWPCX6Q=",
        "v1,9DfC1c3eeOrXB6w/5dIDydLNQaEyww5KalE5jLBZucE=",
    ]
    .join(" ");
    assert_eq!(with(&wrong), Err(VerifyError::BadSignature));
    // The payload re-serialised (a space dropped) no longer verifies.
    let h = headers(&[
        ("webhook-id", id),
        ("webhook-timestamp", &ts.to_string()),
        ("webhook-signature", good),
    ]);
    assert_eq!(
        standard_webhooks::verify(&h, br#"{"test":2432232314}"#, &secrets, at(ts)),
        Err(VerifyError::BadSignature)
    );
}

#[test]
fn accepts_the_signed_request() {
    let v = check(Profile::StandardWebhooks, &signed(), BODY, &a()).unwrap();
    assert_eq!(v.profile, Profile::StandardWebhooks);
    assert_eq!(v.delivery_id.as_deref(), Some(MSG_ID));
    // Motor's secrets are whsec_ + 64 hex digits: base64, 48 bytes of key.
    assert_eq!(sw_key(SECRET_A).len(), 48);
}

#[test]
fn malformed_headers_table() {
    let ts = NOW.to_string();
    let good = v1(SECRET_A, MSG_ID, &ts, BODY);
    let short = format!("v1,{}", b64(&[7u8; 16]));
    let shapes: Vec<(&str, String)> = vec![
        ("no comma", "v1".into()),
        ("no version", format!(",{}", &good[3..])),
        ("not base64", "v1,!!!!".into()),
        ("short tag", short),
        ("hex instead of base64", format!("v1,{}", "ab".repeat(32))),
        ("comma separated list", format!("{good},{good}")),
        ("only asymmetric", format!("v1a,{}", b64(&[1u8; 64]))),
        ("nine signatures", [good.as_str(); 9].join(" ")),
    ];
    for (name, value) in shapes {
        let mut h = signed();
        set(&mut h, "webhook-signature", &value);
        let e = check(Profile::StandardWebhooks, &h, BODY, &a()).unwrap_err();
        assert!(malformed("webhook-signature")(&e), "{name}: {e:?}");
        assert_eq!(e.status(), StatusCode::UNAUTHORIZED, "{name}");
    }
    for (name, value) in [
        ("hello", "hello"),
        ("negative", "-1"),
        ("float", "1792854493.0"),
    ] {
        let mut h = signed();
        set(&mut h, "webhook-timestamp", value);
        let e = check(Profile::StandardWebhooks, &h, BODY, &a()).unwrap_err();
        assert!(malformed("webhook-timestamp")(&e), "{name}: {e:?}");
    }
    let mut h = signed();
    set(&mut h, "webhook-id", "msg.1");
    assert!(malformed("webhook-id")(
        &check(Profile::StandardWebhooks, &h, BODY, &a()).unwrap_err()
    ));
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        let mut h = signed();
        remove(&mut h, name);
        assert_eq!(
            check(Profile::StandardWebhooks, &h, BODY, &a()),
            Err(VerifyError::Missing(name)),
        );
        let mut h = signed();
        let value = h.iter().find(|(n, _)| n == name).unwrap().1.clone();
        h.push((name.to_uppercase(), value));
        assert_eq!(
            check(Profile::StandardWebhooks, &h, BODY, &a()),
            Err(VerifyError::RepeatedHeader(name)),
        );
    }
}

#[test]
fn extra_spaces_and_other_versions_are_skipped() {
    let ts = NOW.to_string();
    let good = v1(SECRET_A, MSG_ID, &ts, BODY);
    let mut h = signed();
    set(
        &mut h,
        "webhook-signature",
        &format!("v1a,{}  {good} ", b64(&[1u8; 64])),
    );
    assert!(check(Profile::StandardWebhooks, &h, BODY, &a()).is_ok());
}

#[test]
fn the_window_is_300_seconds_both_ways() {
    for (offset, ok) in [
        (-301, false),
        (-300, true),
        (-299, true),
        (299, true),
        (300, true),
        (301, false),
    ] {
        let h = signed_at(NOW + offset, &[SECRET_A]);
        let got = check(Profile::StandardWebhooks, &h, BODY, &a());
        if ok {
            assert!(got.is_ok(), "{offset}: {got:?}");
        } else {
            assert_eq!(
                got.unwrap_err().status(),
                StatusCode::REQUEST_TIMEOUT,
                "{offset}"
            );
        }
    }
}

#[test]
fn secrets_in_either_order_wrong_secret_and_changed_body() {
    let h = signed();
    for secrets in [
        vec![Secret::new(SECRET_A), Secret::new(SECRET_B)],
        vec![Secret::new(SECRET_B), Secret::new(SECRET_A)],
    ] {
        assert!(check(Profile::StandardWebhooks, &h, BODY, &secrets).is_ok());
    }
    assert_eq!(
        check(Profile::StandardWebhooks, &h, BODY, &[Secret::new(WRONG)]),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        check(Profile::StandardWebhooks, &h, &flipped(BODY), &a()),
        Err(VerifyError::BadSignature)
    );
    let mut other_id = h.clone();
    set(&mut other_id, "webhook-id", "msg_other");
    assert_eq!(
        check(Profile::StandardWebhooks, &other_id, BODY, &a()),
        Err(VerifyError::BadSignature)
    );
    // A secret that is not base64 never matches (and Verifier::new refuses it).
    assert_eq!(
        check(
            Profile::StandardWebhooks,
            &h,
            BODY,
            &[Secret::new("whsec_!")]
        ),
        Err(VerifyError::BadSignature)
    );
    assert!(Verifier::new(Profile::StandardWebhooks, [Secret::new("whsec_!")]).is_err());
    assert!(Verifier::new(Profile::MwV1, [Secret::new("whsec_!")]).is_ok());
    assert!(Verifier::new(Profile::MwV1, []).is_err());
    assert!(Verifier::new(Profile::MwV1, [Secret::new("")]).is_err());
}

#[test]
fn rotation_either_signature_matches() {
    let h = signed_at(NOW, &[SECRET_B, SECRET_A]);
    for s in [SECRET_A, SECRET_B] {
        assert!(check(Profile::StandardWebhooks, &h, BODY, &[Secret::new(s)]).is_ok());
    }
    assert_eq!(
        check(Profile::StandardWebhooks, &h, BODY, &[Secret::new(WRONG)]),
        Err(VerifyError::BadSignature)
    );
}
