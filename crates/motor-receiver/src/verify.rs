//! The entry points a server calls: [`Profile::verify`] picks the profile's
//! verifier, and a [`Verifier`] keeps a profile and its secrets.

use std::{sync::Arc, time::SystemTime};

use crate::{
    headers::Headers,
    mw_v1,
    profile::{Profile, Verified},
    standard_webhooks, t_v1, InvalidSecret, Secret, VerifyError,
};

impl Profile {
    /// Verifies a request signed with this profile; see [`mw_v1::verify`],
    /// [`t_v1::verify`] and [`standard_webhooks::verify`].
    pub fn verify<H: Headers + ?Sized>(
        self,
        headers: &H,
        body: &[u8],
        secrets: &[Secret],
        now: SystemTime,
    ) -> Result<Verified, VerifyError> {
        match self {
            Self::MwV1 => mw_v1::verify(headers, body, secrets, now),
            Self::TV1 => t_v1::verify(headers, body, secrets, now),
            Self::StandardWebhooks => standard_webhooks::verify(headers, body, secrets, now),
        }
    }
}

/// A profile and the secrets of one subscription (two during a rotation):
/// what a server keeps in its state to verify each request.
#[derive(Debug, Clone)]
pub struct Verifier {
    profile: Profile,
    secrets: Arc<[Secret]>,
}

impl Verifier {
    /// Refuses an empty list, an empty secret, and for standard-webhooks a
    /// secret that is not base64 after `whsec_`, so that a misconfigured
    /// receiver fails when it starts rather than answering 401 to Motor.
    pub fn new(
        profile: Profile,
        secrets: impl IntoIterator<Item = Secret>,
    ) -> Result<Self, InvalidSecret> {
        let secrets: Arc<[Secret]> = secrets.into_iter().collect();
        if secrets.is_empty() {
            return Err(InvalidSecret::None);
        }
        for (i, s) in secrets.iter().enumerate() {
            if s.is_empty() {
                return Err(InvalidSecret::Empty(i));
            }
            if s.hmac_key(profile).is_none() {
                return Err(InvalidSecret::NotBase64(i));
            }
        }
        Ok(Self { profile, secrets })
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Verifies one request at `now` (pass [`SystemTime::now()`]).
    pub fn verify<H: Headers + ?Sized>(
        &self,
        headers: &H,
        body: &[u8],
        now: SystemTime,
    ) -> Result<Verified, VerifyError> {
        self.profile.verify(headers, body, &self.secrets, now)
    }
}
