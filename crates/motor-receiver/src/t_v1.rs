//! t-v1: one header, `X-MW-Signature: t=<unix>,v1=<hex>[,v1=<hex>]`, each
//! v1 `hex(HMAC-SHA256(secret, t + "." + body))`, one per live key. The
//! header travels once with every signature inside; a repeated header is
//! refused, never joined.

use std::time::SystemTime;

use crate::{
    headers::{optional, required, Headers},
    mw_v1::decode_hex,
    profile::{check_window, mac, matches, parse_timestamp, Profile, Verified, MAX_SIGNATURES},
    Secret, VerifyError,
};

pub const SIGNATURE: &str = "x-mw-signature";
/// Not signed in this profile; reported in [`Verified::delivery_id`].
pub const DELIVERY_ID: &str = "x-mw-delivery-id";

/// Verifies a t-v1 request: every v1 against every secret, any match
/// accepts. Unknown `key=value` items are skipped (a later scheme); `t`
/// must appear exactly once.
pub fn verify<H: Headers + ?Sized>(
    headers: &H,
    body: &[u8],
    secrets: &[Secret],
    now: SystemTime,
) -> Result<Verified, VerifyError> {
    let header = required(headers, SIGNATURE)?;
    let delivery_id = optional(headers, DELIVERY_ID)?;
    let mut ts_text = None;
    let mut tags = Vec::new();
    let items: Vec<&str> = header.split(',').map(str::trim).collect();
    if items.len() > MAX_SIGNATURES + 1 {
        return Err(VerifyError::malformed(SIGNATURE, "too many items"));
    }
    for item in items {
        let (key, value) = item
            .split_once('=')
            .ok_or(VerifyError::malformed(SIGNATURE, "not key=value"))?;
        match key {
            "t" if ts_text.is_some() => {
                return Err(VerifyError::malformed(SIGNATURE, "t more than once"))
            }
            "t" => ts_text = Some(value),
            "v1" => tags.push(decode_hex(value)?),
            _ => {}
        }
    }
    let ts_text = ts_text.ok_or(VerifyError::malformed(SIGNATURE, "no t="))?;
    let timestamp = parse_timestamp(SIGNATURE, ts_text)?;
    if tags.is_empty() {
        return Err(VerifyError::malformed(SIGNATURE, "no v1 signature"));
    }
    check_window(timestamp, now)?;

    for secret in secrets {
        let Some(key) = secret.hmac_key(Profile::TV1) else {
            continue;
        };
        let m = mac(&key, &[ts_text.as_bytes(), b".", body]);
        if tags.iter().any(|tag| matches(&m, tag)) {
            return Ok(Verified {
                profile: Profile::TV1,
                timestamp,
                delivery_id: delivery_id.map(str::to_owned),
                key_id: secret.key_id().map(str::to_owned),
            });
        }
    }
    Err(VerifyError::BadSignature)
}
