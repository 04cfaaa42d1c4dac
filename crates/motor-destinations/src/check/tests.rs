//! The battery's requests, checked by a verifier Motor does not sign with:
//! the `motor-receiver` crate. Every check's request must be refused (or
//! accepted) by a correct receiver for the reason the check names, in
//! every profile; the HTTP side is tested with real receivers in
//! `crates/motor/tests/check_receiver`.

use std::time::{Duration, SystemTime};

use motor_domain::{
    event::cap::MAX_ENVELOPE_BYTES,
    secret::{SigningKeyId, SigningSecret},
};
use motor_receiver::{Profile, Secret, VerifyError};

use super::{
    battery::{build, plans, receiver_keys, Shape},
    CheckOptions, CheckProfile, ReceiverKey, DEFAULT_TIMEOUT,
};

fn options(profile: CheckProfile) -> CheckOptions {
    CheckOptions {
        url: "http://127.0.0.1:1/".into(),
        profile,
        keys: vec![ReceiverKey {
            key_id: SigningKeyId::generate(),
            secret: SigningSecret::generate(),
        }],
        timeout: DEFAULT_TIMEOUT,
        effect_url: None,
        event_type: "webhook.test".into(),
    }
}

#[test]
fn a_correct_receiver_answers_each_request_as_its_check_expects() {
    for profile in CheckProfile::all() {
        let options = options(profile);
        let key = &options.keys[0];
        let secrets = [Secret::with_key_id(
            key.key_id.as_str(),
            key.secret.expose(),
        )];
        let keys = receiver_keys(&options, chrono::Utc::now());
        let stranger = receiver_keys(&self::options(profile), chrono::Utc::now()).remove(0);
        let verifier = Profile::parse(profile.as_str()).unwrap();
        for plan in plans(&options) {
            let (headers, body) = build(&options, &plan, &keys, &stranger).unwrap();
            let verified = verifier.verify(&headers, &body, &secrets, SystemTime::now());
            let name = format!("{profile:?} {}", plan.name);
            match plan.shape {
                Shape::Valid | Shape::StrangerFirst => {
                    let v = verified.unwrap_or_else(|e| panic!("{name}: {e}"));
                    assert_eq!(v.delivery_id.as_deref(), Some(plan.delivery_id.as_str()));
                    assert_eq!(body, plan.body, "{name}");
                }
                Shape::Clock(_) => {
                    assert!(matches!(verified, Err(VerifyError::Stale { .. })), "{name}")
                }
                Shape::TamperedBody => {
                    assert_eq!(verified, Err(VerifyError::BadSignature), "{name}");
                    assert_ne!(body, plan.body, "{name}");
                    assert_eq!(body.len(), plan.body.len(), "{name}");
                    serde_json::from_slice::<serde_json::Value>(&body).expect("still JSON");
                }
                Shape::StrangerOnly => {
                    assert_eq!(verified, Err(VerifyError::BadSignature), "{name}")
                }
                Shape::RepeatedHeader => {
                    assert!(
                        matches!(verified, Err(VerifyError::RepeatedHeader(_))),
                        "{name}"
                    );
                    // Each line alone: the first verifies, the second not.
                    let header = profile.signature_header();
                    let lines: Vec<usize> = (0..headers.len())
                        .filter(|&i| headers[i].0 == header)
                        .collect();
                    assert_eq!(lines.len(), 2, "{name}");
                    let without = |drop: usize| {
                        let mut h = headers.clone();
                        h.remove(drop);
                        verifier.verify(&h, &body, &secrets, SystemTime::now())
                    };
                    assert!(without(lines[1]).is_ok(), "{name}");
                    assert_eq!(without(lines[0]), Err(VerifyError::BadSignature), "{name}");
                }
            }
        }
    }
}

#[test]
fn the_plans_hold_the_events_the_checks_need() {
    let options = options(CheckProfile::parse("mw-v1").unwrap());
    let plans = plans(&options);
    let by = |name: &str| plans.iter().find(|p| p.name == name).unwrap();
    let (valid, retry, replay) = (
        by("entrega_valida"),
        by("evento_repetido"),
        by("reproduccion"),
    );
    // A retry: same event, same delivery. A replay: same event, new
    // delivery naming the first.
    assert_eq!((retry.event_id, &retry.body), (valid.event_id, &valid.body));
    assert_eq!(retry.delivery_id, valid.delivery_id);
    assert_eq!(
        (replay.event_id, &replay.body),
        (valid.event_id, &valid.body)
    );
    assert_ne!(replay.delivery_id, valid.delivery_id);
    assert_eq!(
        replay.replay_of.as_deref(),
        Some(valid.delivery_id.as_str())
    );
    let seq = |name: &str| {
        serde_json::from_slice::<serde_json::Value>(&by(name).body).unwrap()["seq"]
            .as_i64()
            .unwrap()
    };
    assert!(seq("seq_menor") < seq("entrega_valida"));
    assert_eq!(by("cuerpo_grande").body.len(), MAX_ENVELOPE_BYTES);
    // Every other check has an event of its own.
    let mut ids: Vec<_> = plans.iter().map(|p| p.event_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), plans.len() - 2);
}

#[test]
fn options_are_validated_before_anything_is_sent() {
    let ok = options(CheckProfile::parse("t-v1").unwrap());
    assert_eq!(ok.validate(), Ok(()));
    let with = |f: &dyn Fn(&mut CheckOptions)| {
        let mut o = ok.clone();
        f(&mut o);
        o.validate().unwrap_err().to_string()
    };
    assert!(with(&|o| o.url = "ftp://x/".into()).starts_with("url"));
    assert!(with(&|o| o.url = "nope".into()).starts_with("url"));
    assert!(with(&|o| o.effect_url = Some("http://x/efectos".into())).starts_with("effect url"));
    assert!(with(&|o| o.keys.clear()).starts_with("secret"));
    assert!(with(&|o| o.timeout = Duration::from_secs(61)).starts_with("timeout"));
    assert_eq!(CheckProfile::parse("visito"), None);
}
