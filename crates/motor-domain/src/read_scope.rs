//! Read scopes (seed 001's permission model, `contrato: visito`): an app's
//! catalogue may map each event type to a read scope — the app's own word,
//! such as `conversations:read` — and an API key holds read scopes
//! (`permisos_lectura`) beside Motor's own `scopes`. Creating or changing
//! a subscription needs the read scope of every type it selects: "`POST
//! /webhooks` requiere `webhooks:write` y el permiso de lectura de cada
//! recurso seleccionado".

use std::collections::BTreeMap;

use crate::error::FieldError;

/// The field read scopes are named in, on keys and on the catalogue.
pub const FIELD: &str = "permisos_lectura";

/// Longest read scope, in bytes.
pub const MAX_LEN: usize = 100;

/// Most read scopes one key holds.
pub const MAX_PER_KEY: usize = 100;

/// A read scope: 1–100 characters, lower-case ASCII letters, digits, `_`,
/// `.` and `-`, in at least two parts joined by `:` (`crm:sales:read`).
pub fn parse(raw: &str, field: &str) -> Result<String, FieldError> {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b))
    };
    let ok = raw.len() <= MAX_LEN && raw.contains(':') && raw.split(':').all(part_ok);
    if ok {
        Ok(raw.to_owned())
    } else {
        Err(FieldError::invalid(
            field,
            "must be a read scope: 1-100 of a-z 0-9 _ . - in parts joined by ':' (conversations:read)",
        ))
    }
}

/// A key's read scopes, duplicates dropped, order kept; errors name
/// `permisos_lectura[i]`.
pub fn parse_list(raw: &[String]) -> Result<Vec<String>, FieldError> {
    if raw.len() > MAX_PER_KEY {
        return Err(FieldError::invalid(
            FIELD,
            format!("at most {MAX_PER_KEY} read scopes"),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(raw.len());
    for (i, s) in raw.iter().enumerate() {
        let s = parse(s, &format!("{FIELD}[{i}]"))?;
        if !out.contains(&s) {
            out.push(s);
        }
    }
    Ok(out)
}

/// The first selected type whose read scope `held` lacks, with that scope.
/// `selected` empty = every type, so every type the map names.
pub fn missing<'a>(
    selected: &'a [String],
    map: &'a BTreeMap<String, String>,
    held: &[String],
) -> Option<(&'a str, &'a str)> {
    let lacks = |(t, s): (&'a String, &'a String)| {
        (!held.iter().any(|h| h == s)).then_some((t.as_str(), s.as_str()))
    };
    if selected.is_empty() {
        return map.iter().find_map(lacks);
    }
    selected
        .iter()
        .filter_map(|t| map.get_key_value(t))
        .find_map(lacks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> BTreeMap<String, String> {
        // Seed 001's table.
        [
            ("message.created", "conversations:read"),
            ("message.delivery.updated", "messages:read"),
            ("conversation.handoff.updated", "conversations:read"),
            ("crm.opportunity.created", "crm:sales:read"),
            ("crm.opportunity.updated", "crm:sales:read"),
        ]
        .into_iter()
        .map(|(t, s)| (t.to_owned(), s.to_owned()))
        .collect()
    }

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_first_selected_type_without_its_scope_is_named() {
        let m = map();
        // (selected types, scopes held, the first type lacking and its scope)
        type Row<'a> = (&'a [&'a str], &'a [&'a str], Option<(&'a str, &'a str)>);
        let table: [Row; 8] = [
            (&["message.created"], &["conversations:read"], None),
            (
                &["message.created", "message.delivery.updated"],
                &["conversations:read"],
                Some(("message.delivery.updated", "messages:read")),
            ),
            (
                &["message.created", "message.delivery.updated"],
                &["messages:read", "conversations:read"],
                None,
            ),
            (
                &["crm.opportunity.updated"],
                &["crm:read"],
                Some(("crm.opportunity.updated", "crm:sales:read")),
            ),
            // A type the map does not name needs nothing.
            (&["other.type"], &[], None),
            // Every type (empty) needs every mapped scope.
            (
                &[],
                &["conversations:read", "messages:read"],
                Some(("crm.opportunity.created", "crm:sales:read")),
            ),
            (
                &[],
                &["conversations:read", "messages:read", "crm:sales:read"],
                None,
            ),
            (
                &["message.created"],
                &[],
                Some(("message.created", "conversations:read")),
            ),
        ];
        for (selected, held, want) in table {
            let selected = v(selected);
            assert_eq!(
                missing(&selected, &m, &v(held)),
                want,
                "{selected:?} {held:?}"
            );
        }
        // No map: nothing needed.
        assert_eq!(missing(&v(&[]), &BTreeMap::new(), &[]), None);
    }

    #[test]
    fn read_scopes_are_checked() {
        for ok in [
            "conversations:read",
            "crm:sales:read",
            "a:b",
            "x.y-z_1:read",
        ] {
            assert_eq!(parse(ok, "f").unwrap(), ok);
        }
        for bad in [
            "",
            "read",
            ":read",
            "a:",
            "a::b",
            "Conversations:read",
            "a:b c",
            "events:réad",
        ] {
            assert_eq!(parse(bad, "f").unwrap_err().field, "f", "{bad:?}");
        }
        assert!(parse(&format!("a:{}", "b".repeat(MAX_LEN)), "f").is_err());
        let list = parse_list(&v(&["a:read", "b:read", "a:read"])).unwrap();
        assert_eq!(list, ["a:read", "b:read"]);
        assert_eq!(
            parse_list(&v(&["a:read", "nope"])).unwrap_err().field,
            "permisos_lectura[1]"
        );
    }
}
