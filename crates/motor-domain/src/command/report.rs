//! An executor's report of a command's outcome
//! (`POST /v1/executor/commands/{id}/report`), parsed against the
//! command's kind: `status` plus exactly the fields that status needs.
//! Which transition a report makes is [`Report::transition`]; whether the
//! command's current status allows it is the state machine's call.

use super::{
    request::bounded_text,
    state::{Outcome, Stage, Transition},
    CommandKind, KindClass,
};
use crate::{
    error::FieldError,
    time::{self, Timestamp},
};

/// Longest `provider_message_id`, `error_code` and `server_code`, in
/// characters.
pub const MAX_CODE_CHARS: usize = 200;

/// A report's fields as they arrived (absent = `None`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RawReport<'a> {
    pub status: Option<&'a str>,
    pub provider_message_id: Option<&'a str>,
    pub chat: Option<&'a str>,
    /// `aceptado_en`.
    pub accepted_at: Option<&'a str>,
    pub error_code: Option<&'a str>,
    pub stage: Option<&'a str>,
    pub server_code: Option<&'a str>,
    pub next_try: Option<&'a str>,
}

/// A valid report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// `enviado` (sends only): the provider's server accepted it.
    Sent {
        provider_message_id: String,
        /// The destination as the provider spells it.
        chat: String,
        accepted_at: Timestamp,
    },
    /// `completado` (every kind but a send).
    Completed,
    /// `fallido`: no effect. `stage` is `previa` or `servidor` (a send
    /// that may have gone out is `ambiguo`, not `fallido`); `server_code`
    /// only with `servidor`.
    Failed {
        error_code: String,
        stage: Stage,
        server_code: Option<String>,
        provider_message_id: Option<String>,
    },
    /// `ambiguo`: stage `frontera`; an `error_code` may say why.
    Ambiguous { error_code: Option<String> },
    /// `en_cola`: the provider asked to wait until `next_try`.
    Deferred { next_try: Timestamp },
}

impl Report {
    /// Parses a report for a command of `kind`. A field the status does
    /// not take is refused by name rather than silently dropped.
    pub fn parse(raw: RawReport<'_>, kind: CommandKind) -> Result<Self, FieldError> {
        let status = raw
            .status
            .ok_or_else(|| FieldError::invalid("status", "is required"))?;
        let send = kind.class() == KindClass::Send;
        let allowed: &[&str] = match status {
            "enviado" if send => &["provider_message_id", "chat", "aceptado_en"],
            "completado" if !send => &[],
            "fallido" => &["error_code", "stage", "server_code", "provider_message_id"],
            "ambiguo" => &["error_code", "stage"],
            "en_cola" => &["next_try"],
            "enviado" => {
                return Err(FieldError::invalid(
                    "status",
                    format!("enviado is for a send; a {kind} ends completado"),
                ))
            }
            "completado" => {
                return Err(FieldError::invalid(
                    "status",
                    "a send ends enviado, not completado",
                ))
            }
            _ => {
                return Err(FieldError::invalid(
                    "status",
                    "must be enviado, completado, fallido, ambiguo or en_cola",
                ))
            }
        };
        refuse_others(&raw, allowed, status)?;
        let code = |value: Option<&str>, name: &str| {
            value
                .map(|v| bounded_text(v, name, MAX_CODE_CHARS))
                .transpose()
        };
        let required = |value: Option<String>, name: &str| {
            value.ok_or_else(|| {
                FieldError::invalid(name, format!("is required with status {status}"))
            })
        };
        Ok(match status {
            "enviado" => Report::Sent {
                provider_message_id: required(
                    code(raw.provider_message_id, "provider_message_id")?,
                    "provider_message_id",
                )?,
                chat: required(code(raw.chat, "chat")?, "chat")?,
                accepted_at: timestamp(
                    required(raw.accepted_at.map(str::to_owned), "aceptado_en")?,
                    "aceptado_en",
                )?,
            },
            "completado" => Report::Completed,
            "fallido" => {
                let stage =
                    match raw.stage {
                        None => return Err(required(None, "stage").unwrap_err()),
                        Some("previa") => Stage::Before,
                        Some("servidor") => Stage::Server,
                        Some(_) => return Err(FieldError::invalid(
                            "stage",
                            "must be previa or servidor (one that may have gone out is ambiguo)",
                        )),
                    };
                let server_code = code(raw.server_code, "server_code")?;
                if server_code.is_some() && stage != Stage::Server {
                    return Err(FieldError::invalid(
                        "server_code",
                        "only with stage servidor",
                    ));
                }
                Report::Failed {
                    error_code: required(code(raw.error_code, "error_code")?, "error_code")?,
                    stage,
                    server_code,
                    provider_message_id: code(raw.provider_message_id, "provider_message_id")?,
                }
            }
            "ambiguo" => {
                if raw.stage.is_some_and(|s| s != Stage::Boundary.as_str()) {
                    return Err(FieldError::invalid(
                        "stage",
                        "an ambiguo command's stage is frontera",
                    ));
                }
                Report::Ambiguous {
                    error_code: code(raw.error_code, "error_code")?,
                }
            }
            _ => Report::Deferred {
                next_try: timestamp(
                    required(raw.next_try.map(str::to_owned), "next_try")?,
                    "next_try",
                )?,
            },
        })
    }

    /// The transition this report asks for.
    pub fn transition(&self) -> Transition {
        Transition::Report(match self {
            Report::Sent { .. } => Outcome::Sent,
            Report::Completed => Outcome::Completed,
            Report::Failed { .. } => Outcome::Failed,
            Report::Ambiguous { .. } => Outcome::Ambiguous,
            Report::Deferred { .. } => Outcome::Deferred,
        })
    }
}

fn timestamp(raw: String, field: &str) -> Result<Timestamp, FieldError> {
    time::parse(&raw).ok_or_else(|| FieldError::invalid(field, "must be an RFC 3339 timestamp"))
}

/// Refuses a field present that `status` does not take.
fn refuse_others(raw: &RawReport<'_>, allowed: &[&str], status: &str) -> Result<(), FieldError> {
    let present = [
        ("provider_message_id", raw.provider_message_id.is_some()),
        ("chat", raw.chat.is_some()),
        ("aceptado_en", raw.accepted_at.is_some()),
        ("error_code", raw.error_code.is_some()),
        ("stage", raw.stage.is_some()),
        ("server_code", raw.server_code.is_some()),
        ("next_try", raw.next_try.is_some()),
    ];
    match present
        .into_iter()
        .find(|(name, there)| *there && !allowed.contains(name))
    {
        Some((name, _)) => Err(FieldError::invalid(
            name,
            format!("is not taken with status {status}"),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
