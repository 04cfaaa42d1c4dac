//! What the broker senders share: one link (a connection made on first
//! use) per destination and login, looked up by a key that holds a digest
//! of the login, never the login itself.

use std::{
    collections::HashMap,
    hash::Hash,
    sync::{Arc, Mutex},
};

use motor_domain::credentials::BrokerCredentials;
use sha2::{Digest, Sha256};

/// The links of one sender, by key; a link is made empty on first use.
pub(crate) struct Links<K, L>(Arc<Mutex<HashMap<K, Arc<L>>>>);

impl<K, L> Clone for Links<K, L> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<K, L> Default for Links<K, L> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<K: Eq + Hash, L: Default> Links<K, L> {
    pub(crate) fn get(&self, key: K) -> Arc<L> {
        self.0
            .lock()
            .expect("not poisoned")
            .entry(key)
            .or_default()
            .clone()
    }

    /// Every link made so far (to close them at shutdown).
    pub(crate) fn all(&self) -> Vec<Arc<L>> {
        self.0
            .lock()
            .expect("not poisoned")
            .values()
            .cloned()
            .collect()
    }
}

/// SHA-256 of a login (of nothing without one): two subscriptions with
/// different logins to one broker never share a connection.
pub(crate) fn login_digest(credentials: Option<&BrokerCredentials>) -> [u8; 32] {
    Sha256::digest(credentials.map(|c| c.to_plaintext()).unwrap_or_default()).into()
}
