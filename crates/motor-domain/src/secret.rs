//! Webhook signing secrets: a public key id (`whk_…`) and a secret value
//! (`whsec_…`, 32 random bytes). The value exists in clear only in the one
//! response that issues it and, later, in the delivery engine's memory while
//! it signs; at rest it is sealed (see [`crate::seal`]). Its `Debug` output is
//! redacted so it cannot slip into a log line or an error.

use std::fmt;

use rand::RngCore;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

pub const KEY_ID_PREFIX: &str = "whk_";
pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes in a secret value (hex-encoded after the prefix).
pub const SECRET_BYTES: usize = 32;
/// Random bytes in a key id.
const KEY_ID_BYTES: usize = 12;

/// The public id of a signing secret, sent as `X-MW-Key-Id`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SigningKeyId(String);

impl SigningKeyId {
    pub fn generate() -> Self {
        let mut id = [0u8; KEY_ID_BYTES];
        rand::thread_rng().fill_bytes(&mut id);
        Self(format!("{KEY_ID_PREFIX}{}", hex::encode(id)))
    }

    /// A key id read back from storage or a header: `whk_` and lower-case hex.
    pub fn parse(s: &str) -> Option<Self> {
        let hex = s.strip_prefix(KEY_ID_PREFIX)?;
        let ok = !hex.is_empty()
            && hex.len() <= 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SigningKeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A secret value. The HMAC key is the whole string, prefix included, as
/// UTF-8 bytes: exactly what a receiver passes to `openssl -hmac` or
/// `createHmac('sha256', secreto)`.
#[derive(Clone)]
pub struct SigningSecret(SecretString);

impl SigningSecret {
    pub fn generate() -> Self {
        let mut bytes = [0u8; SECRET_BYTES];
        rand::thread_rng().fill_bytes(&mut bytes);
        let value = format!("{SECRET_PREFIX}{}", hex::encode(bytes));
        bytes.fill(0);
        Self(SecretString::from(value))
    }

    /// A value opened from storage. Anything that is not `whsec_` followed by
    /// at least 32 bytes' worth of hex is refused.
    pub fn parse(value: String) -> Option<Self> {
        let hex = value.strip_prefix(SECRET_PREFIX)?;
        let ok = hex.len() >= 2 * SECRET_BYTES && hex.bytes().all(|b| b.is_ascii_hexdigit());
        ok.then(|| Self(SecretString::from(value)))
    }

    /// Any string as a secret, for the byte-exact vectors of the docs
    /// (whose placeholder `TU_SECRETO_DE_WEBHOOK` is not a `whsec_` value).
    #[cfg(test)]
    pub(crate) fn any_for_tests(value: &str) -> Self {
        Self(SecretString::from(value.to_owned()))
    }

    /// The value in clear. Call it only to seal it, to sign with it, or to
    /// put it in the one response that shows it.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningSecret(whsec_[REDACTED])")
    }
}

/// A freshly issued secret: its id and its value.
#[derive(Debug, Clone)]
pub struct IssuedSecret {
    pub key_id: SigningKeyId,
    pub secret: SigningSecret,
}

impl IssuedSecret {
    pub fn generate() -> Self {
        Self {
            key_id: SigningKeyId::generate(),
            secret: SigningSecret::generate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let issued = IssuedSecret::generate();
        assert!(issued.key_id.as_str().starts_with(KEY_ID_PREFIX));
        assert_eq!(issued.key_id.as_str().len(), 4 + 2 * KEY_ID_BYTES);
        let value = issued.secret.expose();
        assert!(value.starts_with(SECRET_PREFIX));
        assert_eq!(value.len(), SECRET_PREFIX.len() + 2 * SECRET_BYTES);
        assert!(SigningKeyId::parse(issued.key_id.as_str()).is_some());
        assert!(SigningSecret::parse(value.to_owned()).is_some());
    }

    #[test]
    fn every_secret_is_new() {
        let a = IssuedSecret::generate();
        let b = IssuedSecret::generate();
        assert_ne!(a.key_id, b.key_id);
        assert_ne!(a.secret.expose(), b.secret.expose());
    }

    #[test]
    fn debug_never_shows_the_value() {
        let issued = IssuedSecret::generate();
        let printed = format!("{issued:?} {:?}", issued.secret);
        let hex = &issued.secret.expose()[SECRET_PREFIX.len()..];
        assert!(!printed.contains(hex), "{printed}");
        assert!(printed.contains(issued.key_id.as_str()));
    }

    #[test]
    fn parse_refuses_garbage() {
        for bad in ["", "whk_", "whk_XYZ", "key_abc", "whk_ab/"] {
            assert!(SigningKeyId::parse(bad).is_none(), "{bad}");
        }
        for bad in ["", "whsec_", "whsec_abc", "sec_00", &"whsec_zz".repeat(40)] {
            assert!(SigningSecret::parse(bad.to_owned()).is_none(), "{bad}");
        }
    }
}
