use serde_json::json;

use super::*;
use crate::error::FieldErrorKind;

#[test]
fn wire_names_round_trip_and_the_default_is_motor() {
    let names: Vec<&str> = Contract::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(names, ["motor", "visito", "asixto", "standard-webhooks"]);
    for c in Contract::ALL {
        assert_eq!(Contract::parse(c.as_str()), Ok(c));
        assert_eq!(c.to_string(), c.as_str());
        assert_eq!(c.spec().contract, c, "each spec is its own contract's");
    }
    assert_eq!(Contract::default(), Contract::Motor);
}

#[test]
fn anything_else_names_contrato() {
    for bad in [
        "",
        "Motor",
        "VISITO",
        "standard_webhooks",
        "mw-v1",
        " asixto",
        "stripe",
    ] {
        let err = Contract::parse(bad).unwrap_err();
        assert_eq!(err.field, "contrato", "{bad:?}");
        assert_eq!(err.kind, FieldErrorKind::Invalid);
        assert!(err.message.contains("visito"), "{}", err.message);
    }
}

#[test]
fn the_table_holds_each_documents_values() {
    let s = |c: Contract| c.spec();
    // Envelope and ladders.
    assert_eq!(s(Contract::Motor).envelope, EnvelopeShape::Motor);
    assert_eq!(s(Contract::Visito).envelope, EnvelopeShape::Visito);
    assert_eq!(s(Contract::Asixto).envelope, EnvelopeShape::Asixto);
    assert_eq!(s(Contract::StandardWebhooks).envelope, EnvelopeShape::Motor);
    assert_eq!(s(Contract::Motor).ladder.id().to_string(), "motor@1");
    assert_eq!(s(Contract::Visito).ladder.id().to_string(), "visito@1");
    assert_eq!(s(Contract::Asixto).ladder.id().to_string(), "asixto@1");
    assert_eq!(
        s(Contract::StandardWebhooks).ladder.id().to_string(),
        "motor@1"
    );
    // Signatures.
    let sig = |c: Contract| s(c).signature;
    assert_eq!(sig(Contract::Motor).profile, SigningProfile::MwV1);
    assert!(sig(Contract::Motor).profile_choosable);
    assert_eq!(sig(Contract::Visito).profile, SigningProfile::TV1);
    assert_eq!(sig(Contract::Visito).signature_header, "X-Visito-Signature");
    assert_eq!(sig(Contract::Visito).keys, KeyUse::NewestOnly);
    assert_eq!(sig(Contract::Asixto).profile, SigningProfile::TV1);
    assert_eq!(sig(Contract::Asixto).signature_header, "Asixto-Signature");
    assert_eq!(sig(Contract::Asixto).keys, KeyUse::AllLive);
    assert_eq!(
        sig(Contract::StandardWebhooks).profile,
        SigningProfile::StandardWebhooks
    );
    for c in [
        Contract::Visito,
        Contract::Asixto,
        Contract::StandardWebhooks,
    ] {
        assert!(!sig(c).profile_choosable, "{c}");
    }
    // Id headers.
    assert_eq!(s(Contract::Visito).ids.event_id, Some("X-Visito-Event-Id"));
    assert_eq!(s(Contract::Visito).ids.delivery_id, None);
    assert_eq!(
        s(Contract::Asixto).ids,
        IdHeaders {
            event_id: None,
            delivery_id: None,
            replay_of: None
        }
    );
    assert_eq!(s(Contract::Motor).ids.event_id, Some("X-MW-Event-Id"));
    assert_eq!(s(Contract::Motor).ids.delivery_id, Some("X-MW-Delivery-Id"));
    assert_eq!(s(Contract::Motor).ids.replay_of, Some("X-MW-Replay-Of"));
    assert_eq!(s(Contract::Visito).ids.replay_of, None);
    // Timeouts, replay, deactivation, ordering.
    assert_eq!(
        s(Contract::Visito).attempt_timeout,
        Some(Duration::from_secs(10))
    );
    assert_eq!(s(Contract::Motor).attempt_timeout, None);
    assert_eq!(
        s(Contract::Asixto).replay,
        ReplayIdentity::NewIdWithReplayOf
    );
    assert_eq!(s(Contract::Visito).replay, ReplayIdentity::SameId);
    assert_eq!(s(Contract::Visito).deactivation, Deactivation::Cancel);
    assert_eq!(s(Contract::Motor).deactivation, Deactivation::Accumulate);
    assert_eq!(s(Contract::Asixto).deactivation, Deactivation::Accumulate);
    let orderings: Vec<&str> = Contract::ALL
        .iter()
        .map(|c| c.spec().ordering.as_str())
        .collect();
    assert_eq!(orderings, ["instancia", "ninguno", "clave", "instancia"]);
    // Caps and retention.
    for c in Contract::ALL {
        assert_eq!(s(c).max_body_bytes, 256 * 1024, "{c}");
        assert_eq!(s(c).receiver_window, Duration::from_secs(300), "{c}");
    }
    assert_eq!(s(Contract::Asixto).max_metadata_bytes, Some(4096));
    assert_eq!(s(Contract::Motor).max_metadata_bytes, None);
    let thirty_days = Some(Duration::from_secs(30 * 24 * 3600));
    assert_eq!(
        s(Contract::Visito).retention,
        Retention {
            delivered: thirty_days,
            failed: thirty_days,
            cancelled: thirty_days,
        }
    );
    // The others leave every finished row to the operator's setting (and
    // the DLQ's rule).
    for c in [
        Contract::Motor,
        Contract::Asixto,
        Contract::StandardWebhooks,
    ] {
        assert!(!s(c).retention.is_own(), "{c}");
    }
    assert!(s(Contract::Visito).retention.is_own());
}

#[test]
fn asixto_caps_metadata_at_four_kb_at_the_door() {
    let asixto = Contract::Asixto.spec();
    // `{"a":"…"}` is 8 bytes around the string.
    let fits = json!({"result": 1, "metadata": {"a": "x".repeat(4096 - 8)}});
    assert_eq!(asixto.check_metadata(&fits), Ok(()));
    let over = json!({"metadata": {"a": "x".repeat(4096 - 7)}});
    let err = asixto.check_metadata(&over).unwrap_err();
    assert_eq!(err.field, "data.metadata");
    assert_eq!(err.kind, FieldErrorKind::Invalid);
    assert!(
        err.message.contains("4096") && err.message.contains("4097"),
        "{}",
        err.message
    );
    // No metadata, or data that is no object: nothing to cap.
    assert_eq!(
        asixto.check_metadata(&json!({"x": "y".repeat(9000)})),
        Ok(())
    );
    assert_eq!(asixto.check_metadata(&json!("z".repeat(9000))), Ok(()));
    // The other contracts have no cap of their own.
    for c in [
        Contract::Motor,
        Contract::Visito,
        Contract::StandardWebhooks,
    ] {
        assert_eq!(c.spec().check_metadata(&over), Ok(()), "{c}");
    }
}

#[test]
fn deactivation_is_the_tables_rule() {
    use crate::{
        delivery::CancelReason as R,
        subscription::{SubscriptionState as S, SuspensionReason as M},
    };
    // Only Visito cancels (seed 001); the others accumulate.
    assert_eq!(Contract::cancelling(), ["visito"]);
    let cancel = Contract::Visito.spec().deactivation;
    assert_eq!(cancel, Deactivation::Cancel);
    let table: [(S, S, Option<M>, Option<R>); 13] = [
        (S::Active, S::Paused, None, Some(R::SubscriptionPaused)),
        (S::Active, S::Deleted, None, Some(R::SubscriptionDeleted)),
        (S::Paused, S::Deleted, None, Some(R::SubscriptionDeleted)),
        (S::Suspended, S::Deleted, None, Some(R::SubscriptionDeleted)),
        (
            S::Active,
            S::Suspended,
            Some(M::Rejected401),
            Some(R::SubscriptionSuspended),
        ),
        (
            S::Active,
            S::Suspended,
            Some(M::KeyRevoked),
            Some(R::KeyRevoked),
        ),
        (
            S::Paused,
            S::Suspended,
            Some(M::KeyExpired),
            Some(R::KeyExpired),
        ),
        (
            S::Active,
            S::Suspended,
            Some(M::KeyUnderScoped),
            Some(R::KeyUnderScoped),
        ),
        // Reactivation cancels what reached it meanwhile.
        (S::Paused, S::Active, None, Some(R::SubscriptionPaused)),
        (
            S::Suspended,
            S::Active,
            Some(M::SustainedFailures),
            Some(R::SubscriptionSuspended),
        ),
        (
            S::Suspended,
            S::Active,
            Some(M::KeyRevoked),
            Some(R::KeyRevoked),
        ),
        // No change, nothing.
        (S::Active, S::Active, None, None),
        (S::Paused, S::Paused, None, None),
    ];
    for (from, to, why, want) in table {
        assert_eq!(
            cancel.on_state_change(from, to, why),
            want,
            "{from:?} -> {to:?} {why:?}"
        );
        // Accumulate never cancels.
        for c in [
            Contract::Motor,
            Contract::Asixto,
            Contract::StandardWebhooks,
        ] {
            assert_eq!(
                c.spec().deactivation.on_state_change(from, to, why),
                None,
                "{c}"
            );
        }
    }
}

#[test]
fn the_door_caps_every_event_of_a_request_before_the_body_cap() {
    let asixto = Contract::Asixto.spec();
    let small = json!({"type": "job.succeeded", "data": {"metadata": {"a": 1}}});
    let big = json!({"type": "job.succeeded",
                     "data": {"metadata": {"a": "x".repeat(4096)}}});
    // So big a result that the body cap would drop `metadata`: the door
    // still refuses the oversized metadata first.
    let huge = json!({"type": "job.succeeded",
                      "data": {"result": "r".repeat(300 * 1024),
                               "metadata": {"a": "x".repeat(4096)}}});
    for (body, field) in [
        (small.clone(), None),
        (big.clone(), Some("data.metadata")),
        (huge, Some("data.metadata")),
        (json!([small.clone(), small.clone()]), None),
        (
            json!([small.clone(), big.clone()]),
            Some("[1].data.metadata"),
        ),
        (json!([big.clone(), small]), Some("[0].data.metadata")),
        (json!({"type": "t"}), None),
        (json!([1, "x"]), None),
    ] {
        let got = asixto.check_request_metadata(&body).err().map(|e| e.field);
        assert_eq!(got.as_deref(), field, "expected {field:?}");
    }
    for c in [
        Contract::Motor,
        Contract::Visito,
        Contract::StandardWebhooks,
    ] {
        assert_eq!(c.spec().check_request_metadata(&big), Ok(()), "{c}");
    }
}

#[test]
fn orderings_parse_by_their_wire_names_only() {
    for o in Ordering::ALL {
        assert_eq!(Ordering::parse(o.as_str()).unwrap(), o);
    }
    for bad in ["Instancia", "key", "", "ordenado", "clave "] {
        let e = Ordering::parse(bad).unwrap_err();
        assert_eq!(e.field, "orden", "{bad:?}");
        assert!(e.message.contains("instancia, clave, ninguno"));
    }
    assert!(Ordering::Instance.is_ordered() && Ordering::Key.is_ordered());
    assert!(!Ordering::Unordered.is_ordered());
    assert_eq!(Ordering::from_ordered(true), Ordering::Instance);
    assert_eq!(Ordering::from_ordered(false), Ordering::Unordered);
}
