//! The filters of the delivery listings, validated from their raw
//! parameters: an app's listing (page numbers) and the operator's search
//! (more filters, a cursor). Both share the
//! parsing of `estado`, of ids and of bounded numbers; every bad parameter
//! is named bare (`limite`; the API says `query.limite`), unknown
//! parameters are ignored.

use std::collections::HashMap;

use motor_domain::{
    delivery::{DeliveryId, DeliveryState, LastError},
    subscription::SubscriptionId,
    time, AppId, FieldError, InstanceId,
};
use motor_store::deliveries::read::SearchFilter;
use uuid::Uuid;

use crate::parse::comma_list;

pub const DEFAULT_PER_PAGE: i64 = 50;
pub const MAX_PER_PAGE: i64 = 200;

/// `GET /v1/deliveries`'s query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub states: Vec<DeliveryState>,
    pub subscription_id: Option<SubscriptionId>,
    pub instance_id: Option<InstanceId>,
    pub page: i64,
    pub per_page: i64,
}

impl ListQuery {
    pub fn parse(params: &HashMap<String, String>) -> Result<Self, FieldError> {
        Ok(Self {
            states: states(params)?,
            subscription_id: uuid(params, "suscripcion_id")?.map(SubscriptionId::from_uuid),
            instance_id: uuid(params, "instancia_id")?.map(InstanceId::from_uuid),
            // A page past this many rows is not a listing any more.
            page: bounded(params, "pagina", 1, 1_000_000)?,
            per_page: bounded(params, "por_pagina", DEFAULT_PER_PAGE, MAX_PER_PAGE)?,
        })
    }
}

/// Parses `/v1/admin/deliveries`'s query into a filter (asking one row more
/// than `limite`, to know whether a next page exists).
pub fn parse_search(params: &HashMap<String, String>) -> Result<SearchFilter, FieldError> {
    // Checked in this order, so the first bad parameter is the one named.
    let states = states(params)?;
    let last_errors = match params.get("ultimo_error") {
        None => Vec::new(),
        Some(raw) => comma_list(
            raw,
            "ultimo_error",
            "must be a comma list of error codes (http_503, timeout, …)",
            |s| LastError::parse(s).map(|e| e.to_string()),
        )?,
    };
    let ts = |name: &'static str| {
        params
            .get(name)
            .map(|raw| {
                time::parse(raw.trim()).ok_or_else(|| {
                    FieldError::invalid(name, "must be an RFC 3339 time (2026-01-31T12:00:00Z)")
                })
            })
            .transpose()
    };
    let limit = bounded(params, "limite", DEFAULT_PER_PAGE, MAX_PER_PAGE)?;
    let cursor = params
        .get("cursor")
        .map(|raw| {
            decode_cursor(raw)
                .ok_or_else(|| FieldError::invalid("cursor", "not a cursor this API gave"))
        })
        .transpose()?;
    let (from, until) = (ts("desde")?, ts("hasta")?);
    if let (Some(f), Some(u)) = (from, until) {
        if u <= f {
            return Err(FieldError::invalid("hasta", "must be after desde"));
        }
    }
    Ok(SearchFilter {
        states,
        app: uuid(params, "app_id")?.map(AppId::from_uuid),
        subscription: uuid(params, "suscripcion_id")?.map(SubscriptionId::from_uuid),
        instance: uuid(params, "instancia_id")?.map(InstanceId::from_uuid),
        last_errors,
        from,
        until,
        before: cursor.map(DeliveryId::from_uuid),
        limit: limit + 1,
    })
}

/// `estado`: a comma list of delivery states; absent = every state.
fn states(params: &HashMap<String, String>) -> Result<Vec<DeliveryState>, FieldError> {
    match params.get("estado") {
        None => Ok(Vec::new()),
        Some(raw) => comma_list(
            raw,
            "estado",
            "must be a comma list of pendiente, entregada, fallida, cancelada",
            DeliveryState::parse,
        ),
    }
}

fn uuid(params: &HashMap<String, String>, name: &'static str) -> Result<Option<Uuid>, FieldError> {
    params
        .get(name)
        .map(|raw| {
            raw.trim()
                .parse()
                .map_err(|_| FieldError::invalid(name, "must be a uuid"))
        })
        .transpose()
}

/// An integer from 1 to `max`, `default` when absent.
pub(crate) fn bounded(
    params: &HashMap<String, String>,
    name: &'static str,
    default: i64,
    max: i64,
) -> Result<i64, FieldError> {
    match params.get(name) {
        None => Ok(default),
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| {
                FieldError::invalid(name, format!("must be an integer from 1 to {max}"))
            }),
    }
}

/// A cursor is the last listed delivery's id, prefixed so a plain id (or
/// anything else) is refused.
pub fn encode_cursor(last: DeliveryId) -> String {
    format!("d_{}", last.as_uuid().simple())
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

    fn parse(pairs: &[(&str, &str)]) -> Result<ListQuery, FieldError> {
        ListQuery::parse(&query(pairs))
    }

    fn search_field(pairs: &[(&str, &str)]) -> String {
        parse_search(&query(pairs)).unwrap_err().field
    }

    #[test]
    fn defaults() {
        let q = parse(&[]).unwrap();
        assert_eq!((q.page, q.per_page), (1, DEFAULT_PER_PAGE));
        assert!(q.states.is_empty() && q.subscription_id.is_none() && q.instance_id.is_none());
    }

    #[test]
    fn state_is_a_comma_list_of_known_states() {
        let q = parse(&[("estado", "pendiente,fallida")]).unwrap();
        assert_eq!(q.states, [DeliveryState::Pending, DeliveryState::Failed]);
        for bad in [
            "",
            "pendiente,",
            "activa",
            "Pendiente",
            "entregada,,fallida",
        ] {
            assert_eq!(
                parse(&[("estado", bad)]).unwrap_err().field,
                "estado",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn paging_bounds() {
        assert_eq!(parse(&[("por_pagina", "200")]).unwrap().per_page, 200);
        assert_eq!(parse(&[("por_pagina", "1")]).unwrap().per_page, 1);
        for bad in ["0", "201", "-1", "x", ""] {
            assert_eq!(
                parse(&[("por_pagina", bad)]).unwrap_err().field,
                "por_pagina"
            );
        }
        for bad in ["0", "-3", "1.5", ""] {
            assert_eq!(parse(&[("pagina", bad)]).unwrap_err().field, "pagina");
        }
        assert_eq!(parse(&[("pagina", "7")]).unwrap().page, 7);
    }

    #[test]
    fn ids_must_be_uuids() {
        assert_eq!(
            parse(&[("suscripcion_id", "x")]).unwrap_err().field,
            "suscripcion_id"
        );
        assert_eq!(
            parse(&[("instancia_id", "1")]).unwrap_err().field,
            "instancia_id"
        );
        let id = uuid::Uuid::now_v7();
        let q = parse(&[("instancia_id", &id.to_string())]).unwrap();
        assert_eq!(q.instance_id, Some(InstanceId::from_uuid(id)));
    }

    #[test]
    fn every_bad_search_parameter_is_named() {
        assert_eq!(search_field(&[("estado", "rota")]), "estado");
        assert_eq!(search_field(&[("ultimo_error", "http_x")]), "ultimo_error");
        assert_eq!(search_field(&[("app_id", "1")]), "app_id");
        assert_eq!(search_field(&[("suscripcion_id", "x")]), "suscripcion_id");
        assert_eq!(search_field(&[("instancia_id", "x")]), "instancia_id");
        assert_eq!(search_field(&[("desde", "ayer")]), "desde");
        assert_eq!(search_field(&[("hasta", "2026-13-01")]), "hasta");
        assert_eq!(
            search_field(&[
                ("desde", "2026-01-02T00:00:00Z"),
                ("hasta", "2026-01-01T00:00:00Z")
            ]),
            "hasta"
        );
        assert_eq!(search_field(&[("limite", "0")]), "limite");
        assert_eq!(search_field(&[("limite", "201")]), "limite");
        assert_eq!(search_field(&[("cursor", "abc")]), "cursor");
    }

    #[test]
    fn a_good_search_becomes_a_filter() {
        let id = DeliveryId::from_uuid(Uuid::now_v7());
        let f = parse_search(&query(&[
            ("estado", "fallida,pendiente"),
            ("ultimo_error", "http_503,timeout_agotada"),
            ("limite", "10"),
            ("cursor", &encode_cursor(id)),
        ]))
        .unwrap();
        assert_eq!(f.states, [DeliveryState::Failed, DeliveryState::Pending]);
        assert_eq!(f.last_errors, ["http_503", "timeout_agotada"]);
        assert_eq!(f.limit, 11);
        assert_eq!(f.before, Some(id));
        assert_eq!(
            parse_search(&HashMap::new()).unwrap().limit,
            DEFAULT_PER_PAGE + 1
        );
    }
}
