//! Webhook signatures. A subscription's signing profile ([`SigningProfile`],
//! its `firma`) decides the headers; the delivery engine signs every
//! attempt with the attempt's own time and every key live at that time,
//! newest first. Receivers verify with the `motor-receiver` crate, or with
//! the snippets of the public docs.
//!
//! - `mw-v1` (the default; [`sign`]): `X-MW-Timestamp`, `X-MW-Key-Id` and
//!   `X-MW-Signature: v1=hex(HMAC-SHA256(secret, timestamp + "." +
//!   delivery_id + "." + raw_body))`, comma-separated during a rotation, key
//!   ids in matching order.
//! - `t-v1`: one header, `X-MW-Signature: t=<unix>,v1=<hex>[,v1=<hex>]`, each
//!   `hex(HMAC-SHA256(secret, timestamp + "." + raw_body))`, one per live key.
//! - `standard-webhooks` (spec 1.0.0): `webhook-id` (the delivery id: the
//!   same on every retry), `webhook-timestamp`, and `webhook-signature:
//!   v1,<base64>[ v1,<base64>]`, each `base64(HMAC-SHA256(key, id + "." +
//!   timestamp + "." + raw_body))`.
//!
//! # The HMAC key of each profile (a decision; see also [`crate::secret`])
//!
//! A subscription has one secret per key, shown once as `whsec_` followed by
//! 64 lower-case hex digits (32 random bytes), and every profile signs with
//! that same string — no second secret, no second format to show:
//!
//! - mw-v1 and t-v1 key the HMAC with the whole string, prefix included, as
//!   UTF-8 bytes. That is what mw-v1 has always done (and what the docs'
//!   `openssl -hmac "$SECRETO"` and `createHmac('sha256', secreto)` do), and
//!   what the t-v1 verifiers of the docs (`secreto.encode()`) do.
//! - standard-webhooks keys it with the base64 decoding of the text after
//!   `whsec_`, as the specification says a `whsec_<base64>` secret is read.
//!   Hex digits are base64 characters and 64 is a multiple of 4, so Motor's
//!   string *is* a valid `whsec_<base64>` secret: it decodes to 48 bytes
//!   (inside the specification's 24–64) holding the same 256 random bits,
//!   and any Standard Webhooks library verifies with the exact string the
//!   user was shown. A stored value that is not base64 (never one Motor
//!   issued) makes [`sign_profile`] fail with [`SignError::NotBase64`]
//!   rather than sign with a key no receiver would derive.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::{
    seal::{secret_aad, SealError, SealingKey},
    secret::{SigningKeyId, SigningSecret},
    time::Timestamp,
};

#[cfg(test)]
mod interop;
mod profile;

pub use profile::{
    sign_profile, standard_webhooks_key, standard_webhooks_signature, t_v1_signature_hex,
    ProfileHeaders, SignError, SigningProfile, SW_HEADER_ID, SW_HEADER_SIGNATURE,
    SW_HEADER_TIMESTAMP,
};

pub const HEADER_TIMESTAMP: &str = "X-MW-Timestamp";
pub const HEADER_KEY_ID: &str = "X-MW-Key-Id";
pub const HEADER_SIGNATURE: &str = "X-MW-Signature";
pub const SCHEME: &str = "v1=";

/// A signing key as the engine holds it: opened, with its life span.
#[derive(Debug, Clone)]
pub struct SigningKey {
    pub key_id: SigningKeyId,
    pub secret: SigningSecret,
    pub created_at: Timestamp,
    /// `None` while it is the current key; set when a rotation retires it.
    pub expires_at: Option<Timestamp>,
}

impl SigningKey {
    /// Opens a key as the store keeps it (sealed, bound to its subscription
    /// and key id). Anything that does not open into a `whk_` id and a
    /// `whsec_` value is [`SealError::DoesNotOpen`].
    pub fn open(
        sealing: &SealingKey,
        subscription: &uuid::Uuid,
        key_id: &str,
        sealed: &[u8],
        created_at: Timestamp,
        expires_at: Option<Timestamp>,
    ) -> Result<Self, SealError> {
        let key_id = SigningKeyId::parse(key_id).ok_or(SealError::DoesNotOpen)?;
        let value = sealing.open(sealed, &secret_aad(subscription, key_id.as_str()))?;
        let secret = String::from_utf8(value)
            .ok()
            .and_then(SigningSecret::parse)
            .ok_or(SealError::DoesNotOpen)?;
        Ok(Self {
            key_id,
            secret,
            created_at,
            expires_at,
        })
    }

    pub fn is_live_at(&self, now: Timestamp) -> bool {
        self.expires_at.is_none_or(|end| now < end)
    }
}

/// The three signature headers of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureHeaders {
    pub timestamp: String,
    pub key_ids: String,
    pub signatures: String,
}

impl SignatureHeaders {
    pub fn pairs(&self) -> [(&'static str, &str); 3] {
        [
            (HEADER_TIMESTAMP, &self.timestamp),
            (HEADER_KEY_ID, &self.key_ids),
            (HEADER_SIGNATURE, &self.signatures),
        ]
    }

    /// The key ids in header order.
    pub fn key_id_list(&self) -> Vec<&str> {
        self.key_ids.split(',').collect()
    }
}

/// No key of the subscription is live: the engine suspends it
/// (`sin_secreto`) rather than send an unsigned request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the subscription has no live signing key")]
pub struct NoLiveKey;

/// The hex HMAC of one (timestamp, delivery, body) under one secret.
pub fn signature_hex(
    secret: &SigningSecret,
    timestamp: &str,
    delivery_id: &str,
    body: &[u8],
) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes())
        .expect("HMAC accepts keys of any length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(delivery_id.as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// Signs one attempt made at `now` with every key live at `now`, newest
/// first (by `creado_en`, then key id, so the order is stable).
pub fn sign(
    keys: &[SigningKey],
    now: Timestamp,
    delivery_id: &str,
    body: &[u8],
) -> Result<SignatureHeaders, NoLiveKey> {
    let live = live_keys(keys, now)?;
    let timestamp = now.timestamp().to_string();
    let key_ids: Vec<&str> = live.iter().map(|k| k.key_id.as_str()).collect();
    let signatures: Vec<String> = live
        .iter()
        .map(|k| {
            format!(
                "{SCHEME}{}",
                signature_hex(&k.secret, &timestamp, delivery_id, body)
            )
        })
        .collect();
    Ok(SignatureHeaders {
        timestamp,
        key_ids: key_ids.join(","),
        signatures: signatures.join(","),
    })
}

/// The keys live at `now`, newest first (by `creado_en`, then key id).
fn live_keys(keys: &[SigningKey], now: Timestamp) -> Result<Vec<&SigningKey>, NoLiveKey> {
    let mut live: Vec<&SigningKey> = keys.iter().filter(|k| k.is_live_at(now)).collect();
    if live.is_empty() {
        return Err(NoLiveKey);
    }
    live.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| b.key_id.cmp(&a.key_id))
    });
    Ok(live)
}

#[cfg(test)]
mod tests {
    use std::{
        io::Write,
        process::{Command, Stdio},
    };

    use chrono::Duration;
    use proptest::prelude::*;

    use super::*;
    use crate::{secret::IssuedSecret, time};

    /// The seed's receiver example (`El receptor`), with a fixed timestamp.
    const SEED_SECRET: &str = "TU_SECRETO_DE_WEBHOOK";
    const SEED_DELIVERY: &str = "3c9a7e55-0000-4000-8000-0000000000e1";
    const SEED_BODY: &str = r#"{"schema_version":1,"event_id":"e1f0c2d4-0000-4000-8000-000000001187","instance_id":"8a1d2c3e-0000-4000-8000-0000000000a1","seq":1187,"type":"webhook.test","occurred_at":"2026-10-24T15:08:12Z","received_at":"2026-10-24T15:08:13Z","generation":1,"origin":"operator","data":{"prueba":true}}"#;
    const SEED_TS: &str = "2026-10-24T15:08:13Z";
    /// `printf '%s.%s.%s' 1792854493 "$DELIVERY" "$CUERPO" | openssl dgst
    /// -sha256 -hmac "$SECRETO" -hex`, run once by hand.
    const SEED_SIGNATURE: &str = "8f81d41de4e69a1926a675cd6f2abe48200f639f23b3a45225792a6bed248821";

    /// A secret with an arbitrary value (the seed's placeholder is not a
    /// `whsec_` value, so it is built without `parse`).
    fn key(value: &str, id: &str, created: &str, expires: Option<&str>) -> SigningKey {
        SigningKey {
            key_id: SigningKeyId::parse(id).unwrap(),
            secret: test_secret(value),
            created_at: time::parse(created).unwrap(),
            expires_at: expires.map(|e| time::parse(e).unwrap()),
        }
    }

    fn test_secret(value: &str) -> SigningSecret {
        SigningSecret::any_for_tests(value)
    }

    fn independent_hmac(secret: &str, ts: &str, delivery: &str, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{ts}.{delivery}.").as_bytes());
        mac.update(body);
        hex::encode(mac.finalize().into_bytes())
    }

    #[test]
    fn the_seed_example_byte_for_byte() {
        let now = time::parse(SEED_TS).unwrap();
        let k = key(SEED_SECRET, "whk_01", "2026-10-01T00:00:00Z", None);
        let headers = sign(&[k], now, SEED_DELIVERY, SEED_BODY.as_bytes()).unwrap();
        assert_eq!(headers.timestamp, "1792854493");
        assert_eq!(headers.key_ids, "whk_01");
        assert_eq!(headers.signatures, format!("v1={SEED_SIGNATURE}"));
    }

    #[test]
    fn matches_the_openssl_recipe() {
        // The seed's bash recipe, run for real on a generated secret.
        let issued = IssuedSecret::generate();
        let now = time::now_millis();
        let delivery = "0f3b9d22-0000-4000-8000-0000000000d1";
        let body = br#"{"data":{"texto":"hola \u00f1 \n"},"seq":7}"#;
        let headers = sign(
            &[SigningKey {
                key_id: issued.key_id.clone(),
                secret: issued.secret.clone(),
                created_at: now,
                expires_at: None,
            }],
            now,
            delivery,
            body,
        )
        .unwrap();
        let mut child = Command::new("openssl")
            .args(["dgst", "-sha256", "-hmac", issued.secret.expose(), "-hex"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the openssl CLI must be installed for this test");
        let mut input = format!("{}.{delivery}.", headers.timestamp).into_bytes();
        input.extend_from_slice(body);
        child.stdin.take().unwrap().write_all(&input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let printed = String::from_utf8(out.stdout).unwrap();
        let hex = printed.trim().rsplit(' ').next().unwrap();
        assert_eq!(headers.signatures, format!("v1={hex}"));
    }

    #[test]
    fn rotation_signs_with_both_newest_first_then_one() {
        let old = SigningKey {
            key_id: SigningKeyId::parse("whk_0a").unwrap(),
            secret: SigningSecret::generate(),
            created_at: time::parse("2026-10-24T10:00:00Z").unwrap(),
            expires_at: Some(time::parse("2026-10-24T16:00:00Z").unwrap()),
        };
        let new = SigningKey {
            key_id: SigningKeyId::parse("whk_0b").unwrap(),
            secret: SigningSecret::generate(),
            created_at: time::parse("2026-10-24T15:00:00Z").unwrap(),
            expires_at: None,
        };
        let keys = [old.clone(), new.clone()];
        let during = time::parse("2026-10-24T15:30:00Z").unwrap();
        let h = sign(&keys, during, "d", b"{}").unwrap();
        assert_eq!(h.key_id_list(), ["whk_0b", "whk_0a"]);
        let sigs: Vec<&str> = h.signatures.split(',').collect();
        assert_eq!(
            sigs[0],
            format!(
                "v1={}",
                independent_hmac(new.secret.expose(), &h.timestamp, "d", b"{}")
            )
        );
        assert_eq!(
            sigs[1],
            format!(
                "v1={}",
                independent_hmac(old.secret.expose(), &h.timestamp, "d", b"{}")
            )
        );
        // At the end of the window the old key no longer signs.
        let after = time::parse("2026-10-24T16:00:00Z").unwrap();
        let h = sign(&keys, after, "d", b"{}").unwrap();
        assert_eq!(h.key_id_list(), ["whk_0b"]);
        assert!(!h.signatures.contains(','));
        // Only expired keys: nothing to sign with.
        assert_eq!(sign(&[old], after, "d", b"{}"), Err(NoLiveKey));
        assert_eq!(sign(&[], during, "d", b"{}"), Err(NoLiveKey));
    }

    #[test]
    fn opens_what_was_sealed_for_its_row_only() {
        let sealing = SealingKey::derive(&"m".repeat(32)).unwrap();
        let issued = IssuedSecret::generate();
        let sub = uuid::Uuid::now_v7();
        let sealed = sealing.seal(
            issued.secret.expose().as_bytes(),
            &secret_aad(&sub, issued.key_id.as_str()),
        );
        let now = time::now_millis();
        let key =
            SigningKey::open(&sealing, &sub, issued.key_id.as_str(), &sealed, now, None).unwrap();
        assert_eq!(key.secret.expose(), issued.secret.expose());
        assert_eq!(key.key_id, issued.key_id);
        let other_sub = uuid::Uuid::now_v7();
        assert!(SigningKey::open(
            &sealing,
            &other_sub,
            issued.key_id.as_str(),
            &sealed,
            now,
            None
        )
        .is_err());
        assert!(SigningKey::open(&sealing, &sub, "whk_00", &sealed, now, None).is_err());
    }

    #[test]
    fn header_pairs() {
        let now = time::parse(SEED_TS).unwrap();
        let k = key(SEED_SECRET, "whk_01", "2026-10-01T00:00:00Z", None);
        let h = sign(&[k], now, SEED_DELIVERY, SEED_BODY.as_bytes()).unwrap();
        let pairs = h.pairs();
        assert_eq!(pairs[0], ("X-MW-Timestamp", "1792854493"));
        assert_eq!(pairs[1], ("X-MW-Key-Id", "whk_01"));
        assert_eq!(pairs[2].0, "X-MW-Signature");
    }

    proptest! {
        #[test]
        fn any_body_verifies_with_an_independent_hmac(
            body in proptest::collection::vec(any::<u8>(), 0..4096),
            delivery in "[a-f0-9-]{1,40}",
            secs in 0i64..4_000_000_000,
        ) {
            let issued = IssuedSecret::generate();
            let now = chrono::DateTime::from_timestamp(secs, 0).unwrap();
            let k = SigningKey {
                key_id: issued.key_id.clone(),
                secret: issued.secret.clone(),
                created_at: now - Duration::hours(1),
                expires_at: None,
            };
            let h = sign(&[k], now, &delivery, &body).unwrap();
            prop_assert_eq!(&h.timestamp, &secs.to_string());
            let expected = independent_hmac(issued.secret.expose(), &h.timestamp, &delivery, &body);
            prop_assert_eq!(h.signatures, format!("v1={expected}"));
        }
    }
}
