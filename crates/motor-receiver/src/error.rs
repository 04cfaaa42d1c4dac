//! Why a request was refused, and what a receiver should answer for it.

use http::StatusCode;

/// A request that does not verify. Every variant but [`VerifyError::Stale`]
/// means "not signed by a secret you hold" and answers 401; a stale
/// timestamp is a clock problem, answered 408 so that Motor retries with a
/// fresh signature instead of suspending the subscription.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// A header the profile needs is absent or empty.
    #[error("header {0} is missing")]
    Missing(&'static str),
    /// A header that must arrive once arrived more than once. Its values are
    /// never joined: a repeated signature header was not sent by Motor.
    #[error("header {0} arrived more than once")]
    RepeatedHeader(&'static str),
    /// A header is present but does not have the profile's shape.
    #[error("header {header} is malformed: {reason}")]
    Malformed {
        header: &'static str,
        reason: &'static str,
    },
    /// The signed timestamp is more than [`crate::TOLERANCE_SECS`] away from
    /// the receiver's clock, in either direction.
    #[error("timestamp {timestamp} is outside the window around {now}")]
    Stale { timestamp: i64, now: i64 },
    /// The headers are well formed but no signature matches any secret.
    #[error("no signature matches a known secret")]
    BadSignature,
}

impl VerifyError {
    /// The status a receiver should answer: 408 for [`VerifyError::Stale`]
    /// (Motor retries), 401 for everything else (Motor suspends the
    /// subscription and alerts its operator).
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Stale { .. } => StatusCode::REQUEST_TIMEOUT,
            _ => StatusCode::UNAUTHORIZED,
        }
    }

    pub(crate) fn malformed(header: &'static str, reason: &'static str) -> Self {
        Self::Malformed { header, reason }
    }
}

/// A secret that cannot serve the profile it was given to (see
/// [`crate::Verifier::new`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidSecret {
    #[error("no secret was given")]
    None,
    #[error("secret #{0} is empty")]
    Empty(usize),
    #[error("secret #{0} is not base64 after its whsec_ prefix (standard-webhooks needs it)")]
    NotBase64(usize),
}
