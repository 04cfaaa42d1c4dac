use proptest::prelude::*;

use super::*;
use crate::time;

fn now() -> Timestamp {
    time::parse("2026-10-24T15:08:14Z").unwrap()
}

fn status(s: u16) -> Outcome {
    Outcome::from_status(s, None, now())
}

fn retry(s: u16) -> Outcome {
    Outcome::Retry {
        error: ErrorCode::Http(s),
        retry_after: None,
    }
}

fn fail(s: u16) -> Outcome {
    Outcome::Fail {
        error: ErrorCode::Http(s),
    }
}

#[test]
fn statuses_at_every_class_boundary() {
    let redirect = Outcome::Fail {
        error: ErrorCode::Redirect,
    };
    let cases = [
        (100, retry(100)),
        (101, retry(101)),
        (199, retry(199)),
        (200, Outcome::Delivered),
        (201, Outcome::Delivered),
        (204, Outcome::Delivered),
        (299, Outcome::Delivered),
        (300, redirect),
        (301, redirect),
        (302, redirect),
        (304, redirect),
        (307, redirect),
        (308, redirect),
        (399, redirect),
        (400, fail(400)),
        (
            401,
            Outcome::Suspend {
                reason: SuspensionReason::Rejected401,
                error: ErrorCode::Http(401),
            },
        ),
        (402, fail(402)),
        (
            403,
            Outcome::Suspend {
                reason: SuspensionReason::Rejected403,
                error: ErrorCode::Http(403),
            },
        ),
        (404, fail(404)),
        (405, fail(405)),
        (407, fail(407)),
        (408, retry(408)),
        (409, fail(409)),
        (410, fail(410)),
        (413, fail(413)),
        (422, fail(422)),
        (425, fail(425)),
        (428, fail(428)),
        (429, retry(429)),
        (430, fail(430)),
        (451, fail(451)),
        (499, fail(499)),
        (500, retry(500)),
        (501, retry(501)),
        (502, retry(502)),
        (503, retry(503)),
        (504, retry(504)),
        (599, retry(599)),
        (600, retry(600)),
        (999, retry(999)),
    ];
    for (s, expected) in cases {
        assert_eq!(status(s), expected, "status {s}");
    }
}

#[test]
fn retry_after_is_honoured_on_429_and_503_only() {
    let two_min = Some(Duration::from_secs(120));
    for s in [429, 503] {
        assert_eq!(
            Outcome::from_status(s, Some("120"), now()),
            Outcome::Retry {
                error: ErrorCode::Http(s),
                retry_after: two_min
            }
        );
        assert_eq!(
            Outcome::from_status(s, Some("Sat, 24 Oct 2026 15:10:14 GMT"), now()),
            Outcome::Retry {
                error: ErrorCode::Http(s),
                retry_after: two_min
            }
        );
        // Garbage is as if there were no header.
        assert_eq!(Outcome::from_status(s, Some("soon"), now()), retry(s));
        // Capped at one hour.
        assert_eq!(
            Outcome::from_status(s, Some("86400"), now()),
            Outcome::Retry {
                error: ErrorCode::Http(s),
                retry_after: Some(Duration::from_secs(3600))
            }
        );
    }
    for s in [408, 500, 502, 504, 599, 199] {
        assert_eq!(Outcome::from_status(s, Some("120"), now()), retry(s), "{s}");
    }
    // A header never turns a success or a failure into something else.
    assert_eq!(
        Outcome::from_status(200, Some("120"), now()),
        Outcome::Delivered
    );
    assert_eq!(Outcome::from_status(404, Some("120"), now()), fail(404));
    assert_eq!(
        Outcome::from_status(301, Some("120"), now()),
        Outcome::Fail {
            error: ErrorCode::Redirect
        }
    );
}

#[test]
fn transport_failures() {
    use TransportFailure as T;
    let retry = |error| Outcome::Retry {
        error,
        retry_after: None,
    };
    let cases = [
        (T::Timeout, retry(ErrorCode::Timeout), "timeout"),
        (
            T::ConnectionRefused,
            retry(ErrorCode::ConnectionRefused),
            "conexion_rechazada",
        ),
        (
            T::ConnectionReset,
            retry(ErrorCode::ConnectionReset),
            "conexion_cortada",
        ),
        (T::Dns, retry(ErrorCode::Dns), "dns"),
        (T::Tls, retry(ErrorCode::Tls), "tls"),
        (T::Network, retry(ErrorCode::Network), "red"),
        (
            T::Redirect,
            Outcome::Fail {
                error: ErrorCode::Redirect,
            },
            "redireccion",
        ),
        (
            T::DestinationNotAllowed,
            Outcome::Suspend {
                reason: SuspensionReason::DestinationNotAllowed,
                error: ErrorCode::DestinationNotAllowed,
            },
            "destino_no_permitido",
        ),
        (
            T::DestinationBlocked,
            Outcome::Suspend {
                reason: SuspensionReason::DestinationBlocked,
                error: ErrorCode::DestinationBlocked,
            },
            "destino_bloqueado",
        ),
        (
            T::NoSecret,
            Outcome::Suspend {
                reason: SuspensionReason::NoSecret,
                error: ErrorCode::NoSecret,
            },
            "sin_secreto",
        ),
        (
            T::BadUrl,
            Outcome::Fail {
                error: ErrorCode::Url,
            },
            "url",
        ),
        (
            T::BrokerNack,
            Outcome::Retry {
                error: ErrorCode::BrokerRejected,
                retry_after: None,
            },
            "broker_rechazo",
        ),
        (
            T::BrokerUnroutable,
            Outcome::Retry {
                error: ErrorCode::BrokerUnroutable,
                retry_after: None,
            },
            "broker_sin_ruta",
        ),
        (
            T::NoStream,
            Outcome::Retry {
                error: ErrorCode::NoStream,
                retry_after: None,
            },
            "sin_stream",
        ),
        (
            T::CredentialsRefused,
            Outcome::Suspend {
                reason: SuspensionReason::CredentialsRejected,
                error: ErrorCode::CredentialsRejected,
            },
            "rechazo_credenciales",
        ),
    ];
    assert_eq!(cases.len(), TransportFailure::ALL.len());
    for (failure, expected, code) in cases {
        assert_eq!(Outcome::from_transport(failure), expected, "{failure:?}");
        assert_eq!(
            Outcome::classify(AttemptResult::Transport(failure), now()),
            expected
        );
        assert_eq!(failure.error_code().to_string(), code);
        assert_eq!(expected.error().unwrap().to_string(), code);
    }
}

#[test]
fn classify_reads_the_header_of_an_answer() {
    let answer = AttemptResult::Http {
        status: 503,
        retry_after: Some("35"),
    };
    assert_eq!(
        Outcome::classify(answer, now()),
        Outcome::Retry {
            error: ErrorCode::Http(503),
            retry_after: Some(Duration::from_secs(35))
        }
    );
    assert_eq!(Outcome::Delivered.error(), None);
}

#[test]
fn codes_are_spelled_as_the_contract() {
    let all = [
        (ErrorCode::Http(500), "http_500"),
        (ErrorCode::Http(404), "http_404"),
        (ErrorCode::Http(101), "http_101"),
        (ErrorCode::Timeout, "timeout"),
        (ErrorCode::ConnectionRefused, "conexion_rechazada"),
        (ErrorCode::ConnectionReset, "conexion_cortada"),
        (ErrorCode::Dns, "dns"),
        (ErrorCode::Tls, "tls"),
        (ErrorCode::Network, "red"),
        (ErrorCode::Redirect, "redireccion"),
        (ErrorCode::DestinationNotAllowed, "destino_no_permitido"),
        (ErrorCode::DestinationBlocked, "destino_bloqueado"),
        (ErrorCode::NoSecret, "sin_secreto"),
        (ErrorCode::Url, "url"),
    ];
    for (code, s) in all {
        assert_eq!(code.to_string(), s);
        assert_eq!(ErrorCode::parse(s), Some(code));
        assert_eq!(LastError::new(code).to_string(), s);
        let exhausted = format!("{s}_agotada");
        assert_eq!(LastError::exhausted(code).to_string(), exhausted);
        assert_eq!(
            LastError::parse(&exhausted),
            Some(LastError::exhausted(code))
        );
        assert_eq!(
            serde_json::to_value(LastError::exhausted(code)).unwrap(),
            serde_json::json!(exhausted)
        );
    }
}

#[test]
fn unknown_codes_are_refused() {
    for s in [
        "",
        "http_",
        "http_0503",
        "http_+503",
        "http_70000",
        "HTTP_500",
        "http_500_",
        "_agotada",
        "timeout_agotada_agotada",
        "http_500 ",
        "connection refused",
        "https://example.com",
    ] {
        assert_eq!(LastError::parse(s), None, "{s:?}");
        assert!(s.parse::<LastError>().is_err());
        assert!(serde_json::from_value::<LastError>(serde_json::json!(s)).is_err());
    }
}

proptest! {
    #[test]
    fn every_status_has_exactly_the_contracts_outcome(s in 0u16..=u16::MAX) {
        let outcome = status(s);
        match s {
            200..=299 => prop_assert_eq!(outcome, Outcome::Delivered),
            300..=399 => prop_assert_eq!(outcome, Outcome::Fail { error: ErrorCode::Redirect }),
            401 | 403 => {
                let suspended = matches!(outcome, Outcome::Suspend { error: ErrorCode::Http(e), .. } if e == s);
                prop_assert!(suspended);
            }
            408 | 429 => prop_assert_eq!(outcome, retry(s)),
            400..=499 => prop_assert_eq!(outcome, fail(s)),
            _ => prop_assert_eq!(outcome, retry(s)),
        }
    }

    #[test]
    fn every_http_code_round_trips(s in 0u16..=u16::MAX, exhausted: bool) {
        let e = LastError { code: ErrorCode::Http(s), exhausted };
        prop_assert_eq!(LastError::parse(&e.to_string()), Some(e));
        let json = serde_json::to_string(&e).unwrap();
        prop_assert_eq!(serde_json::from_str::<LastError>(&json).unwrap(), e);
    }

    #[test]
    fn parsing_any_string_never_panics(s in ".{0,40}") {
        if let Some(e) = LastError::parse(&s) {
            prop_assert_eq!(e.to_string(), s);
        }
    }
}
