//! Reading the ledger: `GET /v1/instances/{id}/events?after_seq=&limit=&types=`.

use crate::{error::FieldError, event::EventType};

pub const DEFAULT_LIMIT: i64 = 100;
pub const MAX_LIMIT: i64 = 500;
pub const MAX_TYPES: usize = 20;

/// A validated page request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerQuery {
    pub after_seq: i64,
    pub limit: i64,
    pub types: Vec<EventType>,
}

impl LedgerQuery {
    /// Parses the raw query parameters (absent = default).
    pub fn parse(
        after_seq: Option<&str>,
        limit: Option<&str>,
        types: Option<&str>,
    ) -> Result<Self, FieldError> {
        let after_seq = match after_seq {
            None => 0,
            Some(s) => s
                .parse::<i64>()
                .ok()
                .filter(|n| *n >= 0)
                .ok_or_else(|| FieldError::invalid("after_seq", "must be an integer >= 0"))?,
        };
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(s) => s
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    FieldError::invalid(
                        "limit",
                        format!("must be an integer from 1 to {MAX_LIMIT}"),
                    )
                })?,
        };
        let types = match types {
            None => Vec::new(),
            Some(s) => {
                let parts: Vec<&str> = s.split(',').collect();
                if parts.len() > MAX_TYPES {
                    return Err(FieldError::invalid(
                        "types",
                        format!("at most {MAX_TYPES} types, got {}", parts.len()),
                    ));
                }
                parts
                    .into_iter()
                    .map(|t| {
                        EventType::parse(t)
                            .map_err(|m| FieldError::invalid("types", format!("{t:?}: {m}")))
                    })
                    .collect::<Result<_, _>>()?
            }
        };
        Ok(Self {
            after_seq,
            limit,
            types,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let q = LedgerQuery::parse(None, None, None).unwrap();
        assert_eq!((q.after_seq, q.limit, q.types.len()), (0, DEFAULT_LIMIT, 0));
    }

    #[test]
    fn limit_boundaries() {
        assert_eq!(LedgerQuery::parse(None, Some("1"), None).unwrap().limit, 1);
        assert_eq!(
            LedgerQuery::parse(None, Some("500"), None).unwrap().limit,
            500
        );
        for bad in ["0", "501", "-1", "x", ""] {
            assert_eq!(
                LedgerQuery::parse(None, Some(bad), None).unwrap_err().field,
                "limit"
            );
        }
    }

    #[test]
    fn after_seq_and_types() {
        assert_eq!(
            LedgerQuery::parse(Some("-1"), None, None)
                .unwrap_err()
                .field,
            "after_seq"
        );
        let q = LedgerQuery::parse(Some("7"), None, Some("a.b,c")).unwrap();
        assert_eq!(q.after_seq, 7);
        assert_eq!(
            q.types.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
            ["a.b", "c"]
        );
        let twenty = vec!["t"; 20].join(",");
        assert!(LedgerQuery::parse(None, None, Some(&twenty)).is_ok());
        let twenty_one = vec!["t"; 21].join(",");
        assert_eq!(
            LedgerQuery::parse(None, None, Some(&twenty_one))
                .unwrap_err()
                .field,
            "types"
        );
        assert_eq!(
            LedgerQuery::parse(None, None, Some("a,,b"))
                .unwrap_err()
                .field,
            "types"
        );
    }
}
