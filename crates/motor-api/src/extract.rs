//! Request pieces read with Motor's own errors (axum's rejections are plain
//! text): JSON bodies with the failing field named, path ids, body limits.

use axum::body::{Body, Bytes};
use motor_domain::{
    error::{field_path, WHOLE_INPUT},
    FieldError,
};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Largest request body: a full batch of 500 events of a few KB each fits,
/// and any single event up to its 256 KB `data` limit.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// A comma list in a query parameter (`estado=a,b`), each item read with
/// `parse`; any unknown item is a 422 naming `field`, saying `expected`.
pub fn comma_list<T>(
    raw: &str,
    field: &'static str,
    expected: &'static str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, FieldError> {
    raw.split(',')
        .map(|s| parse(s.trim()).ok_or_else(|| FieldError::invalid(field, expected)))
        .collect()
}

pub async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::BodyTooLarge(MAX_BODY_BYTES))
}

/// A query string axum could not read into its parameters: a 422 naming
/// `query`.
pub fn rejected_query(e: axum::extract::rejection::QueryRejection) -> ApiError {
    ApiError::in_query(FieldError::invalid(WHOLE_INPUT, e.body_text()))
}

/// Deserialises a JSON body into `T`; a wrong type or a missing or unknown
/// field is a 422 naming `body.<path>`, bad syntax a 400.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(value) => {
            de.end()
                .map_err(|e| ApiError::MalformedJson(e.to_string()))?;
            Ok(value)
        }
        Err(e) => {
            let inner = e.inner();
            if inner.is_syntax() || inner.is_eof() {
                return Err(ApiError::MalformedJson(inner.to_string()));
            }
            // serde_path_to_error's path is the field inside the body
            // (`.` for the body itself); a missing field is reported at its
            // parent, so name the field.
            let path = e.path().to_string();
            let mut field = match path.as_str() {
                "." | "" => WHOLE_INPUT.to_owned(),
                path => path.to_owned(),
            };
            let message = inner.to_string();
            if let Some(rest) = message.strip_prefix("missing field `") {
                if let Some(name) = rest.split('`').next() {
                    field = field_path(&field, name);
                }
            }
            Err(ApiError::in_body(FieldError::invalid(
                field,
                strip_position(&message),
            )))
        }
    }
}

/// serde_json appends " at line L column C"; the field name says more.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// Parses an id from the path; an id that cannot exist is a 404.
pub fn path_id<T: std::str::FromStr>(raw: &str, what: &'static str) -> Result<T, ApiError> {
    raw.parse().map_err(|_| ApiError::NotFound(what))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Input {
        #[serde(rename = "nombre")]
        name: String,
        #[serde(default)]
        lista: Vec<String>,
    }

    #[test]
    fn names_the_field() {
        let e = parse_json::<Input>(br#"{"nombre": 5}"#).unwrap_err();
        assert_eq!(e.field(), Some("body.nombre"));
        let e = parse_json::<Input>(br#"{"nombre": "a", "lista": ["x", 1]}"#).unwrap_err();
        assert_eq!(e.field(), Some("body.lista[1]"));
        let e = parse_json::<Input>(br#"{}"#).unwrap_err();
        assert_eq!(e.field(), Some("body.nombre"));
        let e = parse_json::<Input>(br#"{"nombre": "a", "otro": 1}"#).unwrap_err();
        assert_eq!(e.field(), Some("body.otro"));
        let e = parse_json::<Input>(br#"[1]"#).unwrap_err();
        assert_eq!(e.field(), Some("body[0]"));
        let e = parse_json::<Input>(br#"{"nombre": "#).unwrap_err();
        assert!(matches!(e, ApiError::MalformedJson(_)));
        assert!(parse_json::<Input>(br#"{"nombre": "a"}"#).is_ok());
    }
}
