//! A subscription's signing keys as stored — sealed, with their life span —
//! and opening the live ones for an attempt. The dispatcher and the `/test`
//! probe open keys the same way: a key whose window has ended signs
//! nothing, and a key that does not open (a different master key, a
//! damaged row) is left out and named, never fatal.

use crate::{
    seal::SealingKey, signature::SigningKey, subscription::SubscriptionId, time::Timestamp,
};

/// A signing key as stored: sealed, with its life span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedKey {
    pub key_id: String,
    pub sealed: Vec<u8>,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
}

impl SealedKey {
    /// Whether the key still signs at `now`: no expiry, or one still ahead
    /// (a retiring key stops the moment its window ends).
    pub fn is_live(&self, now: Timestamp) -> bool {
        self.expires_at.is_none_or(|v| v > now)
    }
}

/// The keys that sign at `now`, opened.
#[derive(Debug, Default)]
pub struct LiveKeys {
    pub keys: Vec<SigningKey>,
    /// Key ids of live keys that did not open (for the caller to log).
    pub unopened: Vec<String>,
}

/// Opens the keys of `subscription` that are live at `now`.
pub fn open_live(
    sealing: &SealingKey,
    subscription: SubscriptionId,
    sealed: &[SealedKey],
    now: Timestamp,
) -> LiveKeys {
    let mut live = LiveKeys::default();
    for key in sealed.iter().filter(|k| k.is_live(now)) {
        match SigningKey::open(
            sealing,
            subscription.as_uuid(),
            &key.key_id,
            &key.sealed,
            key.created_at,
            key.expires_at,
        ) {
            Ok(opened) => live.keys.push(opened),
            Err(_) => live.unopened.push(key.key_id.clone()),
        }
    }
    live
}
