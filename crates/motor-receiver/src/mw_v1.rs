//! mw-v1, Motor's own profile: `X-MW-Timestamp`, `X-MW-Delivery-Id`,
//! `X-MW-Key-Id: whk_new,whk_old` and `X-MW-Signature: v1=<hex>,v1=<hex>`
//! (newest first, in matching positions), each signature
//! `hex(HMAC-SHA256(secret, timestamp + "." + delivery_id + "." + body))`.

use std::time::SystemTime;

use crate::{
    headers::{required, Headers},
    profile::{check_window, mac, matches, parse_timestamp, Profile, Verified, MAX_SIGNATURES},
    Secret, VerifyError,
};

pub const TIMESTAMP: &str = "x-mw-timestamp";
pub const DELIVERY_ID: &str = "x-mw-delivery-id";
pub const KEY_ID: &str = "x-mw-key-id";
pub const SIGNATURE: &str = "x-mw-signature";

/// Verifies an mw-v1 request. Every (key id, signature) pair is checked
/// against the secrets given for that key id and those given without one;
/// any match accepts. Header shape errors come first, then the window
/// (408), then the signatures (401).
pub fn verify<H: Headers + ?Sized>(
    headers: &H,
    body: &[u8],
    secrets: &[Secret],
    now: SystemTime,
) -> Result<Verified, VerifyError> {
    let ts_text = required(headers, TIMESTAMP)?;
    let timestamp = parse_timestamp(TIMESTAMP, ts_text)?;
    let delivery_id = required(headers, DELIVERY_ID)?;
    if delivery_id.contains('.') {
        // The id is a field of the signed message: a '.' would let bytes
        // move between it and the body under the same signature.
        return Err(VerifyError::malformed(DELIVERY_ID, "contains '.'"));
    }
    let key_ids = split_list(KEY_ID, required(headers, KEY_ID)?)?;
    let signatures = split_list(SIGNATURE, required(headers, SIGNATURE)?)?;
    if key_ids.len() != signatures.len() {
        return Err(VerifyError::malformed(
            KEY_ID,
            "not as many key ids as signatures",
        ));
    }
    let mut pairs = Vec::with_capacity(signatures.len());
    for (key_id, item) in key_ids.into_iter().zip(signatures) {
        let (scheme, value) = item
            .split_once('=')
            .ok_or(VerifyError::malformed(SIGNATURE, "not scheme=value"))?;
        // Other schemes are a later Motor's: skipped, never an error.
        if scheme == "v1" {
            let tag = decode_hex(value)?;
            pairs.push((key_id, tag));
        }
    }
    if pairs.is_empty() {
        return Err(VerifyError::malformed(SIGNATURE, "no v1 signature"));
    }
    check_window(timestamp, now)?;

    let macs: Vec<_> = secrets
        .iter()
        .filter_map(|s| {
            let key = s.hmac_key(Profile::MwV1)?;
            let m = mac(
                &key,
                &[ts_text.as_bytes(), b".", delivery_id.as_bytes(), b".", body],
            );
            Some((s.key_id(), m))
        })
        .collect();
    for (key_id, tag) in &pairs {
        let found = macs
            .iter()
            .filter(|(id, _)| id.is_none_or(|id| id == *key_id))
            .any(|(_, m)| matches(m, tag));
        if found {
            return Ok(Verified {
                profile: Profile::MwV1,
                timestamp,
                delivery_id: Some(delivery_id.to_owned()),
                key_id: Some((*key_id).to_owned()),
            });
        }
    }
    Err(VerifyError::BadSignature)
}

/// A comma-separated list of non-empty, trimmed items, at most
/// [`MAX_SIGNATURES`] of them.
fn split_list<'a>(header: &'static str, value: &'a str) -> Result<Vec<&'a str>, VerifyError> {
    let items: Vec<&str> = value.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err(VerifyError::malformed(header, "empty list item"));
    }
    if items.len() > MAX_SIGNATURES {
        return Err(VerifyError::malformed(header, "too many items"));
    }
    Ok(items)
}

/// A v1 value: the 32 bytes of an HMAC-SHA256, in hex.
pub(crate) fn decode_hex(value: &str) -> Result<Vec<u8>, VerifyError> {
    match hex::decode(value) {
        Ok(tag) if tag.len() == 32 => Ok(tag),
        _ => Err(VerifyError::malformed(SIGNATURE, "v1 is not 64 hex digits")),
    }
}
