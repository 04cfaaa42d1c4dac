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
    let opened = OpenedKeys::open(
        sealing,
        subscription,
        sealed.iter().filter(|k| k.is_live(now)),
    );
    LiveKeys {
        keys: opened.keys,
        unopened: opened.unopened.into_iter().map(|k| k.key_id).collect(),
    }
}

/// A subscription's keys opened once, whatever their life span, for an
/// attempt cache to keep: the signer takes those live at its own instant
/// (`signature::sign_profile`), so a retiring key stops signing the moment
/// its window ends however long ago the set was opened. Opening them at
/// every attempt was 4 % of Motor's CPU in a fan-out.
#[derive(Debug, Default)]
pub struct OpenedKeys {
    keys: Vec<SigningKey>,
    /// Those that did not open, as stored.
    unopened: Vec<SealedKey>,
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
                Err(_) => opened.unopened.push(key.clone()),
            }
        }
        opened
    }

    /// Every key that opened, live or not (the signer picks).
    pub fn keys(&self) -> &[SigningKey] {
        &self.keys
    }

    /// The ids of the keys live at `now` that did not open (for the
    /// caller to log).
    pub fn unopened_at(&self, now: Timestamp) -> impl Iterator<Item = &str> {
        self.unopened
            .iter()
            .filter(move |k| k.is_live(now))
            .map(|k| k.key_id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{seal::secret_aad, secret::IssuedSecret, signature, time};

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
    fn keys_opened_once_sign_while_live_and_name_the_live_ones_that_did_not_open() {
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
        let id = |n: usize| all[n].key_id.as_str();
        let opened = OpenedKeys::open(&sealing, subscription, &all);
        let signers = |at| {
            signature::sign(opened.keys(), at, "d", b"{}")
                .unwrap()
                .key_id_list()
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        // While the retiring key's window runs, both sign; once it has
        // ended, the current key alone, from the same opened set.
        let mut both = signers(now);
        both.sort();
        let mut expected = vec![id(0).to_owned(), id(1).to_owned()];
        expected.sort();
        assert_eq!(both, expected);
        assert_eq!(signers(later), [id(0)]);
        assert_eq!(opened.unopened_at(now).collect::<Vec<_>>(), [id(2), id(3)]);
        assert_eq!(opened.unopened_at(later).collect::<Vec<_>>(), [id(2)]);
        // open_live, which the probe and the checks use, opens the same.
        let live = open_live(&sealing, subscription, &all, later);
        let live_ids: Vec<_> = live.keys.iter().map(|k| k.key_id.as_str()).collect();
        assert_eq!(live_ids, [id(0)]);
        assert_eq!(live.unopened, [id(2)]);
    }
}
