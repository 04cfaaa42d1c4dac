use chrono::TimeDelta;
use proptest::prelude::*;
use serde_json::json;

use super::*;

fn now() -> Timestamp {
    time::parse("2026-10-24T15:00:00Z").unwrap()
}

fn send(chat: &str, content: &Value) -> Result<NewCommand, FieldError> {
    NewCommand::send(
        RawSend {
            chat: Some(chat),
            content: Some(content),
            options: RawOptions::default(),
        },
        now(),
    )
}

fn operation(kind: &str, parameters: Option<&Value>) -> Result<NewCommand, FieldError> {
    NewCommand::operation(
        RawOperation {
            kind: Some(kind),
            parameters,
            options: RawOptions::default(),
        },
        now(),
    )
}

fn with_options(options: RawOptions<'_>) -> Result<NewCommand, FieldError> {
    NewCommand::send(
        RawSend {
            chat: Some("c"),
            content: Some(&json!({"texto": "hola"})),
            options,
        },
        now(),
    )
}

fn field<T: std::fmt::Debug>(r: Result<T, FieldError>) -> String {
    r.unwrap_err().field
}

#[test]
fn a_send_needs_a_chat_and_an_object_of_content() {
    let ok = send("5491100000000", &json!({"texto": "hola"})).unwrap();
    assert_eq!(ok.kind(), CommandKind::Message);
    assert_eq!(ok.chat(), Some("5491100000000"));
    let missing = NewCommand::send(RawSend::default(), now());
    assert_eq!(field(missing), "chat");
    let no_content = NewCommand::send(
        RawSend {
            chat: Some("c"),
            ..RawSend::default()
        },
        now(),
    );
    assert_eq!(field(no_content), "contenido");
    for bad in [json!("hola"), json!([1]), json!(null), json!(3)] {
        assert_eq!(field(send("c", &bad)), "contenido", "{bad}");
    }
    assert_eq!(field(send("c", &json!({"t": "a\u{0}b"}))), "contenido");
    assert_eq!(field(send("c", &json!({"a\u{0}": 1}))), "contenido");
    let big = json!({ "t": "x".repeat(MAX_PAYLOAD_BYTES) });
    let e = send("c", &big).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.kind),
        ("contenido", crate::error::FieldErrorKind::TooLarge)
    );
}

#[test]
fn chat_is_one_to_two_hundred_characters_kept_as_written() {
    let content = json!({});
    assert!(send(&"ñ".repeat(200), &content).is_ok());
    assert_eq!(field(send(&"ñ".repeat(201), &content)), "chat");
    assert_eq!(field(send("", &content)), "chat");
    assert_eq!(field(send("   ", &content)), "chat");
    assert_eq!(field(send("a\nb", &content)), "chat");
    assert_eq!(send(" a ", &content).unwrap().chat(), Some(" a "));
}

#[test]
fn a_command_names_a_known_kind_other_than_a_send() {
    let ok = operation("reconectar", None).unwrap();
    assert_eq!(ok.kind(), CommandKind::Reconnect);
    assert_eq!(
        ok.payload,
        Payload::Operation {
            kind: CommandKind::Reconnect,
            parameters: Map::new()
        }
    );
    let with = operation("grupos", Some(&json!({"operacion": "unirse"}))).unwrap();
    assert_eq!(with.chat(), None);
    assert_eq!(field(operation("mensaje", None)), "tipo");
    assert_eq!(field(operation("volar", None)), "tipo");
    assert_eq!(field(operation("", None)), "tipo");
    assert_eq!(
        field(NewCommand::operation(RawOperation::default(), now())),
        "tipo"
    );
    assert_eq!(field(operation("grupos", Some(&json!([])))), "parametros");
    let unknown = operation("volar", None).unwrap_err();
    assert!(unknown.message.contains("archivar"), "{}", unknown.message);
    assert!(!unknown.message.contains("mensaje"), "{}", unknown.message);
}

#[test]
fn the_shared_fields_are_checked() {
    let later = time::format(&(now() + TimeDelta::seconds(1)));
    let parsed = with_options(RawOptions {
        expires_at: Some(&later),
        correlation_id: Some("pedido-7"),
        expected_generation: Some(1),
    })
    .unwrap();
    assert_eq!(
        parsed.options,
        CommandOptions {
            expires_at: time::parse(&later),
            correlation_id: Some("pedido-7".into()),
            expected_generation: Some(1),
        }
    );
    let at_now = time::format(&now());
    for (options, name) in [
        (
            RawOptions {
                expires_at: Some(&at_now),
                ..RawOptions::default()
            },
            "expires_at",
        ),
        (
            RawOptions {
                expires_at: Some("mañana"),
                ..RawOptions::default()
            },
            "expires_at",
        ),
        (
            RawOptions {
                correlation_id: Some(""),
                ..RawOptions::default()
            },
            "correlation_id",
        ),
        (
            RawOptions {
                expected_generation: Some(0),
                ..RawOptions::default()
            },
            "generacion_esperada",
        ),
    ] {
        assert_eq!(field(with_options(options)), name);
    }
    let long = "x".repeat(201);
    let too_long = RawOptions {
        correlation_id: Some(&long),
        ..RawOptions::default()
    };
    assert_eq!(field(with_options(too_long)), "correlation_id");
}

#[test]
fn the_key_is_required_only_for_a_send() {
    assert_eq!(
        field(IdempotencyKey::for_kind(None, CommandKind::Message)),
        "Idempotency-Key"
    );
    assert_eq!(IdempotencyKey::for_kind(None, CommandKind::Pause), Ok(None));
    let key = IdempotencyKey::for_kind(Some("evt:1"), CommandKind::Message).unwrap();
    assert_eq!(key.unwrap().as_str(), "evt:1");
    assert_eq!(
        field(IdempotencyKey::for_kind(Some(""), CommandKind::Pause)),
        "Idempotency-Key"
    );
}

#[test]
fn the_fingerprint_tells_the_same_request_from_another() {
    let a = send("c", &json!({"texto": "hola", "tipo": "texto"})).unwrap();
    let reordered = send("c", &json!({"tipo": "texto", "texto": "hola"})).unwrap();
    assert_eq!(a.fingerprint(), reordered.fingerprint());
    let others = [
        send("d", &json!({"texto": "hola", "tipo": "texto"})).unwrap(),
        send("c", &json!({"texto": "chau", "tipo": "texto"})).unwrap(),
        operation("grupos", Some(&json!({"texto": "hola", "tipo": "texto"}))).unwrap(),
    ];
    for other in &others {
        assert_ne!(a.fingerprint(), other.fingerprint(), "{other:?}");
    }
    let later = time::format(&(now() + TimeDelta::hours(1)));
    let mut expiring = a.clone();
    expiring.options.expires_at = time::parse(&later);
    assert_ne!(a.fingerprint(), expiring.fingerprint());
    let mut correlated = a.clone();
    correlated.options.correlation_id = Some("x".into());
    assert_ne!(a.fingerprint(), correlated.fingerprint());
    // A relink between two tries must not turn a repeat into a conflict.
    let mut guarded = a.clone();
    guarded.options.expected_generation = Some(2);
    assert_eq!(a.fingerprint(), guarded.fingerprint());
    // Two kinds with the same parameters differ.
    assert_ne!(
        operation("pausar", None).unwrap().fingerprint(),
        operation("reanudar", None).unwrap().fingerprint()
    );
}

proptest! {
    #[test]
    fn chat_and_keys_are_accepted_exactly_within_their_bounds(
        text in "[a-zA-Z0-9ñ@.:_-]{1,260}",
    ) {
        let chars = text.chars().count();
        let content = json!({});
        prop_assert_eq!(send(&text, &content).is_ok(), chars <= MAX_CHAT_CHARS);
        prop_assert_eq!(IdempotencyKey::parse(&text).is_ok(), chars <= MAX_IDEMPOTENCY_KEY_CHARS);
        let options = RawOptions { correlation_id: Some(&text), ..RawOptions::default() };
        prop_assert_eq!(with_options(options).is_ok(), chars <= MAX_CORRELATION_ID_CHARS);
    }

    #[test]
    fn expires_at_is_accepted_only_in_the_future(offset in -86_400i64..86_400) {
        let at = time::format(&(now() + TimeDelta::milliseconds(offset * 10)));
        let options = RawOptions { expires_at: Some(&at), ..RawOptions::default() };
        prop_assert_eq!(with_options(options).is_ok(), offset > 0);
    }

    #[test]
    fn expected_generation_is_accepted_from_one(generation in any::<i64>()) {
        let options = RawOptions { expected_generation: Some(generation), ..RawOptions::default() };
        prop_assert_eq!(with_options(options).is_ok(), generation >= 1);
    }
}
