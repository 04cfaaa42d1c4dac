//! standard-webhooks (<https://www.standardwebhooks.com>, spec 1.0.0):
//! `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64>
//! [v1,<base64>]` (space separated), each the base64 of
//! `HMAC-SHA256(key, id + "." + timestamp + "." + body)` where the key is
//! the base64 decoding of the secret after `whsec_`.

use std::time::SystemTime;

use base64::{engine::general_purpose::STANDARD, Engine};

use crate::{
    headers::{required, Headers},
    profile::{check_window, mac, matches, parse_timestamp, Profile, Verified, MAX_SIGNATURES},
    Secret, VerifyError,
};

pub const ID: &str = "webhook-id";
pub const TIMESTAMP: &str = "webhook-timestamp";
pub const SIGNATURE: &str = "webhook-signature";

/// Verifies a Standard Webhooks request. Signatures of other versions
/// (`v1a`, asymmetric) are skipped; any v1 that matches any secret accepts.
pub fn verify<H: Headers + ?Sized>(
    headers: &H,
    body: &[u8],
    secrets: &[Secret],
    now: SystemTime,
) -> Result<Verified, VerifyError> {
    let id = required(headers, ID)?;
    if id.contains('.') {
        return Err(VerifyError::malformed(ID, "contains '.'"));
    }
    let ts_text = required(headers, TIMESTAMP)?;
    let timestamp = parse_timestamp(TIMESTAMP, ts_text)?;
    let header = required(headers, SIGNATURE)?;
    let items: Vec<&str> = header.split(' ').filter(|i| !i.is_empty()).collect();
    if items.len() > MAX_SIGNATURES {
        return Err(VerifyError::malformed(SIGNATURE, "too many signatures"));
    }
    let mut tags = Vec::new();
    for item in items {
        let (version, value) = item
            .split_once(',')
            .ok_or(VerifyError::malformed(SIGNATURE, "not version,signature"))?;
        if version == "v1" {
            match STANDARD.decode(value) {
                Ok(tag) if tag.len() == 32 => tags.push(tag),
                _ => {
                    return Err(VerifyError::malformed(
                        SIGNATURE,
                        "v1 is not a base64 HMAC-SHA256",
                    ))
                }
            }
        }
    }
    if tags.is_empty() {
        return Err(VerifyError::malformed(SIGNATURE, "no v1 signature"));
    }
    check_window(timestamp, now)?;

    for secret in secrets {
        let Some(key) = secret.hmac_key(Profile::StandardWebhooks) else {
            continue;
        };
        let m = mac(&key, &[id.as_bytes(), b".", ts_text.as_bytes(), b".", body]);
        if tags.iter().any(|tag| matches(&m, tag)) {
            return Ok(Verified {
                profile: Profile::StandardWebhooks,
                timestamp,
                delivery_id: Some(id.to_owned()),
                key_id: secret.key_id().map(str::to_owned),
            });
        }
    }
    Err(VerifyError::BadSignature)
}
