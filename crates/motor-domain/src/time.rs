//! Timestamps as the contract writes them: RFC 3339 in UTC with `Z`,
//! fractional seconds only when there are some.

use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};

pub type Timestamp = DateTime<Utc>;

pub fn format(ts: &Timestamp) -> String {
    ts.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Parses an RFC 3339 timestamp with any offset, normalised to UTC.
pub fn parse(s: &str) -> Option<Timestamp> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Now, at millisecond precision (what Motor stamps `received_at` with).
pub fn now_millis() -> Timestamp {
    Utc::now().trunc_subsecs(3)
}

/// Serde adapter for [`Timestamp`] in the contract's format.
pub mod serde_ts {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Timestamp;

    pub fn serialize<S: Serializer>(ts: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(ts))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let s = String::deserialize(d)?;
        super::parse(&s).ok_or_else(|| serde::de::Error::custom("not an RFC 3339 timestamp"))
    }
}

/// Serde adapter for an optional [`Timestamp`]: `null` when absent.
pub mod serde_opt_ts {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Timestamp;

    pub fn serialize<S: Serializer>(ts: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match ts {
            Some(ts) => s.serialize_str(&super::format(ts)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| super::parse(&s).ok_or_else(|| serde::de::Error::custom("bad timestamp")))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_seconds_have_no_fraction() {
        let ts = parse("2026-10-24T17:10:01+02:00").unwrap();
        assert_eq!(format(&ts), "2026-10-24T15:10:01Z");
    }

    #[test]
    fn fractions_are_kept() {
        let ts = parse("2026-10-24T15:10:01.250Z").unwrap();
        assert_eq!(format(&ts), "2026-10-24T15:10:01.250Z");
    }

    #[test]
    fn garbage_is_refused() {
        assert!(parse("ayer").is_none());
        assert!(parse("2026-10-24").is_none());
    }
}
