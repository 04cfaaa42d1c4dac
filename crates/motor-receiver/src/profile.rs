//! What the three profiles share: the profile names, the ±300 s window,
//! timestamp parsing, the HMAC, and what a verified request proved. The
//! profiles (`mw_v1`, `t_v1`, `standard_webhooks`) build on it; `verify`
//! chooses among them.

use std::{
    fmt,
    time::{SystemTime, UNIX_EPOCH},
};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::VerifyError;

/// How far a signed timestamp may be from the receiver's clock, in either
/// direction (the contract's symmetric window).
pub const TOLERANCE_SECS: u64 = 300;

/// At most this many signatures in one header are looked at: Motor sends
/// one per live key (two during a rotation). More is not from Motor, and
/// each one would cost an HMAC over the body.
pub(crate) const MAX_SIGNATURES: usize = 8;

/// A subscription's signing profile (its `firma`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Profile {
    /// `X-MW-Timestamp`, `X-MW-Key-Id`, `X-MW-Signature: v1=<hex>` over
    /// `timestamp.delivery_id.body`.
    #[default]
    MwV1,
    /// `X-MW-Signature: t=<unix>,v1=<hex>[,v1=<hex>]` over `timestamp.body`.
    TV1,
    /// `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`
    /// over `id.timestamp.body` (<https://www.standardwebhooks.com>).
    StandardWebhooks,
}

impl Profile {
    pub const ALL: [Self; 3] = [Self::MwV1, Self::TV1, Self::StandardWebhooks];

    /// The wire spelling: `mw-v1`, `t-v1` or `standard-webhooks`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::MwV1 => "mw-v1",
            Self::TV1 => "t-v1",
            Self::StandardWebhooks => "standard-webhooks",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a verified request proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub profile: Profile,
    /// The signed timestamp (unix seconds).
    pub timestamp: i64,
    /// The delivery id: `X-MW-Delivery-Id` (signed) in mw-v1, `webhook-id`
    /// (signed) in standard-webhooks. t-v1 does not sign one; there it is
    /// the `X-MW-Delivery-Id` header when present, for logs only.
    pub delivery_id: Option<String>,
    /// The key id of the secret that matched: the `X-MW-Key-Id` entry in
    /// mw-v1, otherwise the one the [`Secret`] was given, if any.
    pub key_id: Option<String>,
}

/// A timestamp as sent: 1 to 18 ASCII digits (the text itself is what was
/// signed, so it is kept as is by the callers).
pub(crate) fn parse_timestamp(header: &'static str, text: &str) -> Result<i64, VerifyError> {
    if text.is_empty() || text.len() > 18 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(VerifyError::malformed(header, "not unix seconds"));
    }
    text.parse()
        .map_err(|_| VerifyError::malformed(header, "not unix seconds"))
}

pub(crate) fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_secs()).map_or(i64::MIN, |s| -s),
    }
}

/// The symmetric window: `|now - timestamp| <= TOLERANCE_SECS`.
pub(crate) fn check_window(timestamp: i64, now: SystemTime) -> Result<(), VerifyError> {
    let now = unix_seconds(now);
    if timestamp.abs_diff(now) > TOLERANCE_SECS {
        return Err(VerifyError::Stale { timestamp, now });
    }
    Ok(())
}

pub(crate) type HmacSha256 = Hmac<Sha256>;

/// The HMAC state after `parts`, ready to be checked against several
/// signatures (clone it per check: `verify_slice` consumes it).
pub(crate) fn mac(key: &[u8], parts: &[&[u8]]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    for part in parts {
        mac.update(part);
    }
    mac
}

/// Constant-time comparison of one expected tag with one received one.
pub(crate) fn matches(mac: &HmacSha256, signature: &[u8]) -> bool {
    mac.clone().verify_slice(signature).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_spellings() {
        for p in Profile::ALL {
            assert_eq!(Profile::parse(p.as_str()), Some(p));
        }
        assert_eq!(Profile::default(), Profile::MwV1);
        assert_eq!(Profile::parse("MW-V1"), None);
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("h", "1792854493"), Ok(1792854493));
        assert_eq!(parse_timestamp("h", "0"), Ok(0));
        for bad in [
            "",
            "-1",
            "+1",
            "1.5",
            "1e9",
            " 1",
            "١٢",
            "9999999999999999999",
        ] {
            assert!(parse_timestamp("h", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn clock_before_the_epoch_does_not_panic() {
        let t = UNIX_EPOCH - std::time::Duration::from_secs(10);
        assert_eq!(unix_seconds(t), -10);
        assert!(check_window(i64::MAX, t).is_err());
    }
}
