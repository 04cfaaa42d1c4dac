//! The filter of an instance's command listing, validated from its raw
//! parameters: `status` (a comma list), `pagina` and `por_pagina` as the
//! delivery listing pages. Every bad parameter is a 422 naming
//! `query.<name>`; unknown parameters are ignored.

use std::collections::HashMap;

use motor_domain::{command::CommandStatus, FieldError};

use crate::{deliveries::query::bounded, parse::comma_list};

pub const DEFAULT_PER_PAGE: i64 = 50;
pub const MAX_PER_PAGE: i64 = 200;

/// `GET /v1/instances/{id}/commands`'s query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// Empty = every status.
    pub statuses: Vec<CommandStatus>,
    pub page: i64,
    pub per_page: i64,
}

impl ListQuery {
    pub fn parse(params: &HashMap<String, String>) -> Result<Self, FieldError> {
        let statuses = match params.get("status") {
            None => Vec::new(),
            Some(raw) => comma_list(
                raw,
                "status",
                "must be a comma list of aceptado, en_cola, ejecutando, enviado, completado, \
                 fallido, ambiguo, cancelado",
                CommandStatus::parse,
            )?,
        };
        Ok(Self {
            statuses,
            page: bounded(params, "pagina", 1, 1_000_000)?,
            per_page: bounded(params, "por_pagina", DEFAULT_PER_PAGE, MAX_PER_PAGE)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<ListQuery, FieldError> {
        ListQuery::parse(
            &pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn defaults_are_every_status_first_page_of_fifty() {
        let q = parse(&[]).unwrap();
        assert_eq!((q.statuses.len(), q.page, q.per_page), (0, 1, 50));
    }

    #[test]
    fn status_is_a_comma_list_of_the_seeds_statuses() {
        let q = parse(&[("status", "en_cola, cancelado")]).unwrap();
        assert_eq!(
            q.statuses,
            [CommandStatus::Queued, CommandStatus::Cancelled]
        );
        for bad in ["", "en_cola,", "pendiente", "EN_COLA", "aceptado,,fallido"] {
            assert_eq!(
                parse(&[("status", bad)]).unwrap_err().field,
                "status",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn paging_is_bounded_and_named() {
        assert_eq!(parse(&[("por_pagina", "200")]).unwrap().per_page, 200);
        assert_eq!(parse(&[("pagina", "3")]).unwrap().page, 3);
        for bad in ["0", "201", "x", ""] {
            assert_eq!(
                parse(&[("por_pagina", bad)]).unwrap_err().field,
                "por_pagina"
            );
        }
        assert_eq!(parse(&[("pagina", "0")]).unwrap_err().field, "pagina");
    }
}
