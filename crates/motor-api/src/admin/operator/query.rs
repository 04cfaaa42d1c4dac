//! The operator's delivery search, validated: every bad parameter is a 422
//! naming `query.<name>`; unknown parameters are ignored.

use std::collections::HashMap;

use motor_domain::{
    delivery::{DeliveryState, LastError},
    time, FieldError,
};
use motor_store::operator_view::DeliveryFilter;
use uuid::Uuid;

use crate::extract::comma_list;

pub const DEFAULT_PAGE_LIMIT: i64 = 50;
pub const MAX_PAGE_LIMIT: i64 = 200;

/// Parses `/v1/admin/deliveries`'s query into a filter (asking one row more
/// than `limite`, to know whether a next page exists).
pub fn parse(params: &HashMap<String, String>) -> Result<DeliveryFilter, FieldError> {
    let estados = match params.get("estado") {
        None => Vec::new(),
        Some(raw) => comma_list(
            raw,
            "query.estado",
            "must be a comma list of pendiente, entregada, fallida",
            |s| DeliveryState::parse(s).map(|e| e.as_str().to_owned()),
        )?,
    };
    let errores = match params.get("ultimo_error") {
        None => Vec::new(),
        Some(raw) => comma_list(
            raw,
            "query.ultimo_error",
            "must be a comma list of error codes (http_503, timeout, …)",
            |s| LastError::parse(s).map(|e| e.to_string()),
        )?,
    };
    let uuid = |name: &'static str| -> Result<Option<Uuid>, FieldError> {
        params
            .get(name)
            .map(|raw| {
                raw.trim()
                    .parse()
                    .map_err(|_| FieldError::invalid(format!("query.{name}"), "must be a uuid"))
            })
            .transpose()
    };
    let ts = |name: &'static str| {
        params
            .get(name)
            .map(|raw| {
                time::parse(raw.trim()).ok_or_else(|| {
                    FieldError::invalid(
                        format!("query.{name}"),
                        "must be an RFC 3339 time (2026-01-31T12:00:00Z)",
                    )
                })
            })
            .transpose()
    };
    let limite = match params.get("limite") {
        None => DEFAULT_PAGE_LIMIT,
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=MAX_PAGE_LIMIT).contains(n))
            .ok_or_else(|| {
                FieldError::invalid(
                    "query.limite",
                    format!("must be an integer from 1 to {MAX_PAGE_LIMIT}"),
                )
            })?,
    };
    let cursor = params
        .get("cursor")
        .map(|raw| {
            decode_cursor(raw)
                .ok_or_else(|| FieldError::invalid("query.cursor", "not a cursor this API gave"))
        })
        .transpose()?;
    let (desde, hasta) = (ts("desde")?, ts("hasta")?);
    if let (Some(d), Some(h)) = (desde, hasta) {
        if h <= d {
            return Err(FieldError::invalid("query.hasta", "must be after desde"));
        }
    }
    Ok(DeliveryFilter {
        estados,
        app: uuid("app_id")?,
        subscription: uuid("suscripcion_id")?,
        instance: uuid("instancia_id")?,
        errores,
        desde,
        hasta,
        before: cursor,
        limit: limite + 1,
    })
}

/// A cursor is the last listed delivery's id, prefixed so a plain id (or
/// anything else) is refused.
pub fn encode_cursor(last: Uuid) -> String {
    format!("d_{}", last.simple())
}

fn decode_cursor(raw: &str) -> Option<Uuid> {
    let hex = raw.strip_prefix("d_")?;
    (hex.len() == 32)
        .then(|| Uuid::try_parse(hex).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn field(pairs: &[(&str, &str)]) -> String {
        parse(&query(pairs)).unwrap_err().field
    }

    #[test]
    fn every_bad_parameter_is_named() {
        assert_eq!(field(&[("estado", "rota")]), "query.estado");
        assert_eq!(field(&[("ultimo_error", "http_x")]), "query.ultimo_error");
        assert_eq!(field(&[("app_id", "1")]), "query.app_id");
        assert_eq!(field(&[("suscripcion_id", "x")]), "query.suscripcion_id");
        assert_eq!(field(&[("instancia_id", "x")]), "query.instancia_id");
        assert_eq!(field(&[("desde", "ayer")]), "query.desde");
        assert_eq!(field(&[("hasta", "2026-13-01")]), "query.hasta");
        assert_eq!(
            field(&[
                ("desde", "2026-01-02T00:00:00Z"),
                ("hasta", "2026-01-01T00:00:00Z")
            ]),
            "query.hasta"
        );
        assert_eq!(field(&[("limite", "0")]), "query.limite");
        assert_eq!(field(&[("limite", "201")]), "query.limite");
        assert_eq!(field(&[("cursor", "abc")]), "query.cursor");
    }

    #[test]
    fn a_good_query_becomes_a_filter() {
        let id = Uuid::now_v7();
        let f = parse(&query(&[
            ("estado", "fallida,pendiente"),
            ("ultimo_error", "http_503,timeout_agotada"),
            ("limite", "10"),
            ("cursor", &encode_cursor(id)),
        ]))
        .unwrap();
        assert_eq!(f.estados, ["fallida", "pendiente"]);
        assert_eq!(f.errores, ["http_503", "timeout_agotada"]);
        assert_eq!(f.limit, 11);
        assert_eq!(f.before, Some(id));
        assert_eq!(
            parse(&HashMap::new()).unwrap().limit,
            DEFAULT_PAGE_LIMIT + 1
        );
    }
}
