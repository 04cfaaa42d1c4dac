use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use super::*;
use crate::{
    contract::Contract,
    envelope::{Envelope, SCHEMA_VERSION},
    event::{
        cap::{envelope_overhead, MAX_ENVELOPE_BYTES},
        Origin,
    },
    ids::InstanceId,
    secret::{IssuedSecret, SigningKeyId, SigningSecret},
    signature::sign_profile,
    time,
};

/// Seed 003, "1 · Lo que llega", as printed.
const ASIXTO_SEED_EXAMPLE: &str = r#"{
  "id": "9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33",
  "type": "job.succeeded",
  "created": 1787923200,
  "environment": "live",
  "data": {}
}"#;

const APP: &str = "0a1b2c3d-0000-4000-8000-0000000000a9";
const DELIVERY: &str = "3c9a7e55-0000-4000-8000-0000000000e1";
const REPLAY_DELIVERY: &str = "3c9a7e55-0000-4000-8000-0000000000e2";

fn envelope(event_id: &str, event_type: &str, occurred_at: &str, data: Value) -> Envelope {
    Envelope {
        schema_version: SCHEMA_VERSION,
        event_id: event_id.parse().unwrap(),
        instance_id: "8a1d2c3e-0000-4000-8000-0000000000a1".parse().unwrap(),
        seq: 1187,
        event_type: event_type.into(),
        occurred_at: time::parse(occurred_at).unwrap(),
        received_at: time::parse(occurred_at).unwrap(),
        generation: 1,
        origin: Origin::Live,
        command_id: None,
        data,
    }
}

fn key(secret: SigningSecret, id: &str, created: &str, expires: Option<&str>) -> SigningKey {
    SigningKey {
        key_id: SigningKeyId::parse(id).unwrap(),
        secret,
        created_at: time::parse(created).unwrap(),
        expires_at: expires.map(|e| time::parse(e).unwrap()),
    }
}

fn now() -> Timestamp {
    time::parse("2026-10-24T15:30:00Z").unwrap()
}

/// A rotation live at [`now`]: `whk_0b` new, `whk_0a` old until 16:00.
fn rotation() -> Vec<SigningKey> {
    vec![
        key(
            SigningSecret::any_for_tests("whsec_old"),
            "whk_0a",
            "2026-10-24T10:00:00Z",
            Some("2026-10-24T16:00:00Z"),
        ),
        key(
            SigningSecret::any_for_tests("whsec_new"),
            "whk_0b",
            "2026-10-24T15:00:00Z",
            None,
        ),
    ]
}

fn input<'a>(
    stored: &'a [u8],
    keys: &'a [SigningKey],
    replay: Option<Replay<'a>>,
) -> RenderInput<'a> {
    RenderInput {
        envelope: stored,
        event_id: stored_id(stored),
        app_id: APP.parse().unwrap(),
        environment: Environment::Live,
        delivery_id: if replay.is_some() {
            REPLAY_DELIVERY
        } else {
            DELIVERY
        }
        .parse()
        .unwrap(),
        replay,
        keys,
        profile: SigningProfile::MwV1,
        now: now(),
    }
}

fn hmac_hex(secret: &str, parts: &[&[u8]]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    for p in parts {
        mac.update(p);
    }
    hex::encode(mac.finalize().into_bytes())
}

/// The envelope's `event_id`, as the ledger's row holds it beside the
/// envelope (nil for bytes that are no envelope).
pub(super) fn stored_id(stored: &[u8]) -> EventId {
    serde_json::from_slice::<Value>(stored)
        .ok()
        .and_then(|v| v["event_id"].as_str()?.parse().ok())
        .unwrap_or(EventId::from_uuid(uuid::Uuid::nil()))
}

fn names<'r>(r: &'r Rendered<'_>) -> Vec<&'r str> {
    r.headers.iter().map(|(n, _)| *n).collect()
}

#[test]
fn asixto_reproduces_the_seeds_example_byte_for_byte() {
    let stored = envelope(
        "9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33",
        "job.succeeded",
        "2026-08-28T13:20:00Z",
        json!({}),
    )
    .to_json();
    let keys = rotation();
    let r = render(
        Contract::Asixto.spec(),
        &input(stored.as_bytes(), &keys, None),
    )
    .unwrap();
    // The seed's example, compact and in its field order.
    let seed: Value = serde_json::from_str(ASIXTO_SEED_EXAMPLE).unwrap();
    assert_eq!(
        std::str::from_utf8(&r.body).unwrap(),
        serde_json::to_string(&seed).unwrap()
    );
    assert_eq!(
        &*r.body,
        br#"{"id":"9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33","type":"job.succeeded","created":1787923200,"environment":"live","data":{}}"#
    );
    // One header, `t=…,v1=…` with one v1 per live key, newest first.
    assert_eq!(names(&r), ["Asixto-Signature"]);
    let t = now().timestamp().to_string();
    let expected = format!(
        "t={t},v1={},v1={}",
        hmac_hex("whsec_new", &[t.as_bytes(), b".", &r.body]),
        hmac_hex("whsec_old", &[t.as_bytes(), b".", &r.body]),
    );
    assert_eq!(r.header("Asixto-Signature"), Some(expected.as_str()));
    assert_eq!(r.key_ids, ["whk_0b", "whk_0a"]);
}

#[test]
fn asixto_environment_and_a_replays_new_id_with_replay_of() {
    let stored = envelope(
        "9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33",
        "job.failed",
        "2026-08-28T13:20:00.999Z",
        json!({"status": "failed", "metadata": null}),
    )
    .to_json();
    let keys = rotation();
    let spec = Contract::Asixto.spec();
    let mut test_env = input(stored.as_bytes(), &keys, None);
    test_env.environment = Environment::Test;
    let first = render(spec, &test_env).unwrap();
    assert_eq!(
        &*first.body,
        br#"{"id":"9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33","type":"job.failed","created":1787923200,"environment":"test","data":{"status":"failed","metadata":null}}"#
    );
    let replay = Replay {
        original_delivery: Some(DELIVERY),
    };
    let again = render(spec, &input(stored.as_bytes(), &keys, Some(replay))).unwrap();
    assert_eq!(
        &*again.body,
        format!(
            r#"{{"id":"{REPLAY_DELIVERY}","type":"job.failed","created":1787923200,"environment":"live","replay_of":"9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33","data":{{"status":"failed","metadata":null}}}}"#
        )
        .as_bytes()
    );
    // A replay by range, with no original delivery row: the same body.
    let by_range = render(
        spec,
        &input(
            stored.as_bytes(),
            &keys,
            Some(Replay {
                original_delivery: None,
            }),
        ),
    )
    .unwrap();
    assert_eq!(by_range.body, again.body);
    assert_eq!(names(&again), ["Asixto-Signature"]);
}

#[test]
fn visito_has_the_seeds_fields_in_its_order_and_signs_with_the_newest_key_only() {
    let stored = envelope(
        "e1f0c2d4-0000-4000-8000-000000001187",
        "message.created",
        "2026-10-24T15:08:12.250Z",
        json!({"direction": "inbound", "z": 1.5e3, "a": "\u{f1}"}),
    )
    .to_json();
    let keys = rotation();
    let r = render(
        Contract::Visito.spec(),
        &input(stored.as_bytes(), &keys, None),
    )
    .unwrap();
    let expected_body = format!(
        r#"{{"eventId":"e1f0c2d4-0000-4000-8000-000000001187","type":"message.created","schemaVersion":"1.0","tenantId":"{APP}","occurredAt":"2026-10-24T15:08:12.250Z","data":{{"direction":"inbound","z":1500.0,"a":"ñ"}}}}"#
    );
    assert_eq!(std::str::from_utf8(&r.body).unwrap(), expected_body);
    let parsed: serde_json::Map<String, Value> = serde_json::from_slice(&r.body).unwrap();
    let keys_in_order: Vec<&str> = parsed.keys().map(String::as_str).collect();
    assert_eq!(
        keys_in_order,
        [
            "eventId",
            "type",
            "schemaVersion",
            "tenantId",
            "occurredAt",
            "data"
        ]
    );
    assert_eq!(names(&r), ["X-Visito-Event-Id", "X-Visito-Signature"]);
    assert_eq!(
        r.header("X-Visito-Event-Id"),
        Some("e1f0c2d4-0000-4000-8000-000000001187")
    );
    // "La rotación del secreto aplica inmediatamente": only the new key
    // signs, even while Motor's window keeps the old one live.
    let t = now().timestamp().to_string();
    let expected = format!(
        "t={t},v1={}",
        hmac_hex("whsec_new", &[t.as_bytes(), b".", &r.body])
    );
    assert_eq!(r.header("X-Visito-Signature"), Some(expected.as_str()));
    assert_eq!(r.key_ids, ["whk_0b"]);
    // A manual retry keeps eventId: the same body.
    let retry = Replay {
        original_delivery: Some(DELIVERY),
    };
    let again = render(
        Contract::Visito.spec(),
        &input(stored.as_bytes(), &keys, Some(retry)),
    )
    .unwrap();
    assert_eq!(again.body, r.body);
    assert_eq!(names(&again), ["X-Visito-Event-Id", "X-Visito-Signature"]);
}

#[test]
fn data_travels_as_stored_bytes() {
    // Bytes serde_json would not write itself: kept as they are.
    let stored = br#"{"schema_version":1,"event_id":"e1f0c2d4-0000-4000-8000-000000001187","instance_id":"8a1d2c3e-0000-4000-8000-0000000000a1","seq":1,"type":"t","occurred_at":"2026-10-24T15:08:12Z","received_at":"2026-10-24T15:08:12Z","generation":1,"origin":"live","data":{"n":1.0e2,"s":"\u00f1\/"}}"#;
    let keys = rotation();
    for c in [Contract::Visito, Contract::Asixto] {
        let r = render(c.spec(), &input(stored, &keys, None)).unwrap();
        let text = std::str::from_utf8(&r.body).unwrap();
        assert!(
            text.ends_with(r#""data":{"n":1.0e2,"s":"\u00f1\/"}}"#),
            "{c}: {text}"
        );
    }
}

#[test]
fn motor_is_todays_request_exactly() {
    // What motor-destinations' attempt sends today: the stored bytes, the
    // event and delivery ids, X-MW-Replay-Of on a replay, then the
    // profile's headers.
    let stored = envelope(
        "e1f0c2d4-0000-4000-8000-000000001187",
        "message.received",
        "2026-10-24T15:08:12Z",
        json!({"texto": "hola"}),
    )
    .to_json();
    let keys = rotation();
    for profile in SigningProfile::ALL {
        for replay in [
            None,
            Some(Replay {
                original_delivery: Some(DELIVERY),
            }),
        ] {
            let mut i = input(stored.as_bytes(), &keys, replay);
            i.profile = profile;
            let r = render(Contract::Motor.spec(), &i).unwrap();
            assert_eq!(r.body, stored.as_bytes());
            let delivery = i.delivery_id.to_string();
            let signed = sign_profile(profile, &keys, now(), &delivery, stored.as_bytes()).unwrap();
            let mut expected: Vec<(&str, String)> = vec![
                (
                    "X-MW-Event-Id",
                    "e1f0c2d4-0000-4000-8000-000000001187".into(),
                ),
                ("X-MW-Delivery-Id", delivery.clone()),
            ];
            if replay.is_some() {
                expected.push(("X-MW-Replay-Of", DELIVERY.into()));
            }
            expected.extend(signed.pairs().map(|(n, v)| (n, v.to_owned())));
            assert_eq!(r.headers, expected, "{profile}");
            assert_eq!(r.key_ids, signed.key_id_list());
        }
    }
}

#[test]
fn standard_webhooks_is_motors_envelope_under_the_specs_headers_only() {
    let stored = envelope(
        "e1f0c2d4-0000-4000-8000-000000001187",
        "message.received",
        "2026-10-24T15:08:12Z",
        json!({}),
    )
    .to_json();
    let keys = vec![key(
        IssuedSecret::generate().secret,
        "whk_0c",
        "2026-10-24T15:00:00Z",
        None,
    )];
    let mut i = input(stored.as_bytes(), &keys, None);
    i.profile = SigningProfile::MwV1; // not the contract's to choose
    let r = render(Contract::StandardWebhooks.spec(), &i).unwrap();
    assert_eq!(r.body, stored.as_bytes());
    assert_eq!(
        names(&r),
        ["webhook-id", "webhook-timestamp", "webhook-signature"]
    );
    assert_eq!(r.header("webhook-id"), Some(DELIVERY));
}

/// Motor's shape sends the stored bytes themselves (borrowed, not copied)
/// and reads nothing of them: its event id header is the one the ledger's
/// row gave, and bytes no other shape could parse go out as they are.
#[test]
fn motors_shape_sends_the_stored_bytes_themselves_with_the_rows_event_id() {
    let keys = rotation();
    let foreign: &[u8] = b"{\"seq\":1}";
    let mut given = input(foreign, &keys, None);
    given.event_id = "e1f0c2d4-0000-4000-8000-000000001187".parse().unwrap();
    let r = render(Contract::Motor.spec(), &given).unwrap();
    assert!(
        matches!(&r.body, std::borrow::Cow::Borrowed(b) if std::ptr::eq(*b, foreign)),
        "the body is the input's envelope, not a copy"
    );
    assert_eq!(
        r.header("X-MW-Event-Id"),
        Some("e1f0c2d4-0000-4000-8000-000000001187")
    );
}

#[test]
fn no_live_key_and_a_foreign_envelope_are_errors() {
    let stored = envelope(
        "e1f0c2d4-0000-4000-8000-000000001187",
        "t",
        "2026-10-24T15:08:12Z",
        json!({}),
    )
    .to_json();
    let expired = vec![key(
        SigningSecret::any_for_tests("whsec_x"),
        "whk_0a",
        "2026-10-24T10:00:00Z",
        Some("2026-10-24T11:00:00Z"),
    )];
    for c in Contract::ALL {
        let err = render(c.spec(), &input(stored.as_bytes(), &expired, None)).unwrap_err();
        assert!(matches!(err, RenderError::Sign(_)), "{c}: {err}");
    }
    // Motor's shape (Motor's and standard-webhooks') reads none of the
    // envelope (the test above).
    let parsed = Contract::ALL
        .into_iter()
        .filter(|c| !matches!(c.spec().envelope, EnvelopeShape::Motor));
    for c in parsed {
        let err = render(c.spec(), &input(b"{\"seq\":1}", &rotation(), None)).unwrap_err();
        assert!(matches!(err, RenderError::Envelope(_)), "{c}: {err}");
    }
}

#[test]
fn environments_parse_from_their_wire_names() {
    assert_eq!(Environment::parse("live"), Ok(Environment::Live));
    assert_eq!(Environment::parse("test"), Ok(Environment::Test));
    assert_eq!(Environment::default(), Environment::Live);
    for bad in ["", "Live", "prod", "sandbox"] {
        assert_eq!(Environment::parse(bad).unwrap_err().field, "entorno");
    }
}

/// The door caps Motor's envelope at 256 KB counting its own fields at
/// their widest; every other body is smaller than Motor's narrowest
/// envelope around the same `data`, so no contract's body can pass the
/// cap either.
#[test]
fn no_body_is_larger_than_motors_envelope() {
    let widest_type = "t".repeat(200);
    let data = json!({"metadata": {"a": 1}});
    // Motor's narrowest envelope: one-digit seq and generation, whole
    // seconds, no command id.
    let narrow = Envelope {
        schema_version: SCHEMA_VERSION,
        event_id: "e1f0c2d4-0000-4000-8000-000000001187".parse().unwrap(),
        instance_id: InstanceId::new(),
        seq: 1,
        event_type: widest_type.clone(),
        // The widest occurred_at (nanoseconds) reaches Visito's body, the
        // narrowest one the envelope around it.
        occurred_at: time::parse("9999-12-31T23:59:59.999999999Z").unwrap(),
        received_at: time::parse("2026-10-24T15:08:12Z").unwrap(),
        generation: 1,
        origin: Origin::Live,
        command_id: None,
        data,
    };
    let stored = narrow.to_json();
    let keys = rotation();
    for c in Contract::ALL {
        for replay in [
            None,
            Some(Replay {
                original_delivery: None,
            }),
        ] {
            let mut i = input(stored.as_bytes(), &keys, replay);
            i.environment = Environment::Test;
            let r = render(c.spec(), &i).unwrap();
            assert!(
                r.body.len() <= stored.len(),
                "{c}: {} > {}",
                r.body.len(),
                stored.len()
            );
        }
    }
    assert!(envelope_overhead(&widest_type, Origin::Live, None) < MAX_ENVELOPE_BYTES);
}

mod any_event {
    use std::time::{Duration as StdDuration, UNIX_EPOCH};

    use motor_receiver::{Profile, Secret};
    use proptest::prelude::*;

    use super::*;

    fn any_data() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            ".{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(".{0,8}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever the event, Visito's and Asixto's bodies carry its
        /// data unchanged under their own fields, and Motor's t-v1
        /// verifier (the receiver crate) accepts their signature header
        /// with either key of a rotation.
        #[test]
        fn bodies_carry_the_data_and_verify(
            data in any_data(),
            event_type in "[a-z]{1,10}(\\.[a-z_]{1,10}){0,2}",
            secs in 0i64..4_000_000_000,
            replayed in any::<bool>(),
        ) {
            let at = chrono::DateTime::from_timestamp(secs, 0).unwrap();
            let stored = envelope("e1f0c2d4-0000-4000-8000-000000001187", &event_type, &time::format(&at), data.clone()).to_json();
            let old = IssuedSecret::generate();
            let new = IssuedSecret::generate();
            let keys = vec![
                SigningKey { key_id: old.key_id.clone(), secret: old.secret.clone(), created_at: at - chrono::Duration::days(1), expires_at: Some(at + chrono::Duration::hours(1)) },
                SigningKey { key_id: new.key_id.clone(), secret: new.secret.clone(), created_at: at - chrono::Duration::minutes(1), expires_at: None },
            ];
            let replay = replayed.then_some(Replay { original_delivery: None });
            let mut i = input(stored.as_bytes(), &keys, replay);
            i.now = at;
            for (contract, header) in [(Contract::Visito, "X-Visito-Signature"), (Contract::Asixto, "Asixto-Signature")] {
                let r = render(contract.spec(), &i).unwrap();
                let body: Value = serde_json::from_slice(&r.body).unwrap();
                prop_assert_eq!(&body["data"], &data);
                prop_assert_eq!(&body["type"], &json!(event_type));
                let value = r.header(header).unwrap();
                let as_motor = [("X-MW-Signature", value)];
                let clock = UNIX_EPOCH + StdDuration::from_secs(secs as u64);
                let verify = |secret: &IssuedSecret| {
                    Profile::parse("t-v1").unwrap().verify(&as_motor, &r.body, &[Secret::new(secret.secret.expose())], clock)
                };
                prop_assert!(verify(&new).is_ok(), "{contract}");
                // Visito signs with the newest key only; Asixto with both.
                prop_assert_eq!(verify(&old).is_ok(), contract == Contract::Asixto, "{}", contract);
            }
        }
    }
}
