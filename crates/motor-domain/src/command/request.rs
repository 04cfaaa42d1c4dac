//! A producer's request for a command, parsed: a send (`chat` +
//! `contenido`, `POST /v1/instances/{id}/messages`) or any other kind
//! (`tipo` + `parametros`, `POST /v1/instances/{id}/commands`), the
//! optional fields both share, the `Idempotency-Key`, and the fingerprint
//! a repeated key is compared by. Errors name the bare field (`chat`,
//! `Idempotency-Key`); the HTTP layer says where it came from.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::CommandKind;
use crate::{
    error::FieldError,
    event::cap::json_len,
    time::{self, Timestamp},
};

/// Longest `chat`, in characters.
pub const MAX_CHAT_CHARS: usize = 200;
/// Longest `correlation_id`, in characters.
pub const MAX_CORRELATION_ID_CHARS: usize = 200;
/// Longest `Idempotency-Key`, in characters.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 200;
/// Largest `contenido` or `parametros`, in bytes of compact JSON: a
/// command travels whole to its executor in the claim's answer, and one
/// message's content is far below this.
pub const MAX_PAYLOAD_BYTES: usize = 64 * 1024;

/// A send's body as it arrived (absent = `None`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RawSend<'a> {
    pub chat: Option<&'a str>,
    pub content: Option<&'a Value>,
    pub options: RawOptions<'a>,
}

/// Another command's body as it arrived.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawOperation<'a> {
    pub kind: Option<&'a str>,
    pub parameters: Option<&'a Value>,
    pub options: RawOptions<'a>,
}

/// The optional fields every command may carry, as they arrived.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawOptions<'a> {
    pub expires_at: Option<&'a str>,
    pub correlation_id: Option<&'a str>,
    pub expected_generation: Option<i64>,
}

/// The optional fields, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandOptions {
    /// `expires_at`: after it, a command not yet claimed ends `fallido`
    /// with `comando_vencido`. In the future when accepted.
    pub expires_at: Option<Timestamp>,
    /// `correlation_id`: the app's own reference, 1–200 characters.
    pub correlation_id: Option<String>,
    /// `generacion_esperada`: refused (409) when the instance's
    /// `generation` is another, so a send never leaves through a relinked
    /// number. At least 1.
    pub expected_generation: Option<i64>,
}

/// What a command asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// A send: handed to the executor as is.
    Send {
        chat: String,
        content: Map<String, Value>,
    },
    /// Any other kind, with its `parametros` (`{}` when absent).
    Operation {
        kind: CommandKind,
        parameters: Map<String, Value>,
    },
}

/// A valid command request, not yet stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCommand {
    pub payload: Payload,
    pub options: CommandOptions,
}

/// SHA-256 of what a command asks for; the same `Idempotency-Key` with
/// another fingerprint is a conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl NewCommand {
    /// A send: `chat` 1–200 characters (kept as written: it is an address),
    /// `contenido` a JSON object.
    pub fn send(raw: RawSend<'_>, now: Timestamp) -> Result<Self, FieldError> {
        let chat = raw
            .chat
            .ok_or_else(|| FieldError::invalid("chat", "is required"))?;
        let chat = bounded_text(chat, "chat", MAX_CHAT_CHARS)?;
        let content = object(raw.content, "contenido")?
            .ok_or_else(|| FieldError::invalid("contenido", "is required"))?;
        Ok(Self {
            payload: Payload::Send { chat, content },
            options: CommandOptions::parse(raw.options, now)?,
        })
    }

    /// Another command: `tipo` one of the closed list but `mensaje`
    /// (sends have their own route and rules), `parametros` a JSON object.
    pub fn operation(raw: RawOperation<'_>, now: Timestamp) -> Result<Self, FieldError> {
        let name = raw
            .kind
            .ok_or_else(|| FieldError::invalid("tipo", "is required"))?;
        let kind = match CommandKind::parse(name) {
            Some(CommandKind::Message) => {
                return Err(FieldError::invalid(
                    "tipo",
                    "a send (mensaje) goes to POST /v1/instances/{id}/messages",
                ))
            }
            Some(kind) => kind,
            None => {
                let known: Vec<&str> = CommandKind::ALL[1..].iter().map(|k| k.as_str()).collect();
                return Err(FieldError::invalid(
                    "tipo",
                    format!("unknown kind; one of {}", known.join(", ")),
                ));
            }
        };
        let parameters = object(raw.parameters, "parametros")?.unwrap_or_default();
        Ok(Self {
            payload: Payload::Operation { kind, parameters },
            options: CommandOptions::parse(raw.options, now)?,
        })
    }

    pub fn kind(&self) -> CommandKind {
        match &self.payload {
            Payload::Send { .. } => CommandKind::Message,
            Payload::Operation { kind, .. } => *kind,
        }
    }

    pub fn chat(&self) -> Option<&str> {
        match &self.payload {
            Payload::Send { chat, .. } => Some(chat),
            Payload::Operation { .. } => None,
        }
    }

    /// The fingerprint of what is asked: kind, destination, content
    /// (whatever its keys' order), `expires_at` and `correlation_id`.
    /// `generacion_esperada` is left out on purpose: a repeat after a
    /// relink must find the command it made (the seed).
    pub fn fingerprint(&self) -> Fingerprint {
        let (chat, mut content) = match &self.payload {
            Payload::Send { chat, content } => (Some(chat), Value::Object(content.clone())),
            Payload::Operation { parameters, .. } => (None, Value::Object(parameters.clone())),
        };
        content.sort_all_objects();
        let canonical = serde_json::json!([
            self.kind().as_str(),
            chat,
            content,
            self.options.expires_at.map(|t| time::format(&t)),
            self.options.correlation_id,
        ]);
        Fingerprint(Sha256::digest(canonical.to_string().as_bytes()).into())
    }
}

impl CommandOptions {
    /// `expires_at` RFC 3339 and after `now`; `correlation_id` 1–200
    /// characters; `generacion_esperada` at least 1.
    pub fn parse(raw: RawOptions<'_>, now: Timestamp) -> Result<Self, FieldError> {
        let expires_at = match raw.expires_at {
            None => None,
            Some(s) => {
                let at = time::parse(s).ok_or_else(|| {
                    FieldError::invalid("expires_at", "must be an RFC 3339 timestamp")
                })?;
                if at <= now {
                    return Err(FieldError::invalid("expires_at", "must be in the future"));
                }
                Some(at)
            }
        };
        let correlation_id = raw
            .correlation_id
            .map(|s| bounded_text(s, "correlation_id", MAX_CORRELATION_ID_CHARS))
            .transpose()?;
        if let Some(generation) = raw.expected_generation {
            if generation < 1 {
                return Err(FieldError::invalid(
                    "generacion_esperada",
                    "must be at least 1",
                ));
            }
        }
        Ok(Self {
            expires_at,
            correlation_id,
            expected_generation: raw.expected_generation,
        })
    }
}

/// The `Idempotency-Key` of a command request: 1–200 characters, per app
/// and instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub const FIELD: &'static str = "Idempotency-Key";

    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        bounded_text(raw, Self::FIELD, MAX_IDEMPOTENCY_KEY_CHARS).map(Self)
    }

    /// The key of a request for `kind`: required for a send, optional for
    /// the rest.
    pub fn for_kind(raw: Option<&str>, kind: CommandKind) -> Result<Option<Self>, FieldError> {
        match raw {
            Some(raw) => Self::parse(raw).map(Some),
            None if kind == CommandKind::Message => {
                Err(FieldError::invalid(Self::FIELD, "is required for a send"))
            }
            None => Ok(None),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Text of 1 to `max` characters with no control characters (NUL among
/// them, which Postgres cannot store) and not only white space; kept as
/// written.
pub(crate) fn bounded_text(raw: &str, field: &str, max: usize) -> Result<String, FieldError> {
    let chars = raw.chars().count();
    if raw.trim().is_empty() || chars > max {
        return Err(FieldError::invalid(
            field,
            format!("must be 1 to {max} characters, not only white space"),
        ));
    }
    if raw.chars().any(char::is_control) {
        return Err(FieldError::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok(raw.to_owned())
}

/// A JSON object of at most [`MAX_PAYLOAD_BYTES`] with no `\u0000` in any
/// key or string (Postgres' `jsonb` refuses it); `None` when absent.
fn object(raw: Option<&Value>, field: &str) -> Result<Option<Map<String, Value>>, FieldError> {
    let Some(value) = raw else { return Ok(None) };
    let Value::Object(map) = value else {
        return Err(FieldError::invalid(field, "must be a JSON object"));
    };
    if has_nul(value) {
        return Err(FieldError::invalid(
            field,
            "must not contain a NUL character (\\u0000)",
        ));
    }
    let bytes = json_len(value);
    if bytes > MAX_PAYLOAD_BYTES {
        return Err(FieldError::too_large(
            field,
            format!("must be at most {MAX_PAYLOAD_BYTES} bytes of JSON, got {bytes}"),
        ));
    }
    Ok(Some(map.clone()))
}

fn has_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(has_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests;
