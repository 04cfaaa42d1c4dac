use super::*;

const AT: &str = "2026-10-24T15:10:01Z";

fn parse(raw: RawReport<'_>, kind: CommandKind) -> Result<Report, FieldError> {
    Report::parse(raw, kind)
}

fn field(r: Result<Report, FieldError>) -> String {
    r.unwrap_err().field
}

fn sent() -> RawReport<'static> {
    RawReport {
        status: Some("enviado"),
        provider_message_id: Some("wamid.1"),
        chat: Some("549@s.whatsapp.net"),
        accepted_at: Some(AT),
        ..RawReport::default()
    }
}

#[test]
fn enviado_needs_the_message_id_the_chat_and_the_time() {
    assert_eq!(
        parse(sent(), CommandKind::Message).unwrap(),
        Report::Sent {
            provider_message_id: "wamid.1".into(),
            chat: "549@s.whatsapp.net".into(),
            accepted_at: time::parse(AT).unwrap(),
        }
    );
    for (missing, name) in [
        (
            RawReport {
                provider_message_id: None,
                ..sent()
            },
            "provider_message_id",
        ),
        (
            RawReport {
                chat: None,
                ..sent()
            },
            "chat",
        ),
        (
            RawReport {
                accepted_at: None,
                ..sent()
            },
            "aceptado_en",
        ),
        (
            RawReport {
                accepted_at: Some("ayer"),
                ..sent()
            },
            "aceptado_en",
        ),
        (
            RawReport {
                next_try: Some(AT),
                ..sent()
            },
            "next_try",
        ),
    ] {
        assert_eq!(field(parse(missing, CommandKind::Message)), name);
    }
    assert_eq!(field(parse(sent(), CommandKind::Groups)), "status");
}

#[test]
fn completado_is_for_every_kind_but_a_send() {
    let raw = RawReport {
        status: Some("completado"),
        ..RawReport::default()
    };
    assert_eq!(parse(raw, CommandKind::Reconnect), Ok(Report::Completed));
    assert_eq!(parse(raw, CommandKind::Calls), Ok(Report::Completed));
    assert_eq!(field(parse(raw, CommandKind::Message)), "status");
    let extra = RawReport {
        error_code: Some("x"),
        ..raw
    };
    assert_eq!(field(parse(extra, CommandKind::Pause)), "error_code");
}

#[test]
fn fallido_needs_a_code_and_a_stage_before_the_boundary() {
    let failed = RawReport {
        status: Some("fallido"),
        error_code: Some("numero_invalido"),
        stage: Some("servidor"),
        server_code: Some("131026"),
        ..RawReport::default()
    };
    assert_eq!(
        parse(failed, CommandKind::Message).unwrap(),
        Report::Failed {
            error_code: "numero_invalido".into(),
            stage: Stage::Server,
            server_code: Some("131026".into()),
            provider_message_id: None,
        }
    );
    let cases = [
        (
            RawReport {
                error_code: None,
                ..failed
            },
            "error_code",
        ),
        (
            RawReport {
                stage: None,
                ..failed
            },
            "stage",
        ),
        (
            RawReport {
                stage: Some("frontera"),
                ..failed
            },
            "stage",
        ),
        (
            RawReport {
                stage: Some("previa"),
                ..failed
            },
            "server_code",
        ),
        (
            RawReport {
                chat: Some("c"),
                ..failed
            },
            "chat",
        ),
    ];
    for (raw, name) in cases {
        assert_eq!(field(parse(raw, CommandKind::Message)), name);
    }
    let before = RawReport {
        stage: Some("previa"),
        server_code: None,
        ..failed
    };
    assert!(parse(before, CommandKind::Groups).is_ok());
}

#[test]
fn ambiguo_is_at_the_boundary() {
    let raw = RawReport {
        status: Some("ambiguo"),
        ..RawReport::default()
    };
    assert_eq!(
        parse(raw, CommandKind::Message),
        Ok(Report::Ambiguous { error_code: None })
    );
    let with_stage = RawReport {
        stage: Some("frontera"),
        error_code: Some("timeout"),
        ..raw
    };
    assert!(parse(with_stage, CommandKind::Message).is_ok());
    let wrong = RawReport {
        stage: Some("previa"),
        ..raw
    };
    assert_eq!(field(parse(wrong, CommandKind::Message)), "stage");
}

#[test]
fn a_deferral_needs_next_try() {
    let raw = RawReport {
        status: Some("en_cola"),
        next_try: Some(AT),
        ..RawReport::default()
    };
    assert_eq!(
        parse(raw, CommandKind::Message),
        Ok(Report::Deferred {
            next_try: time::parse(AT).unwrap()
        })
    );
    let none = RawReport {
        next_try: None,
        ..raw
    };
    assert_eq!(field(parse(none, CommandKind::Message)), "next_try");
}

#[test]
fn unknown_or_missing_status_is_refused() {
    for status in [None, Some("ejecutando"), Some("aceptado"), Some("ENVIADO")] {
        let raw = RawReport {
            status,
            ..RawReport::default()
        };
        assert_eq!(field(parse(raw, CommandKind::Message)), "status");
    }
}

#[test]
fn each_report_names_its_transition() {
    use Outcome::*;
    let reports = [
        (parse(sent(), CommandKind::Message).unwrap(), Sent),
        (Report::Completed, Completed),
        (Report::Ambiguous { error_code: None }, Ambiguous),
        (
            Report::Deferred {
                next_try: time::parse(AT).unwrap(),
            },
            Deferred,
        ),
    ];
    for (report, outcome) in reports {
        assert_eq!(report.transition(), Transition::Report(outcome));
    }
}

proptest::proptest! {
    #[test]
    fn codes_and_ids_are_accepted_exactly_within_their_bounds(text in "[a-zA-Z0-9_.:-]{1,260}") {
        let ok = text.chars().count() <= MAX_CODE_CHARS;
        let failed = RawReport {
            status: Some("fallido"),
            error_code: Some(&text),
            stage: Some("servidor"),
            server_code: Some(&text),
            provider_message_id: Some(&text),
            ..RawReport::default()
        };
        proptest::prop_assert_eq!(parse(failed, CommandKind::Message).is_ok(), ok);
        let sent = RawReport { provider_message_id: Some(&text), ..sent() };
        proptest::prop_assert_eq!(parse(sent, CommandKind::Message).is_ok(), ok);
    }
}
