//! What operators manage: apps, instances and API keys, as the operator API
//! and `motor admin` show them (the same JSON from both).

use serde::{Deserialize, Serialize};

use crate::{
    error::FieldError,
    ids::{AppId, InstanceId},
    scope::Scope,
    time::{serde_ts, Timestamp},
};

pub const MAX_NAME_CHARS: usize = 120;
pub const MAX_DESTINATIONS: usize = 200;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct App {
    pub id: AppId,
    pub nombre: String,
    pub destinos_permitidos: Vec<String>,
    #[serde(with = "serde_ts")]
    pub creada_en: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    pub id: InstanceId,
    pub app_id: AppId,
    pub nombre: String,
    pub generation: i64,
}

/// An API key as listed: never its token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKeyInfo {
    pub key_id: String,
    pub nombre: String,
    pub scopes: Vec<Scope>,
    pub instancias: Vec<InstanceId>,
    #[serde(with = "serde_ts")]
    pub creada_en: Timestamp,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::time::serde_opt_ts"
    )]
    pub revocada_en: Option<Timestamp>,
}

/// The answer to creating a key: the only time its token is shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatedKey {
    pub key_id: String,
    pub token: String,
    pub scopes: Vec<Scope>,
    pub instancias: Vec<InstanceId>,
}

/// A display name: 1–120 characters after trimming.
pub fn parse_name(raw: &str, campo: &str) -> Result<String, FieldError> {
    let name = raw.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(FieldError::invalid(
            campo,
            format!("must be 1 to {MAX_NAME_CHARS} characters"),
        ));
    }
    Ok(name.to_owned())
}

/// An allowed destination: `host` (any port) or `host:port`, stored in lower
/// case. Matching rules against URLs come with subscriptions.
pub fn parse_destination(raw: &str, campo: &str) -> Result<String, FieldError> {
    let entry = raw.trim().to_ascii_lowercase();
    let invalid = || FieldError::invalid(campo, "must be a host or host:port");
    if entry.is_empty() || entry.len() > 255 || entry.contains(['/', '@', '?', '#', ' ']) {
        return Err(invalid());
    }
    let (host, port) = match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.ends_with(']') => (host, Some(port)),
        _ => (entry.as_str(), None),
    };
    if host.is_empty() {
        return Err(invalid());
    }
    if let Some(port) = port {
        if port.parse::<u16>().map(|p| p == 0).unwrap_or(true) {
            return Err(invalid());
        }
    }
    Ok(entry)
}

pub fn parse_destinations(raw: &[String], campo: &str) -> Result<Vec<String>, FieldError> {
    if raw.len() > MAX_DESTINATIONS {
        return Err(FieldError::invalid(
            campo,
            format!("at most {MAX_DESTINATIONS} entries"),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(raw.len());
    for (i, entry) in raw.iter().enumerate() {
        let entry = parse_destination(entry, &format!("{campo}[{i}]"))?;
        if !out.contains(&entry) {
            out.push(entry);
        }
    }
    Ok(out)
}

/// Scopes of a new key: at least one, no repeats.
pub fn parse_scopes(raw: &[String], campo: &str) -> Result<Vec<Scope>, FieldError> {
    if raw.is_empty() {
        return Err(FieldError::invalid(campo, "at least one scope is required"));
    }
    let mut out = Vec::with_capacity(raw.len());
    for (i, s) in raw.iter().enumerate() {
        let scope: Scope = s.parse().map_err(|e: crate::scope::UnknownScope| {
            FieldError::invalid(format!("{campo}[{i}]"), e.to_string())
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
        assert_eq!(parse_name("  Acme ", "body.nombre").unwrap(), "Acme");
        assert!(parse_name(&"a".repeat(120), "n").is_ok());
        assert_eq!(
            parse_name(&"a".repeat(121), "body.nombre")
                .unwrap_err()
                .campo,
            "body.nombre"
        );
        assert!(parse_name("   ", "n").is_err());
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
        for bad in ["", "http://x", "a/b", "x:0", "x:99999", "x:y", "u@x"] {
            assert!(parse_destination(bad, "d").is_err(), "{bad}");
        }
        let e = parse_destinations(
            &["ok.com".into(), "bad/".into()],
            "body.destinos_permitidos",
        )
        .unwrap_err();
        assert_eq!(e.campo, "body.destinos_permitidos[1]");
    }

    #[test]
    fn scopes() {
        let s = parse_scopes(&["events:read".into(), "events:read".into()], "body.scopes").unwrap();
        assert_eq!(s, vec![Scope::EventsRead]);
        assert_eq!(
            parse_scopes(&[], "body.scopes").unwrap_err().campo,
            "body.scopes"
        );
        assert_eq!(
            parse_scopes(&["events:read".into(), "root".into()], "body.scopes")
                .unwrap_err()
                .campo,
            "body.scopes[1]"
        );
    }
}
