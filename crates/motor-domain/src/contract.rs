//! Contracts: which product's webhook contract a delivery follows —
//! Motor's own (seed 000, the default), Visito's (seed 001), Asixto's
//! (seed 003) or Standard Webhooks. Every difference between them is a
//! value in [`ContractSpec`], one table in this file, so the engine asks
//! the table instead of branching on the product; docs/CONTRACTS.md
//! quotes the seed line behind each value.
//!
//! Neighbours: [`ladder`] holds the retry ladders the table names,
//! [`mod@render`] builds one attempt's body and headers from the table, and
//! both call into [`crate::signature`] and [`crate::delivery`] unchanged.
//! Apps and subscriptions name a contract (`contrato`); the engine reads
//! its table for every attempt (`motor_destinations::attempt`, the
//! dispatcher's settle step).

use std::{fmt, time::Duration};

use serde_json::Value;

use crate::{
    delivery::CancelReason,
    error::FieldError,
    event::cap::{json_len, MAX_ENVELOPE_BYTES, METADATA},
    signature::SigningProfile,
    subscription::{SubscriptionState, SuspensionReason},
};

pub mod ladder;
pub mod render;

pub use ladder::{
    JitterMode, Ladder, LadderError, LadderId, LadderName, Limit, NextAttempt, UnknownLadder,
    ASIXTO_V1, MOTOR_V1, VISITO_V1,
};
pub use render::{render, Environment, RenderError, RenderInput, Rendered};

/// The field a contract is named in (`contrato` on apps and subscriptions).
pub const FIELD: &str = "contrato";

/// A product's webhook contract. Its wire spelling is [`Contract::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Contract {
    /// `motor`: the WhatsApp product's contract (seed 000), what Motor
    /// does today.
    #[default]
    Motor,
    /// `visito`: Visito's M2M webhooks (seed 001).
    Visito,
    /// `asixto`: Asixto's webhooks (seed 003).
    Asixto,
    /// `standard-webhooks`: Motor's envelope under the Standard Webhooks
    /// 1.0.0 headers.
    StandardWebhooks,
}

impl Contract {
    pub const ALL: [Self; 4] = [
        Self::Motor,
        Self::Visito,
        Self::Asixto,
        Self::StandardWebhooks,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Contract::Motor => "motor",
            Contract::Visito => "visito",
            Contract::Asixto => "asixto",
            Contract::StandardWebhooks => "standard-webhooks",
        }
    }

    /// The wire spelling, exactly; anything else is an error naming
    /// `contrato` and the accepted values.
    pub fn parse(s: &str) -> Result<Self, FieldError> {
        Self::parse_field(s, FIELD)
    }

    /// [`Contract::parse`], the error naming `field` (`body.contrato`).
    pub fn parse_field(s: &str, field: &str) -> Result<Self, FieldError> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| {
                FieldError::invalid(
                    field,
                    "must be one of motor, visito, asixto, standard-webhooks",
                )
            })
    }

    /// The contract's values.
    pub const fn spec(self) -> &'static ContractSpec {
        match self {
            Contract::Motor => &MOTOR,
            Contract::Visito => &VISITO,
            Contract::Asixto => &ASIXTO,
            Contract::StandardWebhooks => &STANDARD_WEBHOOKS,
        }
    }
}

impl fmt::Display for Contract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The body a delivery carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvelopeShape {
    /// Motor's envelope, the ledger's stored bytes as they are.
    Motor,
    /// `eventId`, `type`, `schemaVersion: "1.0"`, `tenantId`,
    /// `occurredAt`, `data`.
    Visito,
    /// `id`, `type`, `created`, `environment`, `replay_of` (on a replay),
    /// `data`.
    Asixto,
}

/// Which live keys sign an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyUse {
    /// Every key live at the attempt's time, newest first (a rotation
    /// window signs with two).
    AllLive,
    /// Only the newest live key: a rotation applies at once (seed 001).
    NewestOnly,
}

/// How an attempt is signed and which headers name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignatureRule {
    /// The profile of [`crate::signature`] that computes the signatures.
    pub profile: SigningProfile,
    /// Whether a subscription's `firma` may choose another profile.
    pub profile_choosable: bool,
    /// The name of the one `t=…,v1=…` header, for the t-v1 profile.
    pub signature_header: &'static str,
    pub keys: KeyUse,
}

/// The headers naming the event and the delivery, where a contract has
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdHeaders {
    /// Carries the event id (the same on every retry and replay).
    pub event_id: Option<&'static str>,
    /// Carries the delivery id (the same on every retry; new per replay).
    pub delivery_id: Option<&'static str>,
    /// On a replay or manual retry, carries the delivery it sends again
    /// (when Motor knows it).
    pub replay_of: Option<&'static str>,
}

/// What a replay sends the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayIdentity {
    /// The body's id is the event's, as on the first delivery; a receiver
    /// that dedupes by it sees a replay as a duplicate unless it looks at
    /// the delivery id (Motor, Visito: "conserva eventId").
    SameId,
    /// A new id and `replay_of` naming the first delivery's id (Asixto:
    /// "Deduplique por id; correlacione por replay_of").
    NewIdWithReplayOf,
}

/// What pausing, deleting or suspending a subscription does to its
/// pending deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deactivation {
    /// They stay `pendiente` and go out on reactivation (seed 000).
    Accumulate,
    /// They end `cancelada` with the reason; reactivating resends nothing
    /// (seed 001).
    Cancel,
}

/// The ordering a subscription gets unless it names one.
/// Its wire spelling is [`Ordering::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// `instancia`: one at a time per (subscription, instance), in seq
    /// order — today's `ordenado: true`.
    Instance,
    /// `clave`: one at a time per (subscription, instance, key), keys in
    /// parallel.
    Key,
    /// `ninguno`: no promise; everything in parallel.
    Unordered,
}

impl Ordering {
    pub const ALL: [Self; 3] = [Self::Instance, Self::Key, Self::Unordered];

    /// The field a subscription names its ordering in (`orden`).
    pub const FIELD: &'static str = "orden";

    pub const fn as_str(self) -> &'static str {
        match self {
            Ordering::Instance => "instancia",
            Ordering::Key => "clave",
            Ordering::Unordered => "ninguno",
        }
    }

    /// The wire spelling, exactly; anything else is an error naming
    /// `orden` and the accepted values.
    pub fn parse(s: &str) -> Result<Self, FieldError> {
        Self::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| {
                FieldError::invalid(Self::FIELD, "must be one of instancia, clave, ninguno")
            })
    }

    /// Whether deliveries go out one at a time per lane (`ordenado`):
    /// `instancia` and `clave`; `clave` only makes the lanes finer.
    pub const fn is_ordered(self) -> bool {
        !matches!(self, Ordering::Unordered)
    }

    /// The ordering `ordenado` (the older boolean) names: `true` is
    /// `instancia`, `false` `ninguno`.
    pub const fn from_ordered(ordered: bool) -> Self {
        if ordered {
            Ordering::Instance
        } else {
            Ordering::Unordered
        }
    }
}

/// How long a finished delivery's row is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// An `entregada` row: `None` = the operator's
    /// `retencion.dias_entregados` (30 by default).
    pub delivered: Option<Duration>,
    /// A `fallida` row: `None` = never deleted (the DLQ).
    pub failed: Option<Duration>,
    /// A `cancelada` row, after its `cancelada_en`: `None` = the
    /// operator's `retencion.dias_entregados`, as an `entregada` row.
    pub cancelled: Option<Duration>,
}

impl Retention {
    /// Whether the contract keeps any finished row for a period of its
    /// own (its subscriptions' rows are then left out of the operator's
    /// pass for that state).
    pub const fn is_own(&self) -> bool {
        self.delivered.is_some() || self.failed.is_some() || self.cancelled.is_some()
    }
}

/// Every value that makes one contract differ from another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractSpec {
    pub contract: Contract,
    pub envelope: EnvelopeShape,
    pub ids: IdHeaders,
    pub signature: SignatureRule,
    pub ladder: &'static Ladder,
    /// Per attempt; `None` = the operator's `webhooks.timeout_segundos`
    /// (10 s by default).
    pub attempt_timeout: Option<Duration>,
    pub replay: ReplayIdentity,
    pub deactivation: Deactivation,
    pub ordering: Ordering,
    /// The largest body, in bytes.
    pub max_body_bytes: usize,
    /// The largest `data.metadata` accepted at the door, in bytes of
    /// compact JSON; `None` = no cap of its own.
    pub max_metadata_bytes: Option<usize>,
    pub retention: Retention,
    /// The receiver's window (seconds either way) the documents tell
    /// receivers to apply; Motor does not enforce it, checkers use it.
    pub receiver_window: Duration,
}

const DAY: u64 = 24 * 3600;

/// `t=…,v1=…` header of Motor's own t-v1 profile.
const MW_SIGNATURE: &str = crate::signature::HEADER_SIGNATURE;

static MOTOR: ContractSpec = ContractSpec {
    contract: Contract::Motor,
    envelope: EnvelopeShape::Motor,
    ids: IdHeaders {
        event_id: Some("X-MW-Event-Id"),
        delivery_id: Some("X-MW-Delivery-Id"),
        replay_of: Some("X-MW-Replay-Of"),
    },
    signature: SignatureRule {
        profile: SigningProfile::MwV1,
        profile_choosable: true,
        signature_header: MW_SIGNATURE,
        keys: KeyUse::AllLive,
    },
    ladder: &MOTOR_V1,
    attempt_timeout: None,
    replay: ReplayIdentity::SameId,
    deactivation: Deactivation::Accumulate,
    ordering: Ordering::Instance,
    max_body_bytes: MAX_ENVELOPE_BYTES,
    max_metadata_bytes: None,
    retention: Retention {
        delivered: None,
        failed: None,
        cancelled: None,
    },
    receiver_window: Duration::from_secs(300),
};

static VISITO: ContractSpec = ContractSpec {
    contract: Contract::Visito,
    envelope: EnvelopeShape::Visito,
    ids: IdHeaders {
        event_id: Some("X-Visito-Event-Id"),
        delivery_id: None,
        replay_of: None,
    },
    signature: SignatureRule {
        profile: SigningProfile::TV1,
        profile_choosable: false,
        signature_header: "X-Visito-Signature",
        keys: KeyUse::NewestOnly,
    },
    ladder: &VISITO_V1,
    attempt_timeout: Some(Duration::from_secs(10)),
    replay: ReplayIdentity::SameId,
    deactivation: Deactivation::Cancel,
    ordering: Ordering::Unordered,
    max_body_bytes: MAX_ENVELOPE_BYTES,
    max_metadata_bytes: None,
    retention: Retention {
        delivered: Some(Duration::from_secs(30 * DAY)),
        failed: Some(Duration::from_secs(30 * DAY)),
        cancelled: Some(Duration::from_secs(30 * DAY)),
    },
    receiver_window: Duration::from_secs(300),
};

static ASIXTO: ContractSpec = ContractSpec {
    contract: Contract::Asixto,
    envelope: EnvelopeShape::Asixto,
    ids: IdHeaders {
        event_id: None,
        delivery_id: None,
        replay_of: None,
    },
    signature: SignatureRule {
        profile: SigningProfile::TV1,
        profile_choosable: false,
        signature_header: "Asixto-Signature",
        keys: KeyUse::AllLive,
    },
    ladder: &ASIXTO_V1,
    attempt_timeout: None,
    replay: ReplayIdentity::NewIdWithReplayOf,
    deactivation: Deactivation::Accumulate,
    ordering: Ordering::Key,
    max_body_bytes: MAX_ENVELOPE_BYTES,
    max_metadata_bytes: Some(4 * 1024),
    retention: Retention {
        delivered: None,
        failed: None,
        cancelled: None,
    },
    receiver_window: Duration::from_secs(300),
};

static STANDARD_WEBHOOKS: ContractSpec = ContractSpec {
    contract: Contract::StandardWebhooks,
    envelope: EnvelopeShape::Motor,
    ids: IdHeaders {
        event_id: None,
        delivery_id: None,
        replay_of: None,
    },
    signature: SignatureRule {
        profile: SigningProfile::StandardWebhooks,
        profile_choosable: false,
        signature_header: crate::signature::SW_HEADER_SIGNATURE,
        keys: KeyUse::AllLive,
    },
    ladder: &MOTOR_V1,
    attempt_timeout: None,
    replay: ReplayIdentity::SameId,
    deactivation: Deactivation::Accumulate,
    ordering: Ordering::Instance,
    max_body_bytes: MAX_ENVELOPE_BYTES,
    max_metadata_bytes: None,
    retention: Retention {
        delivered: None,
        failed: None,
        cancelled: None,
    },
    receiver_window: Duration::from_secs(300),
};

impl Contract {
    /// The wire names of the contracts whose [`Deactivation`] is
    /// [`Deactivation::Cancel`]: what the store's statements filter
    /// subscriptions by, so the rule stays in the table.
    pub fn cancelling() -> Vec<&'static str> {
        Self::ALL
            .into_iter()
            .filter(|c| c.spec().deactivation == Deactivation::Cancel)
            .map(Contract::as_str)
            .collect()
    }
}

impl Deactivation {
    /// What a subscription going `from` → `to` does to its `pendiente`
    /// deliveries: `None` = nothing (they stay, and go out when it is
    /// `activa`), `Some(reason)` = they end `cancelada` with that reason.
    ///
    /// Under [`Deactivation::Cancel`], leaving `activa` cancels (paused,
    /// suspended — by `suspension`: a revoked, expired or under-scoped
    /// bound key names itself — or deleted), and coming back to `activa` cancels too:
    /// what reached it while it was not active (events fanned out before
    /// the pause committed, or while it was paused) is not sent
    /// ("Reactivar no reenvía eventos cancelados").
    pub fn on_state_change(
        self,
        from: SubscriptionState,
        to: SubscriptionState,
        suspension: Option<SuspensionReason>,
    ) -> Option<CancelReason> {
        use SubscriptionState::{Active, Deleted, Paused, Suspended};
        if self == Deactivation::Accumulate || from == to {
            return None;
        }
        let suspended = || match suspension {
            Some(SuspensionReason::KeyRevoked) => CancelReason::KeyRevoked,
            Some(SuspensionReason::KeyExpired) => CancelReason::KeyExpired,
            Some(SuspensionReason::KeyUnderScoped) => CancelReason::KeyUnderScoped,
            _ => CancelReason::SubscriptionSuspended,
        };
        match (from, to) {
            (_, Paused) => Some(CancelReason::SubscriptionPaused),
            (_, Suspended) => Some(suspended()),
            (_, Deleted) => Some(CancelReason::SubscriptionDeleted),
            (Paused, Active) => Some(CancelReason::SubscriptionPaused),
            (Suspended, Active) => Some(suspended()),
            (Active | Deleted, Active) => None,
        }
    }
}

impl ContractSpec {
    /// The door's check of an event's `data` for this contract: its
    /// `metadata`, when the contract caps it, fits the cap. A 422
    /// (`Invalid`, not 413: the request may be small, one of its fields
    /// breaks the contract's rule) naming `data.metadata`.
    pub fn check_metadata(&self, data: &Value) -> Result<(), FieldError> {
        let (Some(cap), Some(metadata)) = (self.max_metadata_bytes, data.get(METADATA)) else {
            return Ok(());
        };
        let size = json_len(metadata);
        if size > cap {
            return Err(FieldError::invalid(
                format!("data.{METADATA}"),
                format!(
                    "at most {cap} bytes of JSON under contrato {}, got {size}",
                    self.contract
                ),
            ));
        }
        Ok(())
    }

    /// [`ContractSpec::check_metadata`] for every event of a producer
    /// request as it arrived (one event object or an array of them),
    /// before the body cap may drop a `metadata` (seed 003: the 4 KB cap
    /// is the door's, whatever the body's size). Names `data.metadata`,
    /// or `[3].data.metadata` in a batch.
    pub fn check_request_metadata(&self, body: &Value) -> Result<(), FieldError> {
        if self.max_metadata_bytes.is_none() {
            return Ok(());
        }
        match body {
            Value::Array(items) => items.iter().enumerate().try_for_each(|(i, item)| {
                item.get("data").map_or(Ok(()), |data| {
                    self.check_metadata(data)
                        .map_err(|e| e.located(&format!("[{i}]")))
                })
            }),
            one => one
                .get("data")
                .map_or(Ok(()), |data| self.check_metadata(data)),
        }
    }
}

#[cfg(test)]
mod tests;
