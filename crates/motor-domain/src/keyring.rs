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
    OpenedKeys::open(
        sealing,
        subscription,
        sealed.iter().filter(|k| k.is_live(now)),
    )
    .live(now)
}

/// A subscription's keys opened once, whatever their life span: each
/// attempt then takes the live ones ([`OpenedKeys::live`]) without opening
/// them again (opening them at every attempt was 4 % of Motor's CPU in a
/// fan-out).
#[derive(Debug, Default)]
pub struct OpenedKeys {
    keys: Vec<SigningKey>,
    /// Those that did not open: their key ids and when they stop signing.
    unopened: Vec<(String, Option<Timestamp>)>,
}

impl OpenedKeys {
    pub fn open<'a>(
        sealing: &SealingKey,
        subscription: SubscriptionId,
        sealed: impl IntoIterator<Item = &'a SealedKey>,
    ) -> Self {
        let mut opened = Self::default();
        for key in sealed {
            match SigningKey::open(
                sealing,
                subscription.as_uuid(),
                &key.key_id,
                &key.sealed,
                key.created_at,
                key.expires_at,
            ) {
                Ok(key) => opened.keys.push(key),
                Err(_) => opened.unopened.push((key.key_id.clone(), key.expires_at)),
            }
        }
        opened
    }

    /// The keys that sign at `now` (a retiring key stops the moment its
    /// window ends), and the ids of those that did not open.
    pub fn live(&self, now: Timestamp) -> LiveKeys {
        LiveKeys {
            keys: self
                .keys
                .iter()
                .filter(|k| k.is_live_at(now))
                .cloned()
                .collect(),
            unopened: self
                .unopened
                .iter()
                .filter(|(_, expires_at)| expires_at.is_none_or(|end| end > now))
                .map(|(id, _)| id.clone())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{seal::secret_aad, secret::IssuedSecret, time};

    fn sealed(
        sealing: &SealingKey,
        subscription: SubscriptionId,
        expires_at: Option<Timestamp>,
    ) -> SealedKey {
        let issued = IssuedSecret::generate();
        SealedKey {
            key_id: issued.key_id.as_str().to_owned(),
            sealed: sealing.seal(
                issued.secret.expose().as_bytes(),
                &secret_aad(subscription.as_uuid(), issued.key_id.as_str()),
            ),
            created_at: time::now_millis(),
            expires_at,
        }
    }

    #[test]
    fn keys_opened_once_sign_while_live_as_open_live_opens_them() {
        let sealing = SealingKey::derive(&"m".repeat(32)).unwrap();
        let subscription = SubscriptionId::new();
        let now = time::now_millis();
        let later = now + chrono::Duration::hours(1);
        let current = sealed(&sealing, subscription, None);
        let retiring = sealed(&sealing, subscription, Some(later));
        let mut damaged = sealed(&sealing, subscription, None);
        damaged.sealed[0] ^= 1;
        let mut damaged_retiring = sealed(&sealing, subscription, Some(later));
        damaged_retiring.sealed[0] ^= 1;
        let all = [current, retiring, damaged, damaged_retiring];
        let opened = OpenedKeys::open(&sealing, subscription, &all);
        let ids = |live: &LiveKeys| -> Vec<String> {
            live.keys
                .iter()
                .map(|k| k.key_id.as_str().to_owned())
                .collect()
        };
        for at in [now, later] {
            let live = opened.live(at);
            let fresh = open_live(&sealing, subscription, &all, at);
            assert_eq!(ids(&live), ids(&fresh), "at {at}");
            assert_eq!(live.unopened, fresh.unopened, "at {at}");
        }
        let during = opened.live(now);
        assert_eq!(ids(&during), [all[0].key_id.clone(), all[1].key_id.clone()]);
        assert_eq!(
            during.unopened,
            [all[2].key_id.clone(), all[3].key_id.clone()]
        );
        // The retiring key's window has ended: it signs no more, and its
        // damaged twin is no longer named.
        let after = opened.live(later);
        assert_eq!(ids(&after), [all[0].key_id.clone()]);
        assert_eq!(after.unopened, [all[2].key_id.clone()]);
    }
}
