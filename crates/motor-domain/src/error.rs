//! A rule broken by user input, with the field it concerns.

/// A validation failure. `field` names the field the way clients see it
/// (`body[3].type`, `query.limit`, `header.Idempotency-Key`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    pub field: String,
    pub kind: FieldErrorKind,
    pub message: String,
}

/// What kind of rule was broken; the API maps it to a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// The value is not acceptable (422).
    Invalid,
    /// The value is larger than Motor accepts (413).
    TooLarge,
}

impl FieldError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            kind: FieldErrorKind::Invalid,
            message: message.into(),
        }
    }

    pub fn too_large(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            kind: FieldErrorKind::TooLarge,
            message: message.into(),
        }
    }
}
