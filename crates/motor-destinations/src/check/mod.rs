//! The receiver conformance tester (issue 36): a battery of signed requests
//! sent to one receiver, each answer graded against the contract
//! (DESIGN.md §2, "Receivers"). `motor check-receiver` calls [`run`] with a
//! [`CheckClient::direct`] client; `POST /v1/subscriptions/{id}/check` is
//! meant to be a thin adapter over the same call (with the subscription's
//! live keys and a client that applies the allowed-destinations guard).
//!
//! It lives here, beside the webhook sender, because both doors need what
//! this crate owns — a client that never follows redirects, reads at most
//! 4 KB of an answer and names failures in the contract's codes — and
//! both `motor` and `motor-api` already depend on it. Requests are signed
//! by `motor_domain::signature::sign_profile`, the function every delivery
//! goes through, never by a copy of it.
//!
//! # The battery, in order
//!
//! One run uses a fresh `instance_id` and event ids, so it can be repeated
//! against the same receiver. Event A has seq 2, event B seq 1.
//!
//! | check | request | expected |
//! |---|---|---|
//! | `entrega_valida` | A, delivery d1, signed now | 2xx |
//! | `evento_repetido` | A again, same d1 (a retry, re-signed) | 2xx |
//! | `reproduccion` | A, new delivery d2, `X-MW-Replay-Of: d1` | 2xx |
//! | `seq_menor` | B (seq 1, after seq 2 was taken) | 2xx |
//! | `timestamp_vencido` | C, signed 600 s ago | 408 |
//! | `timestamp_futuro` | D, signed 600 s ahead | 408 |
//! | `cuerpo_alterado` | E signed, sent with `data.importe` changed | 401 |
//! | `firma_incorrecta` | F signed with a secret the receiver lacks | 401 |
//! | `segunda_firma_valida` | G signed by a stranger key (first) and the receiver's | 2xx |
//! | `cabecera_repetida` | H with its signature header twice: valid, then a stranger's | refused |
//! | `cuerpo_grande` | I, an envelope of exactly 256 KiB (Motor's cap) | 2xx |
//! | `tiempos` | p50 and p99 of every answer above | p99 < half the timeout |
//!
//! "refused" is any 4xx but 408 and 429: Motor never sends a repeated
//! signature header, so the request is not Motor's and must not be
//! accepted (2xx), must not look like a passing trouble (408, 429 and 5xx
//! ask for a retry). `motor-receiver` answers 401, the seed 003 text only
//! says "rechace"; 400 is as good.
//!
//! With an effect URL (a template holding `{event_id}`; a GET answers
//! `{"efectos": N}`, how many times the receiver applied that event) the
//! accepted checks also require exactly one effect of their event — after
//! the retry and after the replay too, which catches a receiver that
//! deduplicates by delivery id or not at all, and one that answers 2xx to a
//! lower seq without applying it — and the refused ones require none.

mod battery;
mod client;
mod report;
#[cfg(test)]
mod tests;

use std::time::Duration;

use motor_domain::{
    secret::{SigningKeyId, SigningSecret},
    signature::SigningProfile,
};

pub use battery::run;
pub use client::{CheckClient, Reply};
pub use report::{CheckResult, Expected, Got, Report, Timings, Verdict};

/// Motor's attempt timeout by default (`webhooks.timeout_segundos`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the receiver is graded against. Today the three signing profiles;
/// the contracts Motor will serve exactly (`visito`, `asixto`) join as
/// variants with their own headers and battery differences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckProfile {
    Signing(SigningProfile),
}

impl CheckProfile {
    /// Every profile, in the order `--help` lists them.
    pub fn all() -> Vec<Self> {
        SigningProfile::ALL.into_iter().map(Self::Signing).collect()
    }

    /// The wire spelling: `mw-v1`, `t-v1`, `standard-webhooks`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::all().into_iter().find(|p| p.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Signing(p) => p.as_str(),
        }
    }

    pub(crate) fn signing(self) -> SigningProfile {
        match self {
            Self::Signing(p) => p,
        }
    }

    /// The header a receiver must find exactly once.
    pub(crate) fn signature_header(self) -> &'static str {
        match self.signing() {
            SigningProfile::MwV1 | SigningProfile::TV1 => motor_domain::signature::HEADER_SIGNATURE,
            SigningProfile::StandardWebhooks => motor_domain::signature::SW_HEADER_SIGNATURE,
        }
    }
}

/// One secret the receiver holds, with the key id Motor would send with it
/// (`X-MW-Key-Id`, mw-v1 only).
#[derive(Debug, Clone)]
pub struct ReceiverKey {
    pub key_id: SigningKeyId,
    pub secret: SigningSecret,
}

/// What to check and how.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub url: String,
    pub profile: CheckProfile,
    /// The receiver's live secrets, newest first; every valid request is
    /// signed with all of them, as Motor signs during a rotation.
    pub keys: Vec<ReceiverKey>,
    pub timeout: Duration,
    /// A URL template with `{event_id}`; see the module docs.
    pub effect_url: Option<String>,
    /// The `type` of every event the battery sends.
    pub event_type: String,
}

/// The placeholder an effect URL must hold.
pub const EFFECT_PLACEHOLDER: &str = "{event_id}";

/// Options that cannot make a battery.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    #[error("url: {0}")]
    Url(String),
    #[error("effect url: it must hold {EFFECT_PLACEHOLDER} and be http or https")]
    EffectUrl,
    #[error("secret: at least one is needed")]
    NoSecret,
    #[error("timeout: between 1 and 60 seconds")]
    Timeout,
}

impl CheckOptions {
    /// Checks what a caller could get wrong before anything is sent.
    pub fn validate(&self) -> Result<(), OptionsError> {
        let url = reqwest::Url::parse(&self.url).map_err(|e| OptionsError::Url(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(OptionsError::Url("http or https only".into()));
        }
        if let Some(effect) = &self.effect_url {
            let scheme_ok = reqwest::Url::parse(&effect.replace(EFFECT_PLACEHOLDER, "x"))
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
            if !effect.contains(EFFECT_PLACEHOLDER) || !scheme_ok {
                return Err(OptionsError::EffectUrl);
            }
        }
        if self.keys.is_empty() {
            return Err(OptionsError::NoSecret);
        }
        if !(Duration::from_secs(1)..=Duration::from_secs(60)).contains(&self.timeout) {
            return Err(OptionsError::Timeout);
        }
        Ok(())
    }
}
