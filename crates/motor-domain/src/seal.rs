//! Sealing secrets at rest. `MOTOR_MASTER_KEY` is stretched with
//! HKDF-SHA256 into an XChaCha20-Poly1305 key; each sealed value carries a
//! version byte and a random 192-bit nonce, and is bound (as associated
//! data) to the row it belongs to, so a sealed secret copied to another
//! subscription does not open. The store only ever sees sealed bytes.

use std::fmt;

use chacha20poly1305::{
    aead::{Aead, KeyInit, Payload},
    XChaCha20Poly1305, XNonce,
};
use hkdf::Hkdf;
use rand::RngCore;
use sha2::Sha256;

/// Shortest master key accepted, in bytes.
pub const MIN_MASTER_KEY_BYTES: usize = 32;
const VERSION: u8 = 1;
const NONCE_BYTES: usize = 24;
const HKDF_SALT: &[u8] = b"motor/seal";
const HKDF_INFO: &[u8] = b"motor/seal/v1 subscription secrets";

/// What the canary row seals: opening it proves the master key is the one
/// that sealed this database's secrets.
pub const CANARY_PLAINTEXT: &[u8] = b"motor master key canary v1";
pub const CANARY_AAD: &[u8] = b"motor/canary";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("the master key must be at least {MIN_MASTER_KEY_BYTES} bytes")]
    WeakMasterKey,
    /// Wrong key, wrong row, or tampered bytes: AEAD cannot tell which.
    #[error("sealed value does not open with this master key")]
    DoesNotOpen,
}

/// The key derived from `MOTOR_MASTER_KEY`. Never printed.
#[derive(Clone)]
pub struct SealingKey(chacha20poly1305::Key);

impl SealingKey {
    pub fn derive(master_key: &str) -> Result<Self, SealError> {
        if master_key.len() < MIN_MASTER_KEY_BYTES {
            return Err(SealError::WeakMasterKey);
        }
        let mut key = chacha20poly1305::Key::default();
        Hkdf::<Sha256>::new(Some(HKDF_SALT), master_key.as_bytes())
            .expand(HKDF_INFO, &mut key)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        Ok(Self(key))
    }

    /// Seals `plaintext`, bound to `aad` (what identifies its row).
    pub fn seal(&self, plaintext: &[u8], aad: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_BYTES];
        rand::thread_rng().fill_bytes(&mut nonce);
        let ciphertext = XChaCha20Poly1305::new(&self.0)
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad,
                },
            )
            .expect("XChaCha20-Poly1305 encryption does not fail for in-memory input");
        let mut sealed = Vec::with_capacity(1 + NONCE_BYTES + ciphertext.len());
        sealed.push(VERSION);
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        sealed
    }

    /// Opens what [`seal`](Self::seal) produced with the same key and `aad`.
    pub fn open(&self, sealed: &[u8], aad: &[u8]) -> Result<Vec<u8>, SealError> {
        let [version, rest @ ..] = sealed else {
            return Err(SealError::DoesNotOpen);
        };
        if *version != VERSION || rest.len() < NONCE_BYTES {
            return Err(SealError::DoesNotOpen);
        }
        let (nonce, ciphertext) = rest.split_at(NONCE_BYTES);
        XChaCha20Poly1305::new(&self.0)
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad,
                },
            )
            .map_err(|_| SealError::DoesNotOpen)
    }

    /// A fresh canary for a database that has none yet.
    pub fn seal_canary(&self) -> Vec<u8> {
        self.seal(CANARY_PLAINTEXT, CANARY_AAD)
    }

    /// Whether the canary stored in the database opens with this key.
    pub fn opens_canary(&self, sealed: &[u8]) -> bool {
        self.open(sealed, CANARY_AAD).as_deref() == Ok(CANARY_PLAINTEXT)
    }
}

impl fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealingKey([REDACTED])")
    }
}

/// Associated data binding a sealed webhook secret to its subscription and
/// key id.
pub fn secret_aad(subscription: &uuid::Uuid, key_id: &str) -> Vec<u8> {
    format!("motor/subscription-secret/{subscription}/{key_id}").into_bytes()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const MASTER: &str = "0123456789abcdef0123456789abcdef-test";

    #[test]
    fn round_trip_and_binding() {
        let key = SealingKey::derive(MASTER).unwrap();
        let sealed = key.seal(b"whsec_x", b"row-1");
        assert_eq!(key.open(&sealed, b"row-1").unwrap(), b"whsec_x");
        assert_eq!(key.open(&sealed, b"row-2"), Err(SealError::DoesNotOpen));
        let other = SealingKey::derive(&format!("{MASTER}!")).unwrap();
        assert_eq!(other.open(&sealed, b"row-1"), Err(SealError::DoesNotOpen));
        // Same input, new nonce: sealing twice never gives the same bytes.
        assert_ne!(key.seal(b"whsec_x", b"row-1"), sealed);
        assert!(!sealed.windows(7).any(|w| w == b"whsec_x"));
    }

    #[test]
    fn tampering_is_detected() {
        let key = SealingKey::derive(MASTER).unwrap();
        let sealed = key.seal(b"secret", b"aad");
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 1;
            assert!(key.open(&bad, b"aad").is_err(), "byte {i}");
        }
        assert!(key.open(&[], b"aad").is_err());
        assert!(key.open(&sealed[..10], b"aad").is_err());
    }

    #[test]
    fn weak_master_keys_are_refused() {
        assert_eq!(
            SealingKey::derive("short").unwrap_err(),
            SealError::WeakMasterKey
        );
        assert!(SealingKey::derive(&"k".repeat(MIN_MASTER_KEY_BYTES)).is_ok());
    }

    #[test]
    fn canary() {
        let key = SealingKey::derive(MASTER).unwrap();
        let canary = key.seal_canary();
        assert!(key.opens_canary(&canary));
        let other = SealingKey::derive(&"x".repeat(40)).unwrap();
        assert!(!other.opens_canary(&canary));
        assert!(!format!("{key:?}").contains(MASTER));
    }

    proptest! {
        #[test]
        fn any_bytes_round_trip(msg in proptest::collection::vec(any::<u8>(), 0..512),
                                aad in proptest::collection::vec(any::<u8>(), 0..64)) {
            let key = SealingKey::derive(MASTER).unwrap();
            prop_assert_eq!(key.open(&key.seal(&msg, &aad), &aad).unwrap(), msg);
        }
    }
}
