//! Streams (`GET /v1/instances/{id}/events/stream`): where a stream starts
//! and which events it carries. The cursor is the `seq` of the last event a
//! client received; the stream resumes with the next one.

use crate::{error::FieldError, event::EventType, ledger::LedgerQuery};

/// The two inputs a cursor comes from: the `desde` parameter and the
/// `Last-Event-ID` header a browser's `EventSource` sends on reconnect
/// (the API names them `query.desde` and `header.Last-Event-ID`).
pub const CURSOR_PARAMETER: &str = "desde";
pub const LAST_EVENT_ID: &str = "Last-Event-ID";

/// Where a stream starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// No cursor: events committed after the request.
    Now,
    /// `desde=0`: from the first event still resumable.
    FirstResumable,
    /// After this cursor (> 0), if it is still resumable.
    After(i64),
}

/// A validated stream request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamQuery {
    pub start: Start,
    /// Only these types (empty = all), at most [`crate::ledger::MAX_TYPES`].
    pub types: Vec<EventType>,
}

impl StreamQuery {
    /// Parses `?desde=`, the `Last-Event-ID` header and `?types=`. The
    /// header wins over the query: a browser's `EventSource` reconnects to
    /// the same URL (its first `desde`) with the last id it received. A
    /// `desde` that is not a cursor is refused even then: that URL's first
    /// connection was refused for it too, and a bad input gets its error.
    pub fn parse(
        desde: Option<&str>,
        last_event_id: Option<&str>,
        types: Option<&str>,
    ) -> Result<Self, FieldError> {
        let types = LedgerQuery::parse(None, None, types)?.types;
        let desde = desde
            .map(|raw| parse_cursor(raw, CURSOR_PARAMETER))
            .transpose()?;
        let start = match last_event_id {
            Some(raw) => parse_cursor(raw, LAST_EVENT_ID)?,
            None => desde.unwrap_or(Start::Now),
        };
        Ok(Self { start, types })
    }

    /// Whether an event of `event_type` goes out on this stream.
    pub fn wants(&self, event_type: &str) -> bool {
        self.types.is_empty() || self.types.iter().any(|t| t.as_str() == event_type)
    }
}

/// The name of the field a bad cursor came from, for errors found later
/// (a cursor past the last event).
pub fn cursor_field(last_event_id: Option<&str>) -> &'static str {
    if last_event_id.is_some() {
        LAST_EVENT_ID
    } else {
        CURSOR_PARAMETER
    }
}

fn parse_cursor(raw: &str, field: &str) -> Result<Start, FieldError> {
    match raw.trim().parse::<i64>() {
        Ok(0) => Ok(Start::FirstResumable),
        Ok(n) if n > 0 => Ok(Start::After(n)),
        _ => Err(FieldError::invalid(
            field,
            "must be a cursor: the seq of the last event received, an integer >= 0",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors() {
        let start = |d, h| StreamQuery::parse(d, h, None).map(|q| q.start);
        assert_eq!(start(None, None), Ok(Start::Now));
        assert_eq!(start(Some("0"), None), Ok(Start::FirstResumable));
        assert_eq!(start(Some("42"), None), Ok(Start::After(42)));
        // The header wins: EventSource keeps the first URL.
        assert_eq!(start(Some("5"), Some("42")), Ok(Start::After(42)));
        for bad in ["-1", "x", "", "1.5", "99999999999999999999"] {
            assert_eq!(start(Some(bad), None).unwrap_err().field, CURSOR_PARAMETER);
            assert_eq!(start(None, Some(bad)).unwrap_err().field, LAST_EVENT_ID);
            // The header wins over a good `desde`, not over a bad one.
            assert_eq!(
                start(Some(bad), Some("42")).unwrap_err().field,
                CURSOR_PARAMETER
            );
        }
    }

    #[test]
    fn types_as_the_ledger_api() {
        let q = StreamQuery::parse(None, None, Some("a.b,c")).unwrap();
        assert!(q.wants("a.b") && q.wants("c") && !q.wants("d"));
        assert!(StreamQuery::parse(None, None, None).unwrap().wants("any"));
        let many = vec!["t"; 21].join(",");
        assert_eq!(
            StreamQuery::parse(None, None, Some(&many))
                .unwrap_err()
                .field,
            "types"
        );
    }
}
