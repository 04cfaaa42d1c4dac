use proptest::prelude::*;

use super::*;
use crate::time;

/// Saturday 24 October 2026, 15:08:14 UTC.
fn now() -> Timestamp {
    time::parse("2026-10-24T15:08:14Z").unwrap()
}

fn secs(n: u64) -> Option<Duration> {
    Some(Duration::from_secs(n))
}

#[test]
fn delay_seconds() {
    let cases = [
        ("0", secs(0)),
        ("1", secs(1)),
        ("35", secs(35)),
        ("120", secs(120)),
        ("  120\t", secs(120)),
        ("0120", secs(120)),
        ("3599", secs(3599)),
        ("3600", secs(3600)),
        ("3601", secs(3600)),
        ("86400", secs(3600)),
        ("18446744073709551615", secs(3600)),
        ("99999999999999999999999999999", secs(3600)),
        ("-1", secs(0)),
        ("-99999999999999999999999", secs(0)),
    ];
    for (value, expected) in cases {
        assert_eq!(parse_retry_after(value, now()), expected, "{value:?}");
    }
}

#[test]
fn garbage_is_none() {
    for value in [
        "",
        "   ",
        "-",
        "+5",
        "1.5",
        "1e3",
        "5s",
        "5 s",
        "1 2",
        "0x10",
        "soon",
        "٣",
        "2026-10-24T15:10:14Z",
        "Sat, 24 Oct 2026 15:10:14",
        "Sat, 24 Oct 2026 15:10:14 UTC",
        "Sat, 24 Oct 2026 15:10:14 +0000",
        "Sat, 24 Oct 2026 15:10:14 GMT later",
        "120 seconds",
        "Sat, 24 Oct 2026 25:10:14 GMT",
        "Sat, 31 Nov 2026 15:10:14 GMT",
        "Sat, 24 Foo 2026 15:10:14 GMT",
        // Wrong weekday: 24 October 2026 is a Saturday.
        "Fri, 24 Oct 2026 15:10:14 GMT",
        "Friday, 24-Oct-26 15:10:14 GMT",
        "Fri Oct 24 15:10:14 2026",
    ] {
        assert_eq!(parse_retry_after(value, now()), None, "{value:?}");
    }
}

#[test]
fn imf_fixdate() {
    let cases = [
        ("Sat, 24 Oct 2026 15:08:14 GMT", secs(0)),
        ("Sat, 24 Oct 2026 15:08:15 GMT", secs(1)),
        ("Sat, 24 Oct 2026 15:08:49 GMT", secs(35)),
        ("Sat, 24 Oct 2026 15:10:14 GMT", secs(120)),
        ("Sat, 24 Oct 2026 16:08:13 GMT", secs(3599)),
        ("Sat, 24 Oct 2026 16:08:14 GMT", secs(3600)),
        ("Sat, 24 Oct 2026 16:08:15 GMT", secs(3600)),
        ("Mon, 30 Nov 2026 00:00:00 GMT", secs(3600)),
        (" Sat, 24 Oct 2026 15:10:14 GMT ", secs(120)),
        // In the past: no extra wait.
        ("Sat, 24 Oct 2026 15:08:13 GMT", secs(0)),
        ("Sun, 06 Nov 1994 08:49:37 GMT", secs(0)),
    ];
    for (value, expected) in cases {
        assert_eq!(parse_retry_after(value, now()), expected, "{value:?}");
    }
}

#[test]
fn obsolete_date_forms() {
    let cases = [
        // RFC 850.
        ("Saturday, 24-Oct-26 15:10:14 GMT", secs(120)),
        ("Saturday, 24-Oct-26 15:08:13 GMT", secs(0)),
        ("Sunday, 06-Nov-94 08:49:37 GMT", secs(0)),
        // asctime, with its space-padded day and with two digits.
        ("Sat Oct 24 15:10:14 2026", secs(120)),
        ("Sun Nov  6 08:49:37 1994", secs(0)),
    ];
    for (value, expected) in cases {
        assert_eq!(parse_retry_after(value, now()), expected, "{value:?}");
    }
}

#[test]
fn rfc_850_years_are_at_most_50_years_ahead() {
    // From 2026, "70" is 2070 (44 years ahead), so the weekday must be
    // 2070's: 1 January 2070 is a Wednesday, 1 January 1970 a Thursday.
    assert_eq!(
        parse_retry_after("Wednesday, 01-Jan-70 00:00:00 GMT", now()),
        secs(3600)
    );
    assert_eq!(
        parse_retry_after("Thursday, 01-Jan-70 00:00:00 GMT", now()),
        None
    );
    // "94" is 1994, not 2094 (68 years ahead).
    assert_eq!(
        parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now()),
        secs(0)
    );
    assert_eq!(
        parse_retry_after("Saturday, 06-Nov-94 08:49:37 GMT", now()),
        None
    );
}

#[test]
fn fractions_of_now_are_kept() {
    let now = time::parse("2026-10-24T15:08:13.250Z").unwrap();
    assert_eq!(
        parse_retry_after("Sat, 24 Oct 2026 15:08:14 GMT", now),
        Some(Duration::from_millis(750))
    );
}

proptest! {
    #[test]
    fn seconds_are_taken_as_given_up_to_the_cap(n in 0u64..1_000_000) {
        let wait = parse_retry_after(&n.to_string(), now()).unwrap();
        prop_assert_eq!(wait, Duration::from_secs(n.min(3600)));
    }

    #[test]
    fn a_date_is_the_time_until_it_capped(offset in -100_000i64..100_000) {
        let at = now() + chrono::TimeDelta::seconds(offset);
        let value = at.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        let wait = parse_retry_after(&value, now()).unwrap();
        let expected = Duration::from_secs(offset.clamp(0, 3600) as u64);
        prop_assert_eq!(wait, expected, "{}", value);
        let asctime = at.format("%a %b %e %H:%M:%S %Y").to_string();
        prop_assert_eq!(parse_retry_after(&asctime, now()), Some(expected), "{}", asctime);
        let rfc850 = at.format("%A, %d-%b-%y %H:%M:%S GMT").to_string();
        prop_assert_eq!(parse_retry_after(&rfc850, now()), Some(expected), "{}", rfc850);
    }

    #[test]
    fn any_value_is_none_or_within_the_cap(value in ".{0,40}") {
        if let Some(wait) = parse_retry_after(&value, now()) {
            prop_assert!(wait <= RETRY_AFTER_CAP);
        }
    }
}
