//! The receiver's copy of a subscription's signing secret, and the HMAC key
//! each profile derives from it.

use std::{borrow::Cow, fmt};

use base64::{
    alphabet,
    engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig},
    Engine,
};
use secrecy::{ExposeSecret, SecretString};

use crate::profile::Profile;

/// The prefix Motor (and Standard Webhooks) put in front of a secret value.
pub const SECRET_PREFIX: &str = "whsec_";

/// Standard base64 that, like the Standard Webhooks libraries, accepts a
/// secret with or without its `=` padding.
const LENIENT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// A signing secret as Motor showed it (`whsec_…`), optionally with its key
/// id (`whk_…`). With a key id it only checks the mw-v1 signature sent
/// under that id; without one it checks every signature. Its `Debug`
/// output never shows the value.
#[derive(Clone)]
pub struct Secret {
    key_id: Option<String>,
    value: SecretString,
}

impl Secret {
    /// A secret without a key id: tried against every signature.
    pub fn new(value: impl Into<String>) -> Self {
        Self {
            key_id: None,
            value: SecretString::from(value.into()),
        }
    }

    /// A secret that answers only for `key_id` (the `X-MW-Key-Id` Motor
    /// sends with mw-v1; the other profiles carry no key id, so there it
    /// is only reported back in [`crate::Verified::key_id`]).
    pub fn with_key_id(key_id: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            key_id: Some(key_id.into()),
            value: SecretString::from(value.into()),
        }
    }

    pub fn key_id(&self) -> Option<&str> {
        self.key_id.as_deref()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.value.expose_secret().is_empty()
    }

    /// The HMAC key for `profile`, `None` when the value cannot be one.
    ///
    /// - mw-v1 and t-v1: the whole value, prefix included, as UTF-8 bytes —
    ///   what `openssl -hmac "$SECRET"` and `createHmac('sha256', secret)` use.
    /// - standard-webhooks: the base64 decoding of what follows `whsec_`, as
    ///   the specification says. Motor's values are `whsec_` and 64 hex
    ///   digits, which are base64 characters, so they decode (to 48 bytes)
    ///   and every Standard Webhooks library accepts the same string.
    pub(crate) fn hmac_key(&self, profile: Profile) -> Option<Cow<'_, [u8]>> {
        let value = self.value.expose_secret();
        match profile {
            Profile::MwV1 | Profile::TV1 => Some(Cow::Borrowed(value.as_bytes())),
            Profile::StandardWebhooks => {
                let encoded = value.strip_prefix(SECRET_PREFIX).unwrap_or(value);
                LENIENT_BASE64
                    .decode(encoded)
                    .ok()
                    .filter(|key| !key.is_empty())
                    .map(Cow::Owned)
            }
        }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("key_id", &self.key_id)
            .field("value", &"[REDACTED]")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_value() {
        let s = Secret::with_key_id("whk_01", "whsec_abcdef0123");
        let printed = format!("{s:?}");
        assert!(!printed.contains("abcdef0123"), "{printed}");
        assert!(printed.contains("whk_01"));
    }

    #[test]
    fn keys_per_profile() {
        let hex = "00".repeat(32);
        let s = Secret::new(format!("whsec_{hex}"));
        assert_eq!(
            s.hmac_key(Profile::MwV1).unwrap().as_ref(),
            format!("whsec_{hex}").as_bytes()
        );
        assert_eq!(s.hmac_key(Profile::StandardWebhooks).unwrap().len(), 48);
        // With or without prefix, with or without padding.
        let a = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let b = Secret::new("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        assert_eq!(
            a.hmac_key(Profile::StandardWebhooks),
            b.hmac_key(Profile::StandardWebhooks)
        );
        let padded = Secret::new("whsec_YWJjZA==");
        let bare = Secret::new("whsec_YWJjZA");
        assert_eq!(
            padded.hmac_key(Profile::StandardWebhooks).unwrap().as_ref(),
            b"abcd"
        );
        assert_eq!(
            bare.hmac_key(Profile::StandardWebhooks).unwrap().as_ref(),
            b"abcd"
        );
        for bad in ["whsec_", "whsec_!!!!", "whsec_a"] {
            assert!(
                Secret::new(bad)
                    .hmac_key(Profile::StandardWebhooks)
                    .is_none(),
                "{bad}"
            );
        }
    }
}
