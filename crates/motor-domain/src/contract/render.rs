//! One attempt's request under a contract: the exact body bytes and the
//! header list, from the ledger's stored envelope and the signing inputs.
//! Pure: the attempt's time and the keys come from the caller. What the
//! transport adds on its own (`Content-Type: application/json`,
//! `User-Agent`) is not here.
//!
//! The Visito and Asixto bodies copy `data` from the stored bytes as they
//! are (a [`RawValue`]), so no number or escape is rewritten on the way.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{ContractSpec, EnvelopeShape, KeyUse, ReplayIdentity};
use crate::{
    delivery::DeliveryId,
    error::FieldError,
    ids::{AppId, EventId},
    signature::{sign_profile, SignError, SigningKey, SigningProfile, HEADER_SIGNATURE},
    time::{serde_ts, Timestamp},
};

/// Visito's `schemaVersion`, a string on the wire (seed 001:
/// `schemaVersion:"1.0"`).
pub const VISITO_SCHEMA_VERSION: &str = "1.0";
/// The field an event or subscription names its environment in.
pub const ENVIRONMENT_FIELD: &str = "entorno";

/// Asixto's environment (`environment` in its envelope, `entorno` in
/// Motor's API). Its wire spelling is [`Environment::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Environment {
    #[default]
    Live,
    Test,
}

impl Environment {
    pub const fn as_str(self) -> &'static str {
        match self {
            Environment::Live => "live",
            Environment::Test => "test",
        }
    }

    /// `live` or `test`, exactly; anything else names `entorno`.
    pub fn parse(s: &str) -> Result<Self, FieldError> {
        Self::parse_field(s, ENVIRONMENT_FIELD)
    }

    /// [`Environment::parse`], the error naming `field` (`[3].entorno` in
    /// a batch of events).
    pub fn parse_field(s: &str, field: &str) -> Result<Self, FieldError> {
        [Environment::Live, Environment::Test]
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| FieldError::invalid(field, "must be live or test"))
    }
}

/// A replay (or a manual retry): a new delivery of an event already sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replay<'a> {
    /// The delivery it sends again, when Motor knows it (a replay by seq
    /// range may have none): Motor's `X-MW-Replay-Of`.
    pub original_delivery: Option<&'a str>,
}

/// What one attempt is made of.
#[derive(Debug, Clone, Copy)]
pub struct RenderInput<'a> {
    /// The envelope's bytes, exactly as the ledger holds them.
    pub envelope: &'a [u8],
    /// The envelope's `event_id`, as the ledger's row holds it beside the
    /// envelope: Motor's shape sends the envelope as it is and reads none
    /// of it.
    pub event_id: EventId,
    /// The app the event belongs to: Visito's `tenantId`.
    pub app_id: AppId,
    /// Asixto's `environment`.
    pub environment: Environment,
    /// The delivery (the same on every retry; new per replay).
    pub delivery_id: DeliveryId,
    /// `Some` when this delivery is a replay.
    pub replay: Option<Replay<'a>>,
    /// The subscription's keys; those live at `now` sign.
    pub keys: &'a [SigningKey],
    /// The subscription's `firma`, used where the contract lets it choose.
    pub profile: SigningProfile,
    /// The attempt's time: the signature's `t`.
    pub now: Timestamp,
}

/// One attempt's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered<'a> {
    /// Borrowed for Motor's shape: the input's envelope itself, not a copy.
    pub body: Cow<'a, [u8]>,
    /// In the order they are sent.
    pub headers: Vec<(&'static str, String)>,
    /// The key ids that signed, newest first, for the attempt's record.
    pub key_ids: Vec<String>,
}

impl Rendered<'_> {
    /// A header's value by exact name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why an attempt could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No live key (or a standard-webhooks secret that is not base64): the
    /// engine's `sin_secreto`.
    #[error(transparent)]
    Sign(#[from] SignError),
    /// The stored bytes are not an envelope (never one Motor wrote).
    #[error("the stored envelope does not parse: {0}")]
    Envelope(#[source] serde_json::Error),
}

/// The fields of a stored envelope the other shapes read; `data` kept as
/// its bytes.
#[derive(Deserialize)]
struct Stored<'a> {
    event_id: EventId,
    #[serde(rename = "type")]
    event_type: String,
    #[serde(with = "serde_ts")]
    occurred_at: Timestamp,
    #[serde(borrow)]
    data: &'a RawValue,
}

/// Seed 001's event, fields in its order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VisitoBody<'a> {
    event_id: EventId,
    #[serde(rename = "type")]
    event_type: &'a str,
    schema_version: &'static str,
    tenant_id: AppId,
    #[serde(with = "serde_ts")]
    occurred_at: Timestamp,
    data: &'a RawValue,
}

/// Seed 003's envelope, fields in its order; `replay_of` before `data` so
/// `data` stays last in every shape.
#[derive(Serialize)]
struct AsixtoBody<'a> {
    id: uuid::Uuid,
    #[serde(rename = "type")]
    event_type: &'a str,
    created: i64,
    environment: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    replay_of: Option<EventId>,
    data: &'a RawValue,
}

/// The body and headers of one attempt under `spec`.
pub fn render<'a>(
    spec: &ContractSpec,
    input: &RenderInput<'a>,
) -> Result<Rendered<'a>, RenderError> {
    let (body, event_id) = body(spec, input)?;
    let mut headers = Vec::new();
    if let Some(name) = spec.ids.event_id {
        headers.push((name, event_id.to_string()));
    }
    if let Some(name) = spec.ids.delivery_id {
        headers.push((name, input.delivery_id.to_string()));
    }
    if let (Some(name), Some(original)) = (
        spec.ids.replay_of,
        input.replay.and_then(|r| r.original_delivery),
    ) {
        headers.push((name, original.to_owned()));
    }
    let profile = if spec.signature.profile_choosable {
        input.profile
    } else {
        spec.signature.profile
    };
    let newest;
    let keys = match spec.signature.keys {
        KeyUse::AllLive => input.keys,
        KeyUse::NewestOnly => {
            newest = newest_live(input.keys, input.now);
            newest.as_slice()
        }
    };
    let signed = sign_profile(
        profile,
        keys,
        input.now,
        &input.delivery_id.to_string(),
        &body,
    )?;
    let key_ids = signed
        .key_id_list()
        .into_iter()
        .map(str::to_owned)
        .collect();
    headers.extend(signed.pairs().map(|(name, value)| {
        // t-v1's one header takes the contract's name.
        let name = if profile == SigningProfile::TV1 && name == HEADER_SIGNATURE {
            spec.signature.signature_header
        } else {
            name
        };
        (name, value.to_owned())
    }));
    Ok(Rendered {
        body,
        headers,
        key_ids,
    })
}

/// The body's bytes and the event's id (the envelope is parsed only when
/// the shape needs it: Motor's shape sends the bytes as they are, and its
/// id is the input's).
fn body<'a>(
    spec: &ContractSpec,
    input: &RenderInput<'a>,
) -> Result<(Cow<'a, [u8]>, EventId), RenderError> {
    let parse_error = RenderError::Envelope;
    match spec.envelope {
        EnvelopeShape::Motor => Ok((Cow::Borrowed(input.envelope), input.event_id)),
        EnvelopeShape::Visito => {
            let stored: Stored<'_> = serde_json::from_slice(input.envelope).map_err(parse_error)?;
            let body = VisitoBody {
                event_id: stored.event_id,
                event_type: &stored.event_type,
                schema_version: VISITO_SCHEMA_VERSION,
                tenant_id: input.app_id,
                occurred_at: stored.occurred_at,
                data: stored.data,
            };
            Ok((Cow::Owned(to_vec(&body)), stored.event_id))
        }
        EnvelopeShape::Asixto => {
            let stored: Stored<'_> = serde_json::from_slice(input.envelope).map_err(parse_error)?;
            let replayed =
                input.replay.is_some() && spec.replay == ReplayIdentity::NewIdWithReplayOf;
            let body = AsixtoBody {
                // A first delivery carries the event's id (stable however
                // often the engine sends it); a replay its own delivery id.
                id: if replayed {
                    *input.delivery_id.as_uuid()
                } else {
                    *stored.event_id.as_uuid()
                },
                event_type: &stored.event_type,
                created: stored.occurred_at.timestamp(),
                environment: input.environment.as_str(),
                replay_of: replayed.then_some(stored.event_id),
                data: stored.data,
            };
            Ok((Cow::Owned(to_vec(&body)), stored.event_id))
        }
    }
}

fn to_vec(body: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(body).expect("ids, strings, numbers and raw JSON always serialise")
}

/// The newest key live at `now` (by `creado_en`, then key id: the first
/// of the order every profile signs in), alone.
fn newest_live(keys: &[SigningKey], now: Timestamp) -> Vec<SigningKey> {
    keys.iter()
        .filter(|k| k.is_live_at(now))
        .max_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then_with(|| a.key_id.cmp(&b.key_id))
        })
        .cloned()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod interop;
#[cfg(test)]
mod tests;
