//! The battery's requests, checked by a verifier Motor does not sign with:
//! the `motor-receiver` crate. Every check's request must be refused (or
//! accepted) by a correct receiver for the reason the check names, in
//! every profile; the HTTP side is tested with real receivers in
//! `crates/motor/tests/check_receiver`.

use std::time::{Duration, SystemTime};

use motor_domain::{
    contract::Contract,
    event::cap::MAX_ENVELOPE_BYTES,
    secret::{SigningKeyId, SigningSecret},
    AppId,
};
use motor_receiver::{Profile, Secret, VerifyError};
use serde_json::Value;

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
        app_id: AppId::new(),
    }
}

/// Every profile the battery grades against, the route's own
/// standard-webhooks contract included.
fn every_profile() -> Vec<CheckProfile> {
    let mut all = CheckProfile::all();
    all.push(CheckProfile::Contract(Contract::StandardWebhooks));
    all
}

/// `motor-receiver` verifies Motor's profiles; a contract's t-v1 header
/// carries the same `t=…,v1=…` under its own name, so it is read under
/// Motor's name.
fn as_motor_headers(
    profile: CheckProfile,
    headers: &[(&'static str, String)],
) -> Vec<(&'static str, String)> {
    let name = profile.signature_header();
    headers
        .iter()
        .map(|(n, v)| {
            let n = if *n == name
                && profile.signing() == motor_domain::signature::SigningProfile::TV1
            {
                motor_domain::signature::HEADER_SIGNATURE
            } else {
                *n
            };
            (n, v.clone())
        })
        .collect()
}

#[test]
fn a_correct_receiver_answers_each_request_as_its_check_expects() {
    for profile in every_profile() {
        let options = options(profile);
        let key = &options.keys[0];
        let secrets = [Secret::with_key_id(
            key.key_id.as_str(),
            key.secret.expose(),
        )];
        let keys = receiver_keys(&options, chrono::Utc::now());
        let stranger = receiver_keys(&self::options(profile), chrono::Utc::now()).remove(0);
        let verifier = Profile::parse(profile.signing().as_str()).unwrap();
        for plan in plans(&options) {
            let (headers, body) = build(&options, &plan, &keys, &stranger).unwrap();
            let headers = as_motor_headers(profile, &headers);
            let verified = verifier.verify(&headers, &body, &secrets, SystemTime::now());
            let name = format!("{profile:?} {}", plan.name);
            match plan.shape {
                Shape::Valid | Shape::StrangerFirst => {
                    let v = verified.unwrap_or_else(|e| panic!("{name}: {e}"));
                    // Motor's ids ride in headers only under its contract.
                    if profile.contract() == Contract::Motor {
                        let id = plan.delivery_id.to_string();
                        assert_eq!(v.delivery_id.as_deref(), Some(id.as_str()), "{name}");
                    }
                    if profile.spec().envelope == motor_domain::contract::EnvelopeShape::Motor {
                        assert_eq!(body, plan.envelope, "{name}");
                    }
                }
                Shape::Clock(_) => {
                    assert!(matches!(verified, Err(VerifyError::Stale { .. })), "{name}")
                }
                Shape::TamperedBody => {
                    assert_eq!(verified, Err(VerifyError::BadSignature), "{name}");
                    let text = String::from_utf8_lossy(&body);
                    assert!(text.contains("\"importe\":900"), "{name}");
                    assert!(!text.contains("\"importe\":100"), "{name}");
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
                    let header = motor_name(profile);
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

fn motor_name(profile: CheckProfile) -> &'static str {
    match profile.signing() {
        motor_domain::signature::SigningProfile::TV1 => motor_domain::signature::HEADER_SIGNATURE,
        _ => profile.signature_header(),
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
    assert_eq!(
        (retry.event_id, &retry.envelope),
        (valid.event_id, &valid.envelope)
    );
    assert_eq!(retry.delivery_id, valid.delivery_id);
    assert_eq!(
        (replay.event_id, &replay.envelope),
        (valid.event_id, &valid.envelope)
    );
    assert_ne!(replay.delivery_id, valid.delivery_id);
    assert_eq!(replay.replay_of, Some(valid.delivery_id));
    let field = |name: &str, field: &str| {
        serde_json::from_slice::<Value>(&by(name).envelope).unwrap()[field].clone()
    };
    assert!(field("seq_menor", "seq").as_i64() < field("entrega_valida", "seq").as_i64());
    assert!(
        field("seq_menor", "occurred_at").as_str()
            < field("entrega_valida", "occurred_at").as_str()
    );
    assert_eq!(by("cuerpo_grande").envelope.len(), MAX_ENVELOPE_BYTES);
    // Every other check has an event of its own.
    let mut ids: Vec<_> = plans.iter().map(|p| p.event_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), plans.len() - 2);
    assert_eq!(plans.len(), 11);
}

/// Renders one check's request under `profile` and parses its body.
fn rendered(profile: CheckProfile, name: &str) -> (Vec<(&'static str, String)>, Value) {
    let options = options(profile);
    let keys = receiver_keys(&options, chrono::Utc::now());
    let stranger = receiver_keys(&self::options(profile), chrono::Utc::now()).remove(0);
    let plans = plans(&options);
    let plan = plans.iter().find(|p| p.name == name).unwrap();
    let (headers, body) = build(&options, plan, &keys, &stranger).unwrap();
    (headers, serde_json::from_slice(&body).unwrap())
}

#[test]
fn a_contract_profile_sends_its_contracts_request_and_grades_by_its_rules() {
    use super::report::Expected;
    let header_names = |h: &[(&'static str, String)]| h.iter().map(|(n, _)| *n).collect::<Vec<_>>();

    // Visito: its envelope and two headers; a replay keeps eventId; one
    // signature only, so no second-signature check; no code but 2xx.
    let visito = CheckProfile::parse("visito").unwrap();
    let (headers, first) = rendered(visito, "entrega_valida");
    assert_eq!(
        header_names(&headers),
        ["X-Visito-Event-Id", "X-Visito-Signature"]
    );
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "eventId",
            "type",
            "schemaVersion",
            "tenantId",
            "occurredAt",
            "data"
        ]
    );
    let options = self::options(visito);
    let plans = self::plans(&options);
    for absent in ["segunda_firma_valida", "cabecera_repetida"] {
        assert!(plans.iter().all(|p| p.name != absent), "{absent}");
    }
    let by = |name: &str| plans.iter().find(|p| p.name == name).unwrap();
    for refused in [
        "timestamp_vencido",
        "timestamp_futuro",
        "cuerpo_alterado",
        "firma_incorrecta",
    ] {
        assert_eq!(by(refused).expected, Expected::Rejected, "{refused}");
    }
    assert_eq!(
        by("reproduccion").effect_key(&options),
        by("entrega_valida").effect_key(&options)
    );

    // Asixto: one header; a replay carries a new id and replay_of naming
    // the first id, and the effect asked about is the replay's own id.
    let asixto = CheckProfile::parse("asixto").unwrap();
    let options = self::options(asixto);
    let plans = self::plans(&options);
    let by = |name: &str| plans.iter().find(|p| p.name == name).unwrap();
    let keys = receiver_keys(&options, chrono::Utc::now());
    let (headers, first) = build(&options, by("entrega_valida"), &keys, &keys[0]).unwrap();
    assert_eq!(header_names(&headers), ["Asixto-Signature"]);
    let first: Value = serde_json::from_slice(&first).unwrap();
    let (_, replay) = build(&options, by("reproduccion"), &keys, &keys[0]).unwrap();
    let replay: Value = serde_json::from_slice(&replay).unwrap();
    assert_ne!(replay["id"], first["id"]);
    assert_eq!(replay["replay_of"], first["id"]);
    assert_eq!(
        by("reproduccion").effect_key(&options),
        replay["id"].as_str().unwrap()
    );
    assert_eq!(
        by("entrega_valida").effect_key(&options),
        first["id"].as_str().unwrap()
    );
    assert!(plans.iter().any(|p| p.name == "segunda_firma_valida"));
    assert_eq!(by("cuerpo_alterado").expected, Expected::Rejected);
    assert_eq!(by("cabecera_repetida").expected, Expected::Rejected);

    // Motor's own codes stay under Motor's contract.
    let options = self::options(CheckProfile::parse("motor").unwrap());
    let plans = self::plans(&options);
    let by = |name: &str| plans.iter().find(|p| p.name == name).unwrap();
    assert_eq!(by("timestamp_vencido").expected, Expected::Status(408));
    assert_eq!(by("cabecera_repetida").expected, Expected::Refused);
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
    assert_eq!(CheckProfile::parse("visitor"), None);
    assert_eq!(CheckProfile::parse("motor"), CheckProfile::parse("mw-v1"));
    assert_eq!(
        CheckProfile::names(),
        [
            "mw-v1",
            "motor",
            "t-v1",
            "standard-webhooks",
            "visito",
            "asixto"
        ]
    );
}
