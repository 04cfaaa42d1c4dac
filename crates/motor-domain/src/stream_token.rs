//! Stream tokens (`POST /v1/instances/{id}/stream-tokens`): a browser's
//! `EventSource` and `WebSocket` cannot send an `Authorization` header, so
//! a backend holding an API key asks for a short-lived token and hands it
//! to the browser, which opens the stream with `?token=`. A token reads
//! one instance's stream and nothing else, for at most
//! [`MAX_LIFETIME_SECS`] from its issue.
//!
//! Stateless: the grant (app, instance, issuing key, expiry) is sealed with
//! the master key (`SealingKey`, XChaCha20-Poly1305, its own AAD), so any
//! Motor process sharing `MOTOR_MASTER_KEY` accepts it and none needs a
//! table for the token itself. When a stream opens with it, the API also
//! asks whether the issuing key is still live (one probe of its row), so a
//! key revoked or expired after the issue recalls its tokens; the token is
//! checked when a stream opens, not while it runs.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::{Deserialize, Serialize};

use crate::{seal::SealingKey, AppId, InstanceId};

/// Every stream token starts so (and no API key does).
pub const PREFIX: &str = "mst_";
/// The longest a token lives, and the default.
pub const MAX_LIFETIME_SECS: i64 = 60;
/// Binds the sealed bytes to this use: nothing else sealed with the
/// master key opens as a token.
const AAD: &[u8] = b"motor/stream-token/v1";

/// What a token lets its bearer do: read `instance`'s stream (of `app`)
/// until `expires_at` (unix seconds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamGrant {
    #[serde(rename = "a")]
    pub app: AppId,
    #[serde(rename = "i")]
    pub instance: InstanceId,
    /// The API key that asked for it (its `key_id`), for the logs.
    #[serde(rename = "k")]
    pub key_id: String,
    #[serde(rename = "e")]
    pub expires_at: i64,
}

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamTokenError {
    #[error("not a stream token Motor issued")]
    Invalid,
    #[error("the stream token expired; ask for a new one")]
    Expired,
}

impl StreamGrant {
    /// The token text: `mst_` and the sealed grant, base64url.
    pub fn issue(&self, sealing: &SealingKey) -> String {
        let plain = serde_json::to_vec(self).expect("a grant always serialises");
        format!(
            "{PREFIX}{}",
            URL_SAFE_NO_PAD.encode(sealing.seal(&plain, AAD))
        )
    }

    /// The grant a token carries, if it is one of ours and still live at
    /// `now` (unix seconds).
    pub fn open(sealing: &SealingKey, token: &str, now: i64) -> Result<Self, StreamTokenError> {
        let sealed = token
            .strip_prefix(PREFIX)
            .and_then(|b64| URL_SAFE_NO_PAD.decode(b64).ok())
            .ok_or(StreamTokenError::Invalid)?;
        let plain = sealing
            .open(&sealed, AAD)
            .map_err(|_| StreamTokenError::Invalid)?;
        let grant: Self = serde_json::from_slice(&plain).map_err(|_| StreamTokenError::Invalid)?;
        if now >= grant.expires_at {
            return Err(StreamTokenError::Expired);
        }
        Ok(grant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(master: &str) -> SealingKey {
        SealingKey::derive(master).unwrap()
    }

    fn grant(expires_at: i64) -> StreamGrant {
        StreamGrant {
            app: AppId::new(),
            instance: InstanceId::new(),
            key_id: "key_1".into(),
            expires_at,
        }
    }

    #[test]
    fn a_token_opens_until_it_expires_and_only_with_its_key() {
        let sealing = key(&"m".repeat(32));
        let g = grant(1_000);
        let token = g.issue(&sealing);
        assert!(token.starts_with(PREFIX), "{token}");
        assert_eq!(StreamGrant::open(&sealing, &token, 999), Ok(g.clone()));
        assert_eq!(
            StreamGrant::open(&sealing, &token, 1_000),
            Err(StreamTokenError::Expired)
        );
        assert_eq!(
            StreamGrant::open(&key(&"n".repeat(32)), &token, 0),
            Err(StreamTokenError::Invalid)
        );
    }

    #[test]
    fn anything_else_is_refused() {
        let sealing = key(&"m".repeat(32));
        let token = grant(1_000).issue(&sealing);
        let mut tampered = token.clone().into_bytes();
        let last = tampered.len() - 2;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        for bad in [
            "",
            "mst_",
            "mst_!!",
            "key_abc",
            &token[PREFIX.len()..],
            std::str::from_utf8(&tampered).unwrap(),
        ] {
            assert_eq!(
                StreamGrant::open(&sealing, bad, 0),
                Err(StreamTokenError::Invalid),
                "{bad}"
            );
        }
        // Other sealed values of the same master key do not open as tokens.
        let other = sealing.seal(br#"{"a":"x"}"#, b"motor/canary");
        let forged = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(other));
        assert_eq!(
            StreamGrant::open(&sealing, &forged, 0),
            Err(StreamTokenError::Invalid)
        );
    }
}
