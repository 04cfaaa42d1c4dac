//! t-v1: one header, `X-MW-Signature: t=<unix>,v1=<hex>[,v1=<hex>]`, over
//! `t.body`.

use http::StatusCode;
use motor_receiver::{t_v1, Profile, Secret, VerifyError};

use crate::support::*;

fn v1(secret: &str, ts: &str, body: &[u8]) -> String {
    format!(
        "v1={}",
        hex::encode(tag(secret.as_bytes(), &[ts.as_bytes(), b".", body]))
    )
}

fn signed_at(ts: i64, secrets: &[&str]) -> Headers {
    let ts = ts.to_string();
    let mut value = format!("t={ts}");
    for s in secrets {
        value.push(',');
        value.push_str(&v1(s, &ts, BODY));
    }
    headers(&[("X-MW-Signature", &value), ("X-MW-Delivery-Id", DELIVERY)])
}

fn signed() -> Headers {
    signed_at(NOW, &[SECRET_A])
}

fn a() -> Vec<Secret> {
    vec![Secret::new(SECRET_A)]
}

#[test]
fn accepts_the_signed_request() {
    let v = check(Profile::TV1, &signed(), BODY, &a()).unwrap();
    assert_eq!(v.profile, Profile::TV1);
    assert_eq!(v.timestamp, NOW);
    assert_eq!(v.delivery_id.as_deref(), Some(DELIVERY));
    assert_eq!(v.key_id, None);
    assert_eq!(t_v1::verify(&signed(), BODY, &a(), at(NOW)), Ok(v));
    // The delivery id is not signed here: without it the request verifies.
    let mut h = signed();
    remove(&mut h, "x-mw-delivery-id");
    assert_eq!(
        check(Profile::TV1, &h, BODY, &a()).unwrap().delivery_id,
        None
    );
    // A key id given with the secret is reported back.
    let v = check(
        Profile::TV1,
        &signed(),
        BODY,
        &[Secret::with_key_id("whk_0a", SECRET_A)],
    )
    .unwrap();
    assert_eq!(v.key_id.as_deref(), Some("whk_0a"));
}

#[test]
fn malformed_headers_table() {
    let ts = NOW.to_string();
    let good = v1(SECRET_A, &ts, BODY);
    let shapes: Vec<(&str, String)> = vec![
        ("only t", format!("t={ts}")),
        ("only v1", good.clone()),
        ("t twice", format!("t={ts},t={ts},{good}")),
        ("t not a number", format!("t=abc,{good}")),
        ("t empty", format!("t=,{good}")),
        ("t negative", format!("t=-{ts},{good}")),
        ("t fractional", format!("t={ts}.0,{good}")),
        ("v1 not hex", format!("t={ts},v1={}", "zz".repeat(32))),
        ("v1 short", format!("t={ts},v1=abcd")),
        ("v1 empty", format!("t={ts},v1=")),
        ("item without =", format!("t={ts},{good},garbage")),
        ("empty item", format!("t={ts},,{good}")),
        ("trailing comma", format!("t={ts},{good},")),
        ("semicolons", format!("t={ts};{good}")),
        (
            "only another scheme",
            format!("t={ts},v0={}", "ab".repeat(32)),
        ),
        (
            "too many",
            format!("t={ts}{}", format!(",{good}").repeat(9)),
        ),
    ];
    for (name, value) in shapes {
        let mut h = signed();
        set(&mut h, "X-MW-Signature", &value);
        let e = check(Profile::TV1, &h, BODY, &a()).unwrap_err();
        assert!(malformed("x-mw-signature")(&e), "{name}: {e:?}");
        assert_eq!(e.status(), StatusCode::UNAUTHORIZED, "{name}");
    }

    let mut h = signed();
    remove(&mut h, "x-mw-signature");
    assert_eq!(
        check(Profile::TV1, &h, BODY, &a()),
        Err(VerifyError::Missing("x-mw-signature"))
    );
    set(&mut h, "X-MW-Signature", "");
    assert_eq!(
        check(Profile::TV1, &h, BODY, &a()),
        Err(VerifyError::Missing("x-mw-signature"))
    );

    // The header travels once; a second copy is refused, never joined —
    // even when each copy alone would verify.
    let mut h = signed();
    add(&mut h, "X-MW-Signature", &format!("t={ts},{good}"));
    assert_eq!(
        check(Profile::TV1, &h, BODY, &a()),
        Err(VerifyError::RepeatedHeader("x-mw-signature"))
    );
    let mut h = headers(&[("X-MW-Signature", &format!("t={ts}"))]);
    add(&mut h, "X-MW-Signature", &good);
    assert_eq!(
        check(Profile::TV1, &h, BODY, &a()),
        Err(VerifyError::RepeatedHeader("x-mw-signature"))
    );
    let mut h = signed();
    add(&mut h, "X-MW-Delivery-Id", DELIVERY);
    assert_eq!(
        check(Profile::TV1, &h, BODY, &a()),
        Err(VerifyError::RepeatedHeader("x-mw-delivery-id"))
    );
}

#[test]
fn order_spaces_and_unknown_keys() {
    let ts = NOW.to_string();
    let good = v1(SECRET_A, &ts, BODY);
    for value in [
        format!("{good},t={ts}"),
        format!(" t={ts} , {good} "),
        format!("t={ts},v0={},{good}", "ab".repeat(32)),
        format!("t={ts},{},{good}", v1(WRONG, &ts, BODY)),
        format!("t={ts},{}", good.to_uppercase().replace("V1=", "v1=")),
    ] {
        let mut h = signed();
        set(&mut h, "X-MW-Signature", &value);
        assert!(check(Profile::TV1, &h, BODY, &a()).is_ok(), "{value}");
    }
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
        let got = check(
            Profile::TV1,
            &signed_at(NOW + offset, &[SECRET_A]),
            BODY,
            &a(),
        );
        if ok {
            assert!(got.is_ok(), "{offset}: {got:?}");
        } else {
            let e = got.unwrap_err();
            assert!(matches!(e, VerifyError::Stale { .. }), "{offset}: {e:?}");
            assert_eq!(e.status(), StatusCode::REQUEST_TIMEOUT);
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
        assert!(check(Profile::TV1, &h, BODY, &secrets).is_ok());
    }
    assert_eq!(
        check(Profile::TV1, &h, BODY, &[Secret::new(WRONG)]),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        check(Profile::TV1, &h, &flipped(BODY), &a()),
        Err(VerifyError::BadSignature)
    );
    // Another t under the same v1 does not verify.
    let mut h2 = h.clone();
    let value = format!("t={},{}", NOW - 1, v1(SECRET_A, &NOW.to_string(), BODY));
    set(&mut h2, "X-MW-Signature", &value);
    assert_eq!(
        check(Profile::TV1, &h2, BODY, &a()),
        Err(VerifyError::BadSignature)
    );
}

#[test]
fn rotation_either_signature_matches() {
    let h = signed_at(NOW, &[SECRET_B, SECRET_A]);
    assert!(check(Profile::TV1, &h, BODY, &[Secret::new(SECRET_A)]).is_ok());
    assert!(check(Profile::TV1, &h, BODY, &[Secret::new(SECRET_B)]).is_ok());
    assert_eq!(
        check(Profile::TV1, &h, BODY, &[Secret::new(WRONG)]),
        Err(VerifyError::BadSignature)
    );
}
