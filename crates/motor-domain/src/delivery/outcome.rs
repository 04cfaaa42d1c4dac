//! What one attempt's result means. The webhook (or broker) client reports
//! either the HTTP status it got or why it got none; [`Outcome::classify`]
//! turns that into delivered, suspend, retry or fail, with the sanitised
//! `ultimo_error` code. When to retry is [`super::retry`]'s job.
//!
//! Where the contract (DESIGN.md §2) is silent:
//! - 1xx and any status outside 100–599 are neither success nor one of the
//!   listed failures: they are retried like a 5xx (`http_<status>`), so an odd
//!   receiver never loses an event.
//! - Every 3xx, 304 included, is `redireccion`: Motor never follows one.
//! - `Retry-After` is read only on 429 and 503, as the contract says; on any
//!   other status it is ignored.
//! - A bad URL (`url`) fails the delivery at once (no suspension, as the docs
//!   say; a retry cannot fix it). `destino_no_permitido`,
//!   `destino_bloqueado` and `sin_secreto` suspend the subscription.
//! - Broker destinations: a Nack (`broker_rechazo`), an unroutable return
//!   (`broker_sin_ruta`) and a subject no stream captures (`sin_stream`)
//!   are retried — an operator can fix the broker; refused credentials
//!   suspend with `rechazo_credenciales`, like a webhook's 401.

use std::{fmt, str::FromStr, time::Duration};

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

use super::retry_after::parse_retry_after;
use crate::{subscription::SuspensionReason, time::Timestamp};

/// A sanitised error code, as `ultimo_error` and an attempt's `error` show
/// it. Never a URL, a body or a library's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `http_<status>`: the receiver answered with that status.
    Http(u16),
    /// `timeout`: no answer within `webhooks.timeout_segundos`.
    Timeout,
    /// `conexion_rechazada`: the connection was refused.
    ConnectionRefused,
    /// `conexion_cortada`: the connection was reset or cut mid-exchange.
    ConnectionReset,
    /// `dns`: the name did not resolve.
    Dns,
    /// `tls`: the TLS handshake or certificate check failed.
    Tls,
    /// `red`: any other network error.
    Network,
    /// `redireccion`: the receiver answered 3xx.
    Redirect,
    /// `destino_no_permitido`: the host left the allowed destinations.
    DestinationNotAllowed,
    /// `destino_bloqueado`: the host resolved to a blocked address.
    DestinationBlocked,
    /// `sin_secreto`: the subscription has no live signing key.
    NoSecret,
    /// `url`: the subscription's URL could not be used.
    Url,
    /// `broker_rechazo`: the broker took the message but refused it (a
    /// RabbitMQ publisher-confirm `Nack`, a JetStream error ack).
    BrokerRejected,
    /// `broker_sin_ruta`: RabbitMQ returned the message (`mandatory`, no
    /// queue bound for its routing key) or the exchange does not exist.
    BrokerUnroutable,
    /// `sin_stream`: no JetStream stream captures the subject.
    NoStream,
    /// `rechazo_credenciales`: the broker refused the credentials.
    CredentialsRejected,
}

impl ErrorCode {
    /// Every code but `http_<status>`, with its spelling.
    const NAMED: [(ErrorCode, &'static str); 15] = [
        (ErrorCode::Timeout, "timeout"),
        (ErrorCode::ConnectionRefused, "conexion_rechazada"),
        (ErrorCode::ConnectionReset, "conexion_cortada"),
        (ErrorCode::Dns, "dns"),
        (ErrorCode::Tls, "tls"),
        (ErrorCode::Network, "red"),
        (ErrorCode::Redirect, "redireccion"),
        (ErrorCode::DestinationNotAllowed, "destino_no_permitido"),
        (ErrorCode::DestinationBlocked, "destino_bloqueado"),
        (ErrorCode::NoSecret, "sin_secreto"),
        (ErrorCode::Url, "url"),
        (ErrorCode::BrokerRejected, "broker_rechazo"),
        (ErrorCode::BrokerUnroutable, "broker_sin_ruta"),
        (ErrorCode::NoStream, "sin_stream"),
        (ErrorCode::CredentialsRejected, "rechazo_credenciales"),
    ];

    /// The spellings of every code but `http_<status>`.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::NAMED.into_iter().map(|(_, name)| name)
    }

    /// Reads a code back as [`fmt::Display`] writes it; `http_<status>` only
    /// in its canonical decimal form (`http_503`, not `http_0503`).
    pub fn parse(s: &str) -> Option<Self> {
        if let Some(digits) = s.strip_prefix("http_") {
            let status: u16 = digits.parse().ok()?;
            return (status.to_string() == digits).then_some(ErrorCode::Http(status));
        }
        ErrorCode::NAMED
            .into_iter()
            .find(|(_, name)| *name == s)
            .map(|(code, _)| code)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorCode::Http(status) => write!(f, "http_{status}"),
            named => {
                let (_, name) = ErrorCode::NAMED
                    .iter()
                    .find(|(code, _)| code == named)
                    .expect("every code but Http is named");
                f.write_str(name)
            }
        }
    }
}

/// What `ultimo_error` holds: a code, with `_agotada` appended when a
/// retryable failure came 72 h (the policy's horizon) after the delivery was
/// created and it was given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LastError {
    pub code: ErrorCode,
    pub exhausted: bool,
}

impl LastError {
    const EXHAUSTED_SUFFIX: &'static str = "_agotada";

    pub const fn new(code: ErrorCode) -> Self {
        Self {
            code,
            exhausted: false,
        }
    }

    pub const fn exhausted(code: ErrorCode) -> Self {
        Self {
            code,
            exhausted: true,
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.strip_suffix(Self::EXHAUSTED_SUFFIX) {
            Some(code) => ErrorCode::parse(code).map(Self::exhausted),
            None => ErrorCode::parse(s).map(Self::new),
        }
    }
}

impl From<ErrorCode> for LastError {
    fn from(code: ErrorCode) -> Self {
        Self::new(code)
    }
}

impl fmt::Display for LastError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.code.fmt(f)?;
        if self.exhausted {
            f.write_str(Self::EXHAUSTED_SUFFIX)?;
        }
        Ok(())
    }
}

impl FromStr for LastError {
    type Err = UnknownErrorCode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or(UnknownErrorCode)
    }
}

/// A string that is not one of the contract's `ultimo_error` codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not an ultimo_error code")]
pub struct UnknownErrorCode;

impl Serialize for LastError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for LastError {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        LastError::parse(&s).ok_or_else(|| de::Error::custom(UnknownErrorCode))
    }
}

/// Why an attempt got no HTTP status. The client maps its own errors to
/// these; the mapping to codes and outcomes lives here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportFailure {
    /// No complete answer within the attempt's timeout.
    Timeout,
    /// The connection was refused.
    ConnectionRefused,
    /// The connection was reset or closed before a full answer.
    ConnectionReset,
    /// The host name did not resolve.
    Dns,
    /// TLS handshake or certificate failure.
    Tls,
    /// Any other network failure.
    Network,
    /// The client met a redirect it must not follow (when it reports one as
    /// an error rather than as a 3xx status).
    Redirect,
    /// The host is no longer in the allowed destinations.
    DestinationNotAllowed,
    /// The host resolved to (or connected to) a blocked address.
    DestinationBlocked,
    /// The subscription has no live signing key to sign with.
    NoSecret,
    /// The subscription's URL could not be used to make a request.
    BadUrl,
    /// The broker refused the message (Nack, JetStream error ack).
    BrokerNack,
    /// RabbitMQ returned the message as unroutable, or the exchange is
    /// missing.
    BrokerUnroutable,
    /// No JetStream stream captures the subject.
    NoStream,
    /// The broker refused the credentials (or gave them no access).
    CredentialsRefused,
}

impl TransportFailure {
    pub const ALL: [TransportFailure; 15] = [
        TransportFailure::Timeout,
        TransportFailure::ConnectionRefused,
        TransportFailure::ConnectionReset,
        TransportFailure::Dns,
        TransportFailure::Tls,
        TransportFailure::Network,
        TransportFailure::Redirect,
        TransportFailure::DestinationNotAllowed,
        TransportFailure::DestinationBlocked,
        TransportFailure::NoSecret,
        TransportFailure::BadUrl,
        TransportFailure::BrokerNack,
        TransportFailure::BrokerUnroutable,
        TransportFailure::NoStream,
        TransportFailure::CredentialsRefused,
    ];

    /// The sanitised code this failure is recorded with.
    pub const fn error_code(self) -> ErrorCode {
        match self {
            TransportFailure::Timeout => ErrorCode::Timeout,
            TransportFailure::ConnectionRefused => ErrorCode::ConnectionRefused,
            TransportFailure::ConnectionReset => ErrorCode::ConnectionReset,
            TransportFailure::Dns => ErrorCode::Dns,
            TransportFailure::Tls => ErrorCode::Tls,
            TransportFailure::Network => ErrorCode::Network,
            TransportFailure::Redirect => ErrorCode::Redirect,
            TransportFailure::DestinationNotAllowed => ErrorCode::DestinationNotAllowed,
            TransportFailure::DestinationBlocked => ErrorCode::DestinationBlocked,
            TransportFailure::NoSecret => ErrorCode::NoSecret,
            TransportFailure::BadUrl => ErrorCode::Url,
            TransportFailure::BrokerNack => ErrorCode::BrokerRejected,
            TransportFailure::BrokerUnroutable => ErrorCode::BrokerUnroutable,
            TransportFailure::NoStream => ErrorCode::NoStream,
            TransportFailure::CredentialsRefused => ErrorCode::CredentialsRejected,
        }
    }
}

/// What one attempt produced, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult<'a> {
    /// The receiver answered. `retry_after` is the raw `Retry-After` header
    /// value, if there was one.
    Http {
        status: u16,
        retry_after: Option<&'a str>,
    },
    /// No answer.
    Transport(TransportFailure),
}

/// What to do about one attempt, before the retry schedule and the 72 h
/// horizon are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// 2xx: the delivery is `entregada`.
    Delivered,
    /// Suspend the subscription with `motivo` and open an alert; the delivery
    /// stays `pendiente` and `error` is its `ultimo_error`.
    Suspend {
        reason: SuspensionReason,
        error: ErrorCode,
    },
    /// Try again later. `retry_after` is the receiver's `Retry-After`
    /// (429 and 503 only), already capped at one hour.
    Retry {
        error: ErrorCode,
        retry_after: Option<Duration>,
    },
    /// The delivery is `fallida` at once.
    Fail { error: ErrorCode },
}

impl Outcome {
    /// Classifies one attempt. `now` is when the answer came; it is needed
    /// only to turn a `Retry-After` date into a wait.
    pub fn classify(result: AttemptResult<'_>, now: Timestamp) -> Self {
        match result {
            AttemptResult::Http {
                status,
                retry_after,
            } => Self::from_status(status, retry_after, now),
            AttemptResult::Transport(failure) => Self::from_transport(failure),
        }
    }

    /// The outcome of an HTTP answer. See the module docs for the statuses
    /// the contract does not name.
    pub fn from_status(status: u16, retry_after: Option<&str>, now: Timestamp) -> Self {
        let error = ErrorCode::Http(status);
        match status {
            200..=299 => Outcome::Delivered,
            300..=399 => Outcome::Fail {
                error: ErrorCode::Redirect,
            },
            401 => Outcome::Suspend {
                reason: SuspensionReason::Rejected401,
                error,
            },
            403 => Outcome::Suspend {
                reason: SuspensionReason::Rejected403,
                error,
            },
            408 => Outcome::Retry {
                error,
                retry_after: None,
            },
            429 | 503 => Outcome::Retry {
                error,
                retry_after: retry_after.and_then(|v| parse_retry_after(v, now)),
            },
            400..=499 => Outcome::Fail { error },
            _ => Outcome::Retry {
                error,
                retry_after: None,
            },
        }
    }

    /// The outcome of an attempt that got no answer.
    pub const fn from_transport(failure: TransportFailure) -> Self {
        let error = failure.error_code();
        match failure {
            TransportFailure::Timeout
            | TransportFailure::ConnectionRefused
            | TransportFailure::ConnectionReset
            | TransportFailure::Dns
            | TransportFailure::Tls
            | TransportFailure::Network
            | TransportFailure::BrokerNack
            | TransportFailure::BrokerUnroutable
            | TransportFailure::NoStream => Outcome::Retry {
                error,
                retry_after: None,
            },
            TransportFailure::Redirect | TransportFailure::BadUrl => Outcome::Fail { error },
            TransportFailure::DestinationNotAllowed => Outcome::Suspend {
                reason: SuspensionReason::DestinationNotAllowed,
                error,
            },
            TransportFailure::DestinationBlocked => Outcome::Suspend {
                reason: SuspensionReason::DestinationBlocked,
                error,
            },
            TransportFailure::NoSecret => Outcome::Suspend {
                reason: SuspensionReason::NoSecret,
                error,
            },
            TransportFailure::CredentialsRefused => Outcome::Suspend {
                reason: SuspensionReason::CredentialsRejected,
                error,
            },
        }
    }

    /// The code to record for the attempt; `None` when it was delivered.
    pub const fn error(&self) -> Option<ErrorCode> {
        match self {
            Outcome::Delivered => None,
            Outcome::Suspend { error, .. }
            | Outcome::Retry { error, .. }
            | Outcome::Fail { error } => Some(*error),
        }
    }
}

#[cfg(test)]
mod tests;
