//! API keys: a public `key_id` and a bearer token shown once. Only the
//! token's SHA-256 is stored; the token has 256 random bits, so a plain hash
//! is enough (no password stretching needed).

use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Prefix of every bearer token, so leaked tokens are easy to grep for.
pub const TOKEN_PREFIX: &str = "mtr_";

/// A freshly issued key: the token exists only here and in the one response.
pub struct IssuedKey {
    pub key_id: String,
    pub token: String,
}

impl IssuedKey {
    pub fn generate() -> Self {
        let mut rng = rand::thread_rng();
        let mut id = [0u8; 8];
        let mut secret = [0u8; 32];
        rng.fill_bytes(&mut id);
        rng.fill_bytes(&mut secret);
        Self {
            key_id: format!("key_{}", hex::encode(id)),
            token: format!("{TOKEN_PREFIX}{}", hex::encode(secret)),
        }
    }

    pub fn token_hash(&self) -> Vec<u8> {
        token_hash(&self.token)
    }
}

/// The stored form of a token.
pub fn token_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Compares two byte strings in time independent of where they differ
/// (`subtle`, which keeps the optimiser from shortening the loop). Lengths
/// are not secret here: tokens, tags and hashes have fixed lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_hash_is_stable() {
        let a = IssuedKey::generate();
        let b = IssuedKey::generate();
        assert_ne!(a.token, b.token);
        assert_ne!(a.key_id, b.key_id);
        assert!(a.token.starts_with(TOKEN_PREFIX));
        assert_eq!(a.token_hash(), token_hash(&a.token));
        assert_ne!(a.token_hash(), b.token_hash());
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }
}
