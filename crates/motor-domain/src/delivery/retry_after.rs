//! The `Retry-After` header (RFC 9110 §10.2.3): delay-seconds or an
//! HTTP-date, turned into a wait from a given `now`.
//!
//! Lenient where it costs nothing and strict where guessing could hurt:
//! surrounding whitespace is ignored; `-5` counts as "now" (zero); a date in
//! the past is zero; every wait is capped at [`RETRY_AFTER_CAP`]; anything
//! else (fractions, units, a date with the wrong weekday or not in GMT) is
//! garbage and yields `None`, so the schedule alone decides.

use std::time::Duration;

use chrono::{Datelike, NaiveDateTime, Weekday};

use super::job::time_until;
use crate::time::Timestamp;

/// The longest wait a `Retry-After` can ask for: the contract honours it
/// "up to 1 h".
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(3600);

/// The wait a `Retry-After` value asks for, from `now`, capped at one hour;
/// `None` when the value is neither delay-seconds nor an HTTP-date.
pub fn parse_retry_after(value: &str, now: Timestamp) -> Option<Duration> {
    let value = value.trim();
    if let Some(wait) = parse_delay_seconds(value) {
        return Some(wait);
    }
    let at = parse_http_date(value, now)?;
    Some(time_until(at, now).min(RETRY_AFTER_CAP))
}

/// `1*DIGIT`, or a minus sign and digits (read as zero). More digits than a
/// `u64` holds is still a (very long) delay: the cap.
fn parse_delay_seconds(value: &str) -> Option<Duration> {
    let (negative, digits) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if negative {
        return Some(Duration::ZERO);
    }
    let secs = digits.parse::<u64>().unwrap_or(u64::MAX);
    Some(Duration::from_secs(secs).min(RETRY_AFTER_CAP))
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), or the obsolete RFC 850
/// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37
/// 1994`) forms recipients must still accept. All are UTC.
fn parse_http_date(value: &str, now: Timestamp) -> Option<Timestamp> {
    const IMF_FIXDATE: &str = "%a, %d %b %Y %H:%M:%S GMT";
    const ASCTIME: &str = "%a %b %e %H:%M:%S %Y";

    if let Ok(t) = NaiveDateTime::parse_from_str(value, IMF_FIXDATE) {
        return Some(t.and_utc());
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(value, ASCTIME) {
        return Some(t.and_utc());
    }
    // RFC 850 has a two-digit year: RFC 9110 wants the year with those
    // digits that is not more than 50 years after `now` (chrono would pin
    // 69–99 to 19xx), so the weekday is checked here, on the right year.
    let (weekday, rest) = value.split_once(", ")?;
    let weekday: Weekday = weekday.parse().ok()?;
    let t = NaiveDateTime::parse_from_str(rest, "%d-%b-%y %H:%M:%S GMT").ok()?;
    let mut year = now.year() - now.year().rem_euclid(100) + t.year().rem_euclid(100);
    if year > now.year() + 50 {
        year -= 100;
    }
    let t = t.with_year(year)?;
    (t.weekday() == weekday).then(|| t.and_utc())
}

#[cfg(test)]
mod tests;
