//! The three signing profiles as pure functions: which headers an attempt
//! carries under each, given the keys live at the attempt's time. mw-v1 is
//! [`super::sign`] unchanged; t-v1 and standard-webhooks are built here.

use std::fmt;

use base64::{
    alphabet,
    engine::{general_purpose::STANDARD, DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig},
    Engine,
};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::{live_keys, sign, NoLiveKey, SigningKey, HEADER_SIGNATURE};
use crate::{
    secret::{SigningKeyId, SigningSecret, SECRET_PREFIX},
    time::Timestamp,
};

pub const SW_HEADER_ID: &str = "webhook-id";
pub const SW_HEADER_TIMESTAMP: &str = "webhook-timestamp";
pub const SW_HEADER_SIGNATURE: &str = "webhook-signature";

/// Standard base64, padding optional, as the Standard Webhooks libraries
/// read a secret.
const SECRET_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// A subscription's signing profile (`firma`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum SigningProfile {
    #[default]
    #[serde(rename = "mw-v1")]
    MwV1,
    #[serde(rename = "t-v1")]
    TV1,
    #[serde(rename = "standard-webhooks")]
    StandardWebhooks,
}

impl SigningProfile {
    pub const ALL: [Self; 3] = [Self::MwV1, Self::TV1, Self::StandardWebhooks];

    /// The wire spelling, exactly: `mw-v1`, `t-v1`, `standard-webhooks`.
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

impl fmt::Display for SigningProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an attempt could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    #[error(transparent)]
    NoLiveKey(#[from] NoLiveKey),
    /// standard-webhooks reads the text after `whsec_` as base64; this
    /// stored value is not (Motor never issues one like it).
    #[error("the secret of {0} is not base64 after whsec_, as standard-webhooks needs")]
    NotBase64(SigningKeyId),
}

/// The signature headers of one attempt under one profile, in the order
/// they are sent, and the key ids that signed (newest first) for the
/// attempt's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileHeaders {
    pub profile: SigningProfile,
    headers: Vec<(&'static str, String)>,
    key_ids: Vec<SigningKeyId>,
}

impl ProfileHeaders {
    /// (name, value) pairs to put on the request or message.
    pub fn pairs(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.headers.iter().map(|(n, v)| (*n, v.as_str()))
    }

    /// The value of one of [`Self::pairs`], by exact name.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The key ids that signed, newest first.
    pub fn key_id_list(&self) -> Vec<&str> {
        self.key_ids.iter().map(SigningKeyId::as_str).collect()
    }
}

/// Signs one attempt made at `now` under `profile` with every key live at
/// `now`, newest first. mw-v1 gives exactly what [`sign`] gives.
pub fn sign_profile(
    profile: SigningProfile,
    keys: &[SigningKey],
    now: Timestamp,
    delivery_id: &str,
    body: &[u8],
) -> Result<ProfileHeaders, SignError> {
    let live = live_keys(keys, now)?;
    let key_ids = live.iter().map(|k| k.key_id.clone()).collect();
    let timestamp = now.timestamp().to_string();
    let headers = match profile {
        SigningProfile::MwV1 => {
            let signed = sign(keys, now, delivery_id, body)?;
            signed
                .pairs()
                .into_iter()
                .map(|(n, v)| (n, v.to_owned()))
                .collect()
        }
        SigningProfile::TV1 => {
            let mut value = format!("t={timestamp}");
            for k in &live {
                value.push_str(",v1=");
                value.push_str(&t_v1_signature_hex(&k.secret, &timestamp, body));
            }
            vec![(HEADER_SIGNATURE, value)]
        }
        SigningProfile::StandardWebhooks => {
            let signatures = live
                .iter()
                .map(|k| {
                    standard_webhooks_signature(&k.secret, delivery_id, &timestamp, body)
                        .ok_or_else(|| SignError::NotBase64(k.key_id.clone()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            vec![
                (SW_HEADER_ID, delivery_id.to_owned()),
                (SW_HEADER_TIMESTAMP, timestamp),
                (SW_HEADER_SIGNATURE, signatures.join(" ")),
            ]
        }
    };
    Ok(ProfileHeaders {
        profile,
        headers,
        key_ids,
    })
}

/// `hex(HMAC-SHA256(secret, timestamp + "." + body))`, the secret string
/// as the key (t-v1).
pub fn t_v1_signature_hex(secret: &SigningSecret, timestamp: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes())
        .expect("HMAC accepts keys of any length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// The Standard Webhooks HMAC key of a secret: the base64 decoding of the
/// text after `whsec_` (48 bytes for a secret Motor issued). `None` when
/// that text is not base64.
pub fn standard_webhooks_key(secret: &SigningSecret) -> Option<Vec<u8>> {
    let value = secret.expose();
    let encoded = value.strip_prefix(SECRET_PREFIX).unwrap_or(value);
    SECRET_BASE64
        .decode(encoded)
        .ok()
        .filter(|key| !key.is_empty())
}

/// `v1,base64(HMAC-SHA256(key, id + "." + timestamp + "." + body))`, one
/// entry of `webhook-signature`. `None` when the secret is not base64.
pub fn standard_webhooks_signature(
    secret: &SigningSecret,
    id: &str,
    timestamp: &str,
    body: &[u8],
) -> Option<String> {
    let key = standard_webhooks_key(secret)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC accepts keys of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{secret::IssuedSecret, time};

    fn key(secret: SigningSecret, id: &str, created: &str, expires: Option<&str>) -> SigningKey {
        SigningKey {
            key_id: SigningKeyId::parse(id).unwrap(),
            secret,
            created_at: time::parse(created).unwrap(),
            expires_at: expires.map(|e| time::parse(e).unwrap()),
        }
    }

    fn hmac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
        for p in parts {
            mac.update(p);
        }
        mac.finalize().into_bytes().to_vec()
    }

    /// A rotation at 15:30: `whk_0b` (new) and `whk_0a` (old, ends at 16:00).
    fn rotation() -> (SigningKey, SigningKey, Timestamp) {
        let old = key(
            IssuedSecret::generate().secret,
            "whk_0a",
            "2026-10-24T10:00:00Z",
            Some("2026-10-24T16:00:00Z"),
        );
        let new = key(
            IssuedSecret::generate().secret,
            "whk_0b",
            "2026-10-24T15:00:00Z",
            None,
        );
        (new, old, time::parse("2026-10-24T15:30:00Z").unwrap())
    }

    #[test]
    fn wire_spellings() {
        for p in SigningProfile::ALL {
            assert_eq!(SigningProfile::parse(p.as_str()), Some(p));
            assert_eq!(p.to_string(), p.as_str());
        }
        for p in SigningProfile::ALL {
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.as_str()));
            assert_eq!(serde_json::from_str::<SigningProfile>(&json).unwrap(), p);
        }
        assert!(serde_json::from_str::<SigningProfile>("\"MwV1\"").is_err());
        assert_eq!(SigningProfile::default(), SigningProfile::MwV1);
        assert_eq!(SigningProfile::default().as_str(), "mw-v1");
        for bad in ["", "MW-V1", "mw_v1", "standard_webhooks", "v1"] {
            assert_eq!(SigningProfile::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn mw_v1_is_byte_identical_to_sign() {
        let (new, old, now) = rotation();
        let keys = [old, new];
        let before = sign(&keys, now, "d-1", b"{}").unwrap();
        let after = sign_profile(SigningProfile::MwV1, &keys, now, "d-1", b"{}").unwrap();
        let pairs: Vec<(&str, &str)> = after.pairs().collect();
        assert_eq!(pairs, before.pairs().to_vec());
        assert_eq!(after.key_id_list(), before.key_id_list());
    }

    #[test]
    fn t_v1_one_v1_per_live_key_newest_first() {
        let (new, old, now) = rotation();
        let keys = [old.clone(), new.clone()];
        let body = br#"{"seq":1}"#;
        let h = sign_profile(SigningProfile::TV1, &keys, now, "d-1", body).unwrap();
        let ts = now.timestamp().to_string();
        let expected = format!(
            "t={ts},v1={},v1={}",
            hex::encode(hmac(
                new.secret.expose().as_bytes(),
                &[ts.as_bytes(), b".", body]
            )),
            hex::encode(hmac(
                old.secret.expose().as_bytes(),
                &[ts.as_bytes(), b".", body]
            )),
        );
        let pairs: Vec<(&str, &str)> = h.pairs().collect();
        assert_eq!(pairs, [("X-MW-Signature", expected.as_str())]);
        assert_eq!(h.key_id_list(), ["whk_0b", "whk_0a"]);
        // After the window only the new key signs.
        let later = time::parse("2026-10-24T16:00:00Z").unwrap();
        let h = sign_profile(SigningProfile::TV1, &keys, later, "d-1", body).unwrap();
        assert_eq!(h.get("X-MW-Signature").unwrap().matches("v1=").count(), 1);
    }

    #[test]
    fn standard_webhooks_one_entry_per_key_space_separated() {
        let (new, old, now) = rotation();
        let keys = [old.clone(), new.clone()];
        let body = br#"{"seq":1}"#;
        let h = sign_profile(SigningProfile::StandardWebhooks, &keys, now, "d-1", body).unwrap();
        let ts = now.timestamp().to_string();
        let entry = |k: &SigningKey| {
            let hex = k.secret.expose().strip_prefix("whsec_").unwrap();
            let key = STANDARD.decode(hex).unwrap();
            assert_eq!(key.len(), 48);
            let tag = hmac(&key, &[b"d-1", b".", ts.as_bytes(), b".", body]);
            format!("v1,{}", STANDARD.encode(tag))
        };
        let sigs = format!("{} {}", entry(&new), entry(&old));
        let pairs: Vec<(&str, &str)> = h.pairs().collect();
        assert_eq!(
            pairs,
            [
                ("webhook-id", "d-1"),
                ("webhook-timestamp", ts.as_str()),
                ("webhook-signature", sigs.as_str()),
            ]
        );
        assert_eq!(h.key_id_list(), ["whk_0b", "whk_0a"]);
    }

    #[test]
    fn nothing_live_or_a_secret_that_is_not_base64() {
        let (new, old, _) = rotation();
        let after = time::parse("2026-10-24T16:00:00Z").unwrap();
        for p in SigningProfile::ALL {
            assert_eq!(
                sign_profile(p, std::slice::from_ref(&old), after, "d", b"{}"),
                Err(SignError::NoLiveKey(NoLiveKey))
            );
            assert_eq!(
                sign_profile(p, &[], after, "d", b"{}"),
                Err(SignError::NoLiveKey(NoLiveKey))
            );
        }
        // 65 hex digits: a valid stored value, but not base64.
        let odd = SigningSecret::parse(format!("whsec_{}", "a".repeat(65))).unwrap();
        let k = key(odd, "whk_0c", "2026-10-24T15:00:00Z", None);
        assert_eq!(
            sign_profile(
                SigningProfile::StandardWebhooks,
                &[k.clone(), new],
                after,
                "d",
                b"{}"
            ),
            Err(SignError::NotBase64(k.key_id.clone()))
        );
        assert!(sign_profile(SigningProfile::TV1, &[k], after, "d", b"{}").is_ok());
    }

    /// The Standard Webhooks specification's published vectors, produced
    /// by this signer (standard-webhooks/standard-webhooks: the Python, Go,
    /// JavaScript… tests' `test_sign_function`, and the Rust `test_sign`).
    #[test]
    fn the_standard_webhooks_published_vectors() {
        let vectors = [
            (
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                r#"{"test": 2432232314}"#,
                "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            ),
            (
                "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
                "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
                1649367553,
                r#"{"email":"test@example.com","username":"test_user"}"#,
                "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=",
            ),
        ];
        for (secret, id, ts, payload, expected) in vectors {
            let now = chrono::DateTime::from_timestamp(ts, 0).unwrap();
            let k = SigningKey {
                key_id: SigningKeyId::parse("whk_01").unwrap(),
                secret: SigningSecret::any_for_tests(secret),
                created_at: now,
                expires_at: None,
            };
            let h = sign_profile(
                SigningProfile::StandardWebhooks,
                &[k],
                now,
                id,
                payload.as_bytes(),
            )
            .unwrap();
            assert_eq!(h.get("webhook-signature"), Some(expected), "{id}");
            assert_eq!(h.get("webhook-id"), Some(id));
            assert_eq!(h.get("webhook-timestamp"), Some(ts.to_string().as_str()));
        }
    }
}
