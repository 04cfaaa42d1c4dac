//! Signing by hand for the tables (an HMAC written here, independent of
//! the crate under test), a fixed clock, and header lists to mutate.

#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::{engine::general_purpose::STANDARD, Engine};
use hmac::{Hmac, Mac};
use motor_receiver::{Profile, Secret, Verified, VerifyError};
use sha2::Sha256;

/// The clock of every table test: 2026-10-24T15:08:13Z.
pub const NOW: i64 = 1_792_854_493;

pub const SECRET_A: &str = "whsec_9c1f0e2d3b4a59687766554433221100ffeeddccbbaa99887766554433221100";
pub const SECRET_B: &str = "whsec_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
pub const WRONG: &str = "whsec_0000000000000000000000000000000000000000000000000000000000000000";

pub const BODY: &[u8] = br#"{"schema_version":1,"event_id":"e1f0c2d4-0000-4000-8000-000000001187","instance_id":"8a1d2c3e-0000-4000-8000-0000000000a1","seq":1187,"type":"webhook.test","occurred_at":"2026-10-24T15:08:12Z","received_at":"2026-10-24T15:08:13Z","generation":1,"origin":"operator","data":{"prueba":true}}"#;
pub const DELIVERY: &str = "3c9a7e55-0000-4000-8000-0000000000e1";

pub fn at(secs: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs as u64)
}

pub fn tag(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().to_vec()
}

pub fn sw_key(secret: &str) -> Vec<u8> {
    STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .unwrap()
}

pub fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Header list a test can edit: (name, value) pairs, as they arrived.
pub type Headers = Vec<(String, Vec<u8>)>;

pub fn headers(pairs: &[(&str, &str)]) -> Headers {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec()))
        .collect()
}

pub fn set(h: &mut Headers, name: &str, value: &str) {
    h.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    h.push((name.to_owned(), value.as_bytes().to_vec()));
}

pub fn remove(h: &mut Headers, name: &str) {
    h.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
}

pub fn add(h: &mut Headers, name: &str, value: &str) {
    h.push((name.to_owned(), value.as_bytes().to_vec()));
}

pub fn check(
    profile: Profile,
    h: &Headers,
    body: &[u8],
    secrets: &[Secret],
) -> Result<Verified, VerifyError> {
    profile.verify(h, body, secrets, at(NOW))
}

pub fn malformed(header: &str) -> impl Fn(&VerifyError) -> bool + '_ {
    move |e| matches!(e, VerifyError::Malformed { header: h, .. } if *h == header)
}

/// The same body with one byte changed.
pub fn flipped(body: &[u8]) -> Vec<u8> {
    let mut b = body.to_vec();
    let i = b.len() / 2;
    b[i] ^= 0x01;
    b
}
