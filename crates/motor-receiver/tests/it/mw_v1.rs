//! mw-v1: `X-MW-Timestamp`, `X-MW-Delivery-Id`, `X-MW-Key-Id`,
//! `X-MW-Signature: v1=<hex>[,v1=<hex>]`.

use http::{HeaderMap, HeaderValue, StatusCode};
use motor_receiver::{mw_v1, Profile, Secret, VerifyError};

use crate::support::*;

const KEY_A: &str = "whk_0a";
const KEY_B: &str = "whk_0b";

fn sig(secret: &str, ts: &str, delivery: &str, body: &[u8]) -> String {
    let t = tag(
        secret.as_bytes(),
        &[ts.as_bytes(), b".", delivery.as_bytes(), b".", body],
    );
    format!("v1={}", hex::encode(t))
}

/// A request signed at `ts` with `(key id, secret)` pairs, newest first.
fn signed_at(ts: i64, keys: &[(&str, &str)]) -> Headers {
    let ts = ts.to_string();
    let ids: Vec<&str> = keys.iter().map(|(id, _)| *id).collect();
    let sigs: Vec<String> = keys
        .iter()
        .map(|(_, s)| sig(s, &ts, DELIVERY, BODY))
        .collect();
    headers(&[
        ("X-MW-Timestamp", &ts),
        ("X-MW-Delivery-Id", DELIVERY),
        ("X-MW-Key-Id", &ids.join(",")),
        ("X-MW-Signature", &sigs.join(",")),
    ])
}

fn signed() -> Headers {
    signed_at(NOW, &[(KEY_A, SECRET_A)])
}

fn a() -> Vec<Secret> {
    vec![Secret::new(SECRET_A)]
}

#[test]
fn accepts_the_signed_request() {
    let v = check(Profile::MwV1, &signed(), BODY, &a()).unwrap();
    assert_eq!(v.profile, Profile::MwV1);
    assert_eq!(v.timestamp, NOW);
    assert_eq!(v.delivery_id.as_deref(), Some(DELIVERY));
    assert_eq!(v.key_id.as_deref(), Some(KEY_A));
    // The module function and the profile method are the same check.
    assert_eq!(mw_v1::verify(&signed(), BODY, &a(), at(NOW)), Ok(v));
}

#[test]
fn the_seed_example_verifies() {
    // Seed 000's curl example, signed by hand with openssl (see
    // motor-domain's signature tests for the same vector).
    let h = headers(&[
        ("X-MW-Key-Id", "SECRETO_KEY_ID"),
        ("X-MW-Timestamp", "1792854493"),
        ("X-MW-Delivery-Id", DELIVERY),
        (
            "X-MW-Signature",
            "v1=8f81d41de4e69a1926a675cd6f2abe48200f639f23b3a45225792a6bed248821",
        ),
    ]);
    let secrets = [Secret::new("TU_SECRETO_DE_WEBHOOK")];
    assert!(check(Profile::MwV1, &h, BODY, &secrets).is_ok());
}

/// Every way the headers can be wrong, with the error each must give.
#[test]
fn malformed_headers_table() {
    type Expect = fn(&VerifyError) -> bool;
    type Edit<'a> = Box<dyn Fn(&mut Headers) + 'a>;
    let good = sig(SECRET_A, &NOW.to_string(), DELIVERY, BODY);
    let good = good.as_str();
    let cases: Vec<(&str, Edit, Expect)> = vec![
        (
            "no timestamp",
            Box::new(|h| remove(h, "x-mw-timestamp")),
            |e| *e == VerifyError::Missing("x-mw-timestamp"),
        ),
        (
            "empty timestamp",
            Box::new(|h| set(h, "X-MW-Timestamp", "")),
            |e| *e == VerifyError::Missing("x-mw-timestamp"),
        ),
        (
            "no delivery id",
            Box::new(|h| remove(h, "x-mw-delivery-id")),
            |e| *e == VerifyError::Missing("x-mw-delivery-id"),
        ),
        ("no key id", Box::new(|h| remove(h, "x-mw-key-id")), |e| {
            *e == VerifyError::Missing("x-mw-key-id")
        }),
        (
            "no signature",
            Box::new(|h| remove(h, "x-mw-signature")),
            |e| *e == VerifyError::Missing("x-mw-signature"),
        ),
        (
            "blank signature",
            Box::new(|h| set(h, "X-MW-Signature", "  ")),
            |e| *e == VerifyError::Missing("x-mw-signature"),
        ),
        (
            "timestamp not a number",
            Box::new(|h| set(h, "X-MW-Timestamp", "abc")),
            |e| malformed("x-mw-timestamp")(e),
        ),
        (
            "negative timestamp",
            Box::new(|h| set(h, "X-MW-Timestamp", "-1792854493")),
            |e| malformed("x-mw-timestamp")(e),
        ),
        (
            "fractional timestamp",
            Box::new(|h| set(h, "X-MW-Timestamp", "1792854493.5")),
            |e| malformed("x-mw-timestamp")(e),
        ),
        (
            "huge timestamp",
            Box::new(|h| set(h, "X-MW-Timestamp", "99999999999999999999999")),
            |e| malformed("x-mw-timestamp")(e),
        ),
        (
            "RFC 3339 timestamp",
            Box::new(|h| set(h, "X-MW-Timestamp", "2026-10-24T15:08:13Z")),
            |e| malformed("x-mw-timestamp")(e),
        ),
        (
            "delivery id with a dot",
            Box::new(|h| set(h, "X-MW-Delivery-Id", "a.b")),
            |e| malformed("x-mw-delivery-id")(e),
        ),
        (
            "no scheme",
            Box::new(|h| set(h, "X-MW-Signature", "8f81d41de4e69a19")),
            |e| malformed("x-mw-signature")(e),
        ),
        (
            "not hex",
            Box::new(|h| set(h, "X-MW-Signature", &format!("v1={}", "zz".repeat(32)))),
            |e| malformed("x-mw-signature")(e),
        ),
        (
            "short hex",
            Box::new(|h| set(h, "X-MW-Signature", "v1=abcd")),
            |e| malformed("x-mw-signature")(e),
        ),
        (
            "empty v1",
            Box::new(|h| set(h, "X-MW-Signature", "v1=")),
            |e| malformed("x-mw-signature")(e),
        ),
        (
            "only another scheme",
            Box::new(|h| set(h, "X-MW-Signature", &format!("v2={}", "ab".repeat(32)))),
            |e| malformed("x-mw-signature")(e),
        ),
        (
            "trailing comma",
            Box::new(move |h| set(h, "X-MW-Signature", &format!("{good},"))),
            |e| malformed("x-mw-signature")(e),
        ),
        (
            "more signatures than key ids",
            Box::new(move |h| set(h, "X-MW-Signature", &format!("{good},{good}"))),
            |e| malformed("x-mw-key-id")(e),
        ),
        (
            "more key ids than signatures",
            Box::new(|h| set(h, "X-MW-Key-Id", "whk_0a,whk_0b")),
            |e| malformed("x-mw-key-id")(e),
        ),
        (
            "nine signatures",
            Box::new(move |h| {
                set(h, "X-MW-Key-Id", &[KEY_A; 9].join(","));
                set(h, "X-MW-Signature", &[good; 9].join(","));
            }),
            |e| malformed("x-mw-key-id")(e),
        ),
        (
            "signature not text",
            Box::new(|h| {
                remove(h, "x-mw-signature");
                h.push(("X-MW-Signature".into(), vec![b'v', b'1', b'=', 0xff, 0xfe]));
            }),
            |e| malformed("x-mw-signature")(e),
        ),
        (
            "signature repeated",
            Box::new(move |h| add(h, "X-MW-Signature", good)),
            |e| *e == VerifyError::RepeatedHeader("x-mw-signature"),
        ),
        (
            "signature repeated, other case",
            Box::new(move |h| add(h, "x-mw-signature", "v1=00")),
            |e| *e == VerifyError::RepeatedHeader("x-mw-signature"),
        ),
        (
            "key id repeated",
            Box::new(|h| add(h, "X-MW-Key-Id", KEY_A)),
            |e| *e == VerifyError::RepeatedHeader("x-mw-key-id"),
        ),
        (
            "timestamp repeated",
            Box::new(|h| add(h, "X-MW-Timestamp", &NOW.to_string())),
            |e| *e == VerifyError::RepeatedHeader("x-mw-timestamp"),
        ),
        (
            "delivery id repeated",
            Box::new(|h| add(h, "X-MW-Delivery-Id", DELIVERY)),
            |e| *e == VerifyError::RepeatedHeader("x-mw-delivery-id"),
        ),
        (
            "another delivery id",
            Box::new(|h| {
                set(
                    h,
                    "X-MW-Delivery-Id",
                    "3c9a7e55-0000-4000-8000-0000000000e2",
                )
            }),
            |e| *e == VerifyError::BadSignature,
        ),
        (
            "another timestamp",
            Box::new(|h| set(h, "X-MW-Timestamp", &(NOW - 1).to_string())),
            |e| *e == VerifyError::BadSignature,
        ),
        (
            "signature upper-case v1 scheme",
            Box::new(move |h| set(h, "X-MW-Signature", &good.replace("v1=", "V1="))),
            |e| malformed("x-mw-signature")(e),
        ),
    ];
    for (name, edit, expect) in cases {
        let mut h = signed();
        edit(&mut h);
        let got = check(Profile::MwV1, &h, BODY, &a());
        match got {
            Err(e) => {
                assert!(expect(&e), "{name}: got {e:?}");
                assert_eq!(e.status(), StatusCode::UNAUTHORIZED, "{name}");
            }
            Ok(v) => panic!("{name}: accepted {v:?}"),
        }
    }
}

#[test]
fn tolerates_extra_spaces_and_unknown_schemes() {
    let good = sig(SECRET_A, &NOW.to_string(), DELIVERY, BODY);
    let mut h = signed();
    set(&mut h, "X-MW-Key-Id", " whk_0b , whk_0a ");
    set(&mut h, "X-MW-Signature", &format!(" v2=abc , {good} "));
    let v = check(Profile::MwV1, &h, BODY, &a()).unwrap();
    assert_eq!(v.key_id.as_deref(), Some(KEY_A));
}

#[test]
fn the_window_is_300_seconds_both_ways() {
    for (offset, ok) in [
        (-301, false),
        (-300, true),
        (-299, true),
        (0, true),
        (299, true),
        (300, true),
        (301, false),
    ] {
        let h = signed_at(NOW + offset, &[(KEY_A, SECRET_A)]);
        let got = check(Profile::MwV1, &h, BODY, &a());
        if ok {
            assert!(got.is_ok(), "{offset}: {got:?}");
        } else {
            let e = got.unwrap_err();
            assert_eq!(
                e,
                VerifyError::Stale {
                    timestamp: NOW + offset,
                    now: NOW
                }
            );
            assert_eq!(e.status(), StatusCode::REQUEST_TIMEOUT, "{offset}");
        }
    }
}

#[test]
fn stale_wins_over_a_bad_signature() {
    // A clock problem is answered 408 even when the secret is also wrong:
    // a 401 would suspend the subscription.
    let h = signed_at(NOW - 3600, &[(KEY_A, WRONG)]);
    let e = check(Profile::MwV1, &h, BODY, &a()).unwrap_err();
    assert_eq!(e.status(), StatusCode::REQUEST_TIMEOUT);
}

#[test]
fn secrets_in_either_order_wrong_secret_and_changed_body() {
    let h = signed();
    for secrets in [
        vec![Secret::new(SECRET_A), Secret::new(SECRET_B)],
        vec![Secret::new(SECRET_B), Secret::new(SECRET_A)],
    ] {
        assert!(check(Profile::MwV1, &h, BODY, &secrets).is_ok());
    }
    assert_eq!(
        check(Profile::MwV1, &h, BODY, &[Secret::new(WRONG)]),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        check(Profile::MwV1, &h, BODY, &[]),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        check(Profile::MwV1, &h, &flipped(BODY), &a()),
        Err(VerifyError::BadSignature)
    );
    let mut longer = BODY.to_vec();
    longer.push(b' ');
    assert_eq!(
        check(Profile::MwV1, &h, &longer, &a()),
        Err(VerifyError::BadSignature)
    );
}

#[test]
fn rotation_either_signature_matches() {
    // Newest first: B is the new key, A the old one.
    let h = signed_at(NOW, &[(KEY_B, SECRET_B), (KEY_A, SECRET_A)]);
    let only = |s: Secret| check(Profile::MwV1, &h, BODY, &[s]);
    assert_eq!(
        only(Secret::new(SECRET_A)).unwrap().key_id.as_deref(),
        Some(KEY_A)
    );
    assert_eq!(
        only(Secret::new(SECRET_B)).unwrap().key_id.as_deref(),
        Some(KEY_B)
    );
    assert!(only(Secret::with_key_id(KEY_A, SECRET_A)).is_ok());
    assert!(only(Secret::with_key_id(KEY_B, SECRET_B)).is_ok());
    // A secret given for a key id answers only at that key id's position.
    assert_eq!(
        only(Secret::with_key_id(KEY_B, SECRET_A)),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        only(Secret::with_key_id("whk_0c", SECRET_A)),
        Err(VerifyError::BadSignature)
    );
    // One signature broken, the other still carries the request.
    let mut h2 = h.clone();
    let sigs = String::from_utf8(
        h2.iter()
            .find(|(n, _)| n == "X-MW-Signature")
            .unwrap()
            .1
            .clone(),
    )
    .unwrap();
    let (new, old) = sigs.split_once(',').unwrap();
    set(
        &mut h2,
        "X-MW-Signature",
        &format!("v1={},{old}", "00".repeat(32)),
    );
    assert!(check(Profile::MwV1, &h2, BODY, &a()).is_ok());
    set(
        &mut h2,
        "X-MW-Signature",
        &format!("{new},v1={}", "00".repeat(32)),
    );
    assert!(check(Profile::MwV1, &h2, BODY, &[Secret::new(SECRET_B)]).is_ok());
    assert_eq!(
        check(Profile::MwV1, &h2, BODY, &a()),
        Err(VerifyError::BadSignature)
    );
}

#[test]
fn a_header_map_with_a_repeated_signature_is_refused() {
    let mut map = HeaderMap::new();
    for (name, value) in signed() {
        map.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_bytes(&value).unwrap(),
        );
    }
    assert!(check_map(&map).is_ok());
    map.append("x-mw-signature", HeaderValue::from_static("v1=00"));
    assert_eq!(
        check_map(&map),
        Err(VerifyError::RepeatedHeader("x-mw-signature"))
    );
}

fn check_map(map: &HeaderMap) -> Result<motor_receiver::Verified, VerifyError> {
    Profile::MwV1.verify(map, BODY, &a(), at(NOW))
}
