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
//! # Under another contract (`--profile visito|asixto`)
//!
//! Every request is rendered by `contract::render` under the profile's
//! contract, as its deliveries are: the envelope (Visito's `eventId` …,
//! Asixto's `id` … `data`, rendered from the same Motor envelope the
//! ledger would hold), the header names (`X-Visito-Signature`,
//! `Asixto-Signature`), the signature and the keys that sign. What the
//! checks mean follows the contract's data:
//!
//! - `reproduccion` is rendered as a replay: Motor adds `X-MW-Replay-Of`,
//!   Visito keeps `eventId`, Asixto sends a new `id` and `replay_of`; the
//!   effect asked about is the id the receiver deduplicates by (Asixto's
//!   replay: its new `id`, which must be applied once, not dropped).
//! - `seq_menor` is an older event after a newer one: a lower `seq` and a
//!   60 s earlier `occurred_at` (`occurredAt`, `created`).
//! - The stale and future timestamps are twice the contract's receiver
//!   window away.
//! - Refusals: seeds 001 and 003 name no status but "2xx is the only
//!   acknowledgement", so `timestamp_*`, `cuerpo_alterado`,
//!   `firma_incorrecta` and `cabecera_repetida` expect `no 2xx` there.
//! - `segunda_firma_valida` is not sent under Visito (it signs with the
//!   newest key only), nor `cabecera_repetida` (seed 001 says nothing of a
//!   repeated header; seed 003 says to refuse it).
//! - `cuerpo_grande` renders the 256 KiB envelope: the largest body the
//!   contract is ever rendered from.
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
    contract::{Contract, ContractSpec, KeyUse},
    secret::{SigningKeyId, SigningSecret},
    signature::SigningProfile,
    AppId,
};

pub use battery::run;
pub use client::{CheckClient, Reply};
pub use report::{CheckResult, Expected, Got, Report, Timings, Verdict};

/// Motor's attempt timeout by default (`webhooks.timeout_segundos`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the receiver is graded against: Motor's own contract under one of
/// its signing profiles, or another contract Motor serves (its envelope,
/// header names, signature and the checks whose meaning it changes; see
/// the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckProfile {
    /// `motor`'s contract (seed 000) signed under this profile: `mw-v1`
    /// (also spelled `motor`), `t-v1`, `standard-webhooks`.
    Signing(SigningProfile),
    /// Any other contract, rendered by `contract::render` as deliveries
    /// are: `visito`, `asixto`, and (for a subscription under it, the
    /// route's door) `standard-webhooks`.
    Contract(Contract),
}

impl CheckProfile {
    /// Every profile `--profile` takes, in the order `--help` lists them.
    pub fn all() -> Vec<Self> {
        SigningProfile::ALL
            .into_iter()
            .map(Self::Signing)
            .chain([
                Self::Contract(Contract::Visito),
                Self::Contract(Contract::Asixto),
            ])
            .collect()
    }

    /// Every spelling `--profile` takes: the three signing profiles,
    /// `motor` (= `mw-v1`), `visito`, `asixto`.
    pub fn names() -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Self::all().into_iter().map(Self::as_str).collect();
        names.insert(1, Contract::Motor.as_str());
        names
    }

    /// The wire spelling: `mw-v1`, `t-v1`, `standard-webhooks`, `motor`
    /// (Motor's contract as delivered by default, i.e. `mw-v1`), `visito`,
    /// `asixto`.
    pub fn parse(s: &str) -> Option<Self> {
        if s == Contract::Motor.as_str() {
            return Some(Self::Signing(SigningProfile::MwV1));
        }
        Self::all().into_iter().find(|p| p.as_str() == s)
    }

    /// The profile a registered subscription is delivered under: its
    /// `firma` under Motor's contract, else its contract.
    pub fn of_subscription(contract: Contract, signature: SigningProfile) -> Self {
        match contract {
            Contract::Motor => Self::Signing(signature),
            other => Self::Contract(other),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Signing(p) => p.as_str(),
            Self::Contract(c) => c.as_str(),
        }
    }

    /// The contract whose data the battery follows.
    pub fn contract(self) -> Contract {
        match self {
            Self::Signing(_) => Contract::Motor,
            Self::Contract(c) => c,
        }
    }

    pub(crate) fn spec(self) -> &'static ContractSpec {
        self.contract().spec()
    }

    /// The signing profile that computes the signatures.
    pub(crate) fn signing(self) -> SigningProfile {
        match self {
            Self::Signing(p) => p,
            Self::Contract(c) => c.spec().signature.profile,
        }
    }

    /// The header a receiver must find exactly once.
    pub(crate) fn signature_header(self) -> &'static str {
        match self.signing() {
            SigningProfile::MwV1 => motor_domain::signature::HEADER_SIGNATURE,
            // t-v1's one header takes the contract's name (render does the same).
            SigningProfile::TV1 => self.spec().signature.signature_header,
            SigningProfile::StandardWebhooks => motor_domain::signature::SW_HEADER_SIGNATURE,
        }
    }

    /// Whether the status codes are Motor's own (DESIGN.md §2: a stale
    /// timestamp is 408, a bad signature 401, a repeated header a 4xx
    /// that asks for no retry). Seeds 001 and 003 name none but "2xx is
    /// the only acknowledgement", so under them every refusal is graded
    /// as "not 2xx".
    pub(crate) fn motor_codes(self) -> bool {
        matches!(
            self.contract(),
            Contract::Motor | Contract::StandardWebhooks
        )
    }

    /// Whether a delivery may carry more than one signature (a rotation
    /// window): not under Visito, which signs with the newest key only,
    /// so `segunda_firma_valida` means nothing there and is not sent.
    pub(crate) fn signs_with_every_live_key(self) -> bool {
        self.spec().signature.keys == KeyUse::AllLive
    }

    /// Whether the contract tells receivers to refuse a repeated signature
    /// header: Motor's (DESIGN.md §2) and Asixto's ("una cabecera repetida
    /// no es nuestra"); seed 001 says nothing of it, so under Visito
    /// `cabecera_repetida` is not sent.
    pub(crate) fn refuses_repeated_header(self) -> bool {
        self.contract() != Contract::Visito
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
    /// The app the events belong to: Visito's `tenantId` (a registered
    /// subscription's app; any id for a receiver checked from the CLI).
    pub app_id: AppId,
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
