//! A rule broken by user input, with the field it concerns.

/// A validation failure. `field` names the field inside the input it came
/// from, never where that input travelled: `nombre`, `tipos[3]`,
/// `destino.url`, `[3].type` (an item of an input that is a list), or ``
/// (empty: the whole input). Each door says where the input was
/// ([`located`](Self::located)): the HTTP API adds `body`, `query`,
/// `path` or `header` (`body.nombre`), the CLI names its own flag.
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

    /// The same error with its field seen from outside: `field` under
    /// `place` ([`field_path`]`(place, field)`): `nombre` under `body` is
    /// `body.nombre`, `[3].type` is `body[3].type`, the whole input is
    /// `body`.
    pub fn located(mut self, place: &str) -> Self {
        self.field = field_path(place, &self.field);
        self
    }
}

/// The field of an error about the whole input (an empty object, a
/// request naming neither of two forms): the door names it by its place
/// alone (`body`).
pub const WHOLE_INPUT: &str = "";

/// `name` inside `parent`: `parent.name`, or `name` alone when `parent` is
/// the whole input (empty); an index (`[3]`) or an empty `name` joins with
/// no dot. The one spelling of nested fields, for parsers that walk into
/// an input and for doors that say where it was.
pub fn field_path(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else if name.is_empty() || name.starts_with('[') {
        format!("{parent}{name}")
    } else {
        format!("{parent}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_door_puts_the_field_under_its_place() {
        let at = |field: &str, place: &str| FieldError::invalid(field, "bad").located(place).field;
        assert_eq!(at("nombre", "body"), "body.nombre");
        assert_eq!(at("destino.url", "body"), "body.destino.url");
        assert_eq!(at("tipos[3]", "body"), "body.tipos[3]");
        assert_eq!(at("[3].type", "body"), "body[3].type");
        assert_eq!(at("", "body"), "body");
        assert_eq!(at("limit", "query"), "query.limit");
        assert_eq!(at("Idempotency-Key", "header"), "header.Idempotency-Key");
        assert_eq!(at("nombre", ""), "nombre");
        let e = FieldError::too_large("data", "big").located("body");
        assert_eq!(
            (e.kind, e.message.as_str()),
            (FieldErrorKind::TooLarge, "big")
        );
    }

    #[test]
    fn nested_paths_join_with_a_dot_and_indexes_without() {
        assert_eq!(field_path("", "type"), "type");
        assert_eq!(field_path("[2]", "type"), "[2].type");
        assert_eq!(field_path("destino", "url"), "destino.url");
        assert_eq!(field_path("tipos", "[0]"), "tipos[0]");
    }
}
