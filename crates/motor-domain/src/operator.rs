//! What operators manage: apps, instances and API keys. The operator API
//! and `motor admin` show them through the same wire types (the API's
//! `admin/*/dto.rs`).

use crate::{
    contract::Contract,
    destination::{parse_allowed_entry, DestinationPolicy},
    error::FieldError,
    ids::{AppId, InstanceId},
    scope::Scope,
    time::Timestamp,
};

pub const MAX_NAME_CHARS: usize = 120;
pub const MAX_DESTINATIONS: usize = 200;

#[derive(Debug, Clone, PartialEq)]
pub struct App {
    pub id: AppId,
    pub name: String,
    pub allowed_destinations: Vec<String>,
    /// `estandar` or `publica_https` (HTTPS on 443 to public IPv4 only).
    pub destination_policy: DestinationPolicy,
    /// The contract its new subscriptions take when they name none.
    pub contract: Contract,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    pub id: InstanceId,
    pub app_id: AppId,
    pub name: String,
    pub generation: i64,
}

/// An API key as listed: never its token.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKeyInfo {
    pub key_id: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub instances: Vec<InstanceId>,
    pub created_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
    /// When it stops working (`vence_en`); `None` = never.
    pub expires_at: Option<Timestamp>,
    /// `permisos_lectura`.
    pub read_scopes: Vec<String>,
}

/// The answer to creating a key: the only time its token is shown.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedKey {
    pub key_id: String,
    pub token: String,
    pub scopes: Vec<Scope>,
    pub instances: Vec<InstanceId>,
    pub expires_at: Option<Timestamp>,
    pub read_scopes: Vec<String>,
}

/// Refuses text with a NUL character, which a Postgres `text` column
/// cannot hold (it was a 500 when stored).
pub fn refuse_nul(text: &str, field: &str) -> Result<(), FieldError> {
    if text.contains('\0') {
        return Err(FieldError::invalid(
            field,
            "must not contain a NUL character (\\u0000)",
        ));
    }
    Ok(())
}

/// A display name: 1–120 characters after trimming, no NUL.
pub fn parse_name(raw: &str, field: &str) -> Result<String, FieldError> {
    refuse_nul(raw, field)?;
    let name = raw.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(FieldError::invalid(
            field,
            format!("must be 1 to {MAX_NAME_CHARS} characters"),
        ));
    }
    Ok(name.to_owned())
}

/// An allowed destination: `host` (any port), `host:port`, `[v6]` or
/// `[v6]:port`, stored in lower case — the same rule as the global list
/// ([`parse_allowed_entry`]), so an entry that could never match a URL
/// (`*.acme.com`, a bare IPv6 address without brackets) is refused.
pub fn parse_destination(raw: &str, field: &str) -> Result<String, FieldError> {
    let entry = parse_allowed_entry(raw, field)?;
    if entry.len() > 255 {
        return Err(FieldError::invalid(field, "must be at most 255 characters"));
    }
    Ok(entry)
}

pub fn parse_destinations(raw: &[String], field: &str) -> Result<Vec<String>, FieldError> {
    if raw.len() > MAX_DESTINATIONS {
        return Err(FieldError::invalid(
            field,
            format!("at most {MAX_DESTINATIONS} entries"),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(raw.len());
    for (i, entry) in raw.iter().enumerate() {
        let entry = parse_destination(entry, &format!("{field}[{i}]"))?;
        if !out.contains(&entry) {
            out.push(entry);
        }
    }
    Ok(out)
}

/// Scopes of a new key: at least one, no repeats.
pub fn parse_scopes(raw: &[String], field: &str) -> Result<Vec<Scope>, FieldError> {
    if raw.is_empty() {
        return Err(FieldError::invalid(field, "at least one scope is required"));
    }
    let mut out = Vec::with_capacity(raw.len());
    for (i, s) in raw.iter().enumerate() {
        let scope: Scope = s.parse().map_err(|e: crate::scope::UnknownScope| {
            FieldError::invalid(format!("{field}[{i}]"), e.to_string())
        })?;
        if !out.contains(&scope) {
            out.push(scope);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(parse_name("  Acme ", "nombre").unwrap(), "Acme");
        assert!(parse_name(&"a".repeat(120), "n").is_ok());
        assert_eq!(
            parse_name(&"a".repeat(121), "nombre").unwrap_err().field,
            "nombre"
        );
        assert!(parse_name("   ", "n").is_err());
        assert_eq!(parse_name("a\0b", "nombre").unwrap_err().field, "nombre");
    }

    #[test]
    fn destinations() {
        assert_eq!(
            parse_destination("Hooks.Example.COM", "d").unwrap(),
            "hooks.example.com"
        );
        assert_eq!(
            parse_destination("127.0.0.1:8080", "d").unwrap(),
            "127.0.0.1:8080"
        );
        assert_eq!(parse_destination("[::1]:9000", "d").unwrap(), "[::1]:9000");
        for bad in [
            "",
            "http://x",
            "a/b",
            "x:0",
            "x:99999",
            "x:y",
            "u@x",
            // Entries that could never match a URL.
            "*.acme.com",
            "*",
            "fe80::1",
            "2001:db8::1",
            "::1",
            "::1:8080",
        ] {
            assert!(parse_destination(bad, "d").is_err(), "{bad}");
        }
        let e = parse_destinations(&["ok.com".into(), "bad/".into()], "destinos_permitidos")
            .unwrap_err();
        assert_eq!(e.field, "destinos_permitidos[1]");
    }

    #[test]
    fn scopes() {
        let s = parse_scopes(&["events:read".into(), "events:read".into()], "scopes").unwrap();
        assert_eq!(s, vec![Scope::EventsRead]);
        assert_eq!(parse_scopes(&[], "scopes").unwrap_err().field, "scopes");
        assert_eq!(
            parse_scopes(&["events:read".into(), "root".into()], "scopes")
                .unwrap_err()
                .field,
            "scopes[1]"
        );
    }
}
