//! The body cap (seed 003): a delivery's body — the envelope — is never
//! over [`MAX_ENVELOPE_BYTES`]. The rule is applied when an event enters
//! the ledger, so the stored envelope is what every consumer gets, byte for
//! byte:
//!
//! 1. `data` whose envelope fits is kept as sent.
//! 2. Otherwise, when `data` is an object with a `metadata` key (the
//!    producer's reconciliation data), that key is dropped and
//!    `"metadata_omitted": true` added; if the envelope then fits, that is
//!    the event's `data`.
//! 3. Otherwise the request is refused: 413 naming `data`.
//!
//! The envelope's own fields are counted at their widest (a 19-digit `seq`
//! and `generation`, nanosecond timestamps), so whatever seq and instance
//! the event gets, its envelope fits.

use serde_json::Value;

use crate::{
    envelope::{Envelope, Origin, SCHEMA_VERSION},
    ids::{EventId, InstanceId},
    time,
};

/// Largest envelope (a delivery's body), in bytes: 256 KiB.
pub const MAX_ENVELOPE_BYTES: usize = 256 * 1024;

/// The key of `data` dropped first when an envelope would not fit.
pub const METADATA: &str = "metadata";
/// The key added to `data` when [`METADATA`] was dropped.
pub const METADATA_OMITTED: &str = "metadata_omitted";

/// The widest envelope around `data = null` for these fields, minus the 4
/// bytes of `null`: what the envelope adds to `data`'s compact JSON.
pub fn envelope_overhead(event_type: &str, origin: Origin, command_id: Option<&str>) -> usize {
    let widest = time::parse("9999-12-31T23:59:59.999999999Z").expect("a valid timestamp");
    let envelope = Envelope {
        schema_version: SCHEMA_VERSION,
        event_id: EventId::new(),
        instance_id: InstanceId::new(),
        seq: i64::MAX,
        event_type: event_type.to_owned(),
        occurred_at: widest,
        received_at: widest,
        generation: i64::MAX,
        origin,
        command_id: command_id.map(str::to_owned),
        data: Value::Null,
    };
    envelope.to_json().len() - "null".len()
}

/// What the cap did to one event's `data`.
#[derive(Debug, Clone, PartialEq)]
pub enum Capped {
    /// It fits as sent.
    Fits(Value),
    /// It fits without its `metadata` (now `"metadata_omitted": true`).
    MetadataOmitted(Value),
    /// It cannot fit: `size` bytes of JSON where at most `room` fit.
    TooLarge { size: usize, room: usize },
}

/// The length of `v`'s compact JSON, counted as it is written: nothing is
/// kept. Writing it into a `Vec` to take its length allocated and copied
/// the whole of `data` for every event, which the envelope's own
/// serialisation does again: 9.5 % of Motor's CPU samples for 64 KiB
/// events (docs/BENCHMARKS.md).
pub fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, v).map_or(usize::MAX, |()| count.0)
}

/// Applies the cap to `data` given the envelope's `overhead`
/// ([`envelope_overhead`]).
pub fn cap(data: Value, overhead: usize) -> Capped {
    let room = MAX_ENVELOPE_BYTES.saturating_sub(overhead);
    let full = json_len(&data);
    if full <= room {
        return Capped::Fits(data);
    }
    match data {
        Value::Object(mut obj) if obj.contains_key(METADATA) => {
            obj.remove(METADATA);
            obj.insert(METADATA_OMITTED.to_owned(), Value::Bool(true));
            let rest = Value::Object(obj);
            if json_len(&rest) <= room {
                Capped::MetadataOmitted(rest)
            } else {
                Capped::TooLarge { size: full, room }
            }
        }
        _ => Capped::TooLarge { size: full, room },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_overhead_is_the_widest_envelope() {
        let o = envelope_overhead("message.sent", Origin::Live, None);
        // {"schema_version":1,"event_id":"<36>","instance_id":"<36>",
        // "seq":<19>,"type":"message.sent","occurred_at":"<30>",...}
        assert!((300..400).contains(&o), "{o}");
        assert_eq!(
            envelope_overhead("message.sent", Origin::Live, Some("c")),
            o + r#","command_id":"c""#.len()
        );
        assert_eq!(
            envelope_overhead("message.sentx", Origin::Live, None),
            o + 1
        );
    }

    #[test]
    fn json_len_is_the_compact_json_length() {
        let data = json!({
            "text": "quote \" backslash \\ newline \n tab \t é 日本 \u{1}",
            "n": [0, -1, 1.5, 1e300, u64::MAX],
            "nested": {"empty": {}, "list": [], "null": null, "yes": true},
        });
        assert_eq!(json_len(&data), serde_json::to_vec(&data).unwrap().len());
    }

    #[test]
    fn data_that_fits_is_kept() {
        let data = json!({"metadata": {"a": 1}, "x": "y"});
        assert_eq!(cap(data.clone(), 400), Capped::Fits(data));
        // Exactly at the edge: a string's JSON is its length plus 2.
        let edge = json!("x".repeat(MAX_ENVELOPE_BYTES - 400 - 2));
        assert_eq!(cap(edge.clone(), 400), Capped::Fits(edge));
        let over = json!("x".repeat(MAX_ENVELOPE_BYTES - 400 - 1));
        assert!(
            matches!(cap(over, 400), Capped::TooLarge { room, .. } if room == MAX_ENVELOPE_BYTES - 400)
        );
    }

    #[test]
    fn metadata_goes_first_when_the_rest_fits() {
        let big = "m".repeat(10_000);
        let result = "r".repeat(MAX_ENVELOPE_BYTES - 5_000);
        let data = json!({"result": result, "metadata": {"pedido": big}});
        let Capped::MetadataOmitted(kept) = cap(data, 400) else {
            panic!("metadata should be dropped")
        };
        assert_eq!(kept["metadata_omitted"], true);
        assert!(kept.get("metadata").is_none());
        assert_eq!(kept["result"], json!(result));
        assert!(json_len(&kept) + 400 <= MAX_ENVELOPE_BYTES);
    }

    #[test]
    fn without_metadata_or_when_the_rest_is_too_big_it_is_refused() {
        let result = "r".repeat(MAX_ENVELOPE_BYTES);
        let data = json!({"result": result, "metadata": {"a": 1}});
        assert!(matches!(cap(data, 400), Capped::TooLarge { .. }));
        let no_metadata = json!({"result": "r".repeat(MAX_ENVELOPE_BYTES)});
        assert!(matches!(cap(no_metadata, 400), Capped::TooLarge { .. }));
        let array = json!(["r".repeat(MAX_ENVELOPE_BYTES)]);
        assert!(matches!(cap(array, 400), Capped::TooLarge { .. }));
    }
}
