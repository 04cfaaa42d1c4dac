//! Operator settings: the global knobs of `/v1/admin/settings`, their
//! defaults and their ranges. Stored as one row per key; a key never set
//! reads as its default. On the wire the keys are the dotted names of the
//! contract (`webhooks.timeout_segundos`, …).

use serde_json::{Map, Value};

use crate::{destination::parse_allowed_entry, error::FieldError};

pub const ALLOWED_DESTINATIONS: &str = "webhooks.destinos_permitidos";
pub const TIMEOUT_SECONDS: &str = "webhooks.timeout_segundos";
pub const ROTATION_WINDOW_MINUTES: &str = "webhooks.ventana_rotacion_minutos";
pub const DELIVERED_RETENTION_DAYS: &str = "retencion.dias_entregados";
pub const NATS_WITHOUT_JETSTREAM: &str = "brokers.nats_sin_jetstream";
pub const STREAM_RETENTION_HOURS: &str = "streams.retencion_horas";
pub const CONTENT_RETENTION_DAYS: &str = "retencion.dias_contenido";
pub const DISABLE_AFTER_HOURS: &str = "webhooks.desactivar_tras_horas";
pub const DISABLE_AFTER_FAILURES: &str = "webhooks.desactivar_tras_fallos";
pub const KEYS_IN_FLIGHT: &str = "webhooks.claves_en_vuelo";

pub const KEYS: [&str; 10] = [
    ALLOWED_DESTINATIONS,
    TIMEOUT_SECONDS,
    ROTATION_WINDOW_MINUTES,
    DELIVERED_RETENTION_DAYS,
    NATS_WITHOUT_JETSTREAM,
    STREAM_RETENTION_HOURS,
    CONTENT_RETENTION_DAYS,
    DISABLE_AFTER_HOURS,
    DISABLE_AFTER_FAILURES,
    KEYS_IN_FLIGHT,
];

/// The range of `retencion.dias_contenido` when set (`null` = keep
/// content forever, the default).
pub const CONTENT_RETENTION_DAYS_RANGE: std::ops::RangeInclusive<i64> = 1..=3650;

/// Most entries in the global allowed-destinations list.
pub const MAX_DESTINATIONS: usize = 200;

/// (key, default, min, max) of each integer setting.
const RANGES: [(&str, i64, i64, i64); 7] = [
    (TIMEOUT_SECONDS, 10, 1, 60),
    (ROTATION_WINDOW_MINUTES, 60, 5, 1440),
    (DELIVERED_RETENTION_DAYS, 30, 1, 3650),
    (STREAM_RETENTION_HOURS, 72, 1, 720),
    (DISABLE_AFTER_HOURS, 120, 1, 720),
    (DISABLE_AFTER_FAILURES, 50, 1, 100_000),
    (KEYS_IN_FLIGHT, 32, 1, 1_000),
];

/// The settings in force; their wire and stored names are the dotted
/// [`KEYS`] (the API's `admin/settings/dto.rs` gives them their JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Hosts (any port) or host:port every app may deliver to, on top of
    /// the app's own list.
    pub allowed_destinations: Vec<String>,
    /// Timeout of one webhook attempt, 1–60 s.
    pub timeout_seconds: i64,
    /// How long a rotated-out secret keeps signing, 5–1440 min.
    pub rotation_window_minutes: i64,
    /// Days an `entregada` delivery is kept, 1–3650.
    pub delivered_retention_days: i64,
    /// Whether a NATS destination whose subject no JetStream stream
    /// captures may fall back to core NATS (fire and forget: delivered once
    /// the server has the message, with no persistence). Default `false`:
    /// such a delivery fails with `sin_stream` and is retried.
    pub nats_without_jetstream: bool,
    /// Hours a stream cursor stays resumable, 1–720: a cursor whose next
    /// event was received earlier than this is answered 410.
    pub stream_retention_hours: i64,
    /// Days an event's `data` is kept, 1–3650; `null` (the default) keeps
    /// it forever. Older events keep their seq and envelope fields with
    /// `data` = `{"motivo":"retencion","redactado":true}`.
    pub content_retention_days: Option<i64>,
    /// A subscription whose attempts have all failed for this many hours,
    /// 1–720 …
    pub disable_after_hours: i64,
    /// … and at least this many attempts in a row (1–100 000) is suspended
    /// with `fallos_sostenidos`.
    pub disable_after_failures: i64,
    /// A `clave`-ordered subscription's keys with a request in flight at
    /// once, per Motor process, 1–1000 (each key's lane still one at a
    /// time).
    pub keys_in_flight: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            allowed_destinations: Vec::new(),
            timeout_seconds: RANGES[0].1,
            rotation_window_minutes: RANGES[1].1,
            delivered_retention_days: RANGES[2].1,
            nats_without_jetstream: false,
            stream_retention_hours: RANGES[3].1,
            content_retention_days: None,
            disable_after_hours: RANGES[4].1,
            disable_after_failures: RANGES[5].1,
            keys_in_flight: RANGES[6].1,
        }
    }
}

impl Settings {
    /// Settings from stored (key, value) rows. A row that no longer passes
    /// the rules (a range narrowed by an upgrade) reads as the default.
    pub fn from_rows<'a>(rows: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Self {
        let mut s = Settings::default();
        for (key, value) in rows {
            if let Ok(Some(change)) = parse_one(key, value, "stored") {
                s.apply(&change);
            }
        }
        s
    }

    pub fn apply(&mut self, change: &Change) {
        match change {
            Change::Destinations(d) => self.allowed_destinations = d.clone(),
            Change::Bool(_, b) => self.nats_without_jetstream = *b,
            Change::OptionalInt(_, n) => self.content_retention_days = *n,
            Change::Int(key, n) => match *key {
                TIMEOUT_SECONDS => self.timeout_seconds = *n,
                ROTATION_WINDOW_MINUTES => self.rotation_window_minutes = *n,
                DELIVERED_RETENTION_DAYS => self.delivered_retention_days = *n,
                STREAM_RETENTION_HOURS => self.stream_retention_hours = *n,
                DISABLE_AFTER_HOURS => self.disable_after_hours = *n,
                DISABLE_AFTER_FAILURES => self.disable_after_failures = *n,
                KEYS_IN_FLIGHT => self.keys_in_flight = *n,
                _ => unreachable!("only known keys are parsed"),
            },
        }
    }

    /// Whether a subscription failing since `since` with `failures`
    /// attempts in a row is to be disabled at `now`: both at once.
    pub fn sustained_failure(
        &self,
        since: chrono::DateTime<chrono::Utc>,
        failures: i64,
        now: chrono::DateTime<chrono::Utc>,
    ) -> bool {
        now - since >= chrono::Duration::hours(self.disable_after_hours)
            && failures >= self.disable_after_failures
    }

    pub fn rotation_window(&self) -> chrono::Duration {
        chrono::Duration::minutes(self.rotation_window_minutes)
    }

    /// How far back a stream may resume.
    pub fn stream_window(&self) -> chrono::Duration {
        chrono::Duration::hours(self.stream_retention_hours)
    }
}

/// One validated change, ready to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Destinations(Vec<String>),
    Int(&'static str, i64),
    Bool(&'static str, bool),
    /// A whole number or `null` (off).
    OptionalInt(&'static str, Option<i64>),
}

impl Change {
    pub fn key(&self) -> &'static str {
        match self {
            Change::Destinations(_) => ALLOWED_DESTINATIONS,
            Change::Int(key, _) | Change::Bool(key, _) | Change::OptionalInt(key, _) => key,
        }
    }

    pub fn value(&self) -> Value {
        match self {
            Change::Destinations(d) => Value::from(d.clone()),
            Change::Int(_, n) => Value::from(*n),
            Change::Bool(_, b) => Value::from(*b),
            Change::OptionalInt(_, n) => n.map_or(Value::Null, Value::from),
        }
    }
}

/// Parses a `PATCH` body: an object with any of the known keys. Errors
/// name the key itself (`webhooks.timeout_segundos`).
pub fn parse_patch(body: &Value) -> Result<Vec<Change>, FieldError> {
    let Value::Object(obj) = body else {
        return Err(FieldError::invalid(
            crate::error::WHOLE_INPUT,
            "must be an object of settings",
        ));
    };
    parse_object(obj)
}

fn parse_object(obj: &Map<String, Value>) -> Result<Vec<Change>, FieldError> {
    let mut out = Vec::new();
    for (key, value) in obj {
        match parse_one(key, value, crate::error::WHOLE_INPUT)? {
            Some(change) => out.push(change),
            None => {
                return Err(FieldError::invalid(
                    key,
                    format!("unknown setting; known: {}", KEYS.join(", ")),
                ))
            }
        }
    }
    Ok(out)
}

/// `Ok(None)` for an unknown key.
fn parse_one(key: &str, value: &Value, prefix: &str) -> Result<Option<Change>, FieldError> {
    let field = crate::error::field_path(prefix, key);
    if key == ALLOWED_DESTINATIONS {
        let Value::Array(items) = value else {
            return Err(FieldError::invalid(
                field,
                "must be an array of host or host:port",
            ));
        };
        if items.len() > MAX_DESTINATIONS {
            return Err(FieldError::invalid(
                field,
                format!("at most {MAX_DESTINATIONS} entries"),
            ));
        }
        let mut out: Vec<String> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let field = format!("{field}[{i}]");
            let Value::String(s) = item else {
                return Err(FieldError::invalid(field, "must be a string"));
            };
            let entry = parse_allowed_entry(s, &field)?;
            if !out.contains(&entry) {
                out.push(entry);
            }
        }
        return Ok(Some(Change::Destinations(out)));
    }
    if key == NATS_WITHOUT_JETSTREAM {
        return match value {
            Value::Bool(b) => Ok(Some(Change::Bool(NATS_WITHOUT_JETSTREAM, *b))),
            _ => Err(FieldError::invalid(field, "must be true or false")),
        };
    }
    if key == CONTENT_RETENTION_DAYS {
        return match value {
            Value::Null => Ok(Some(Change::OptionalInt(CONTENT_RETENTION_DAYS, None))),
            v => match whole_number(v) {
                Some(n) if CONTENT_RETENTION_DAYS_RANGE.contains(&n) => {
                    Ok(Some(Change::OptionalInt(CONTENT_RETENTION_DAYS, Some(n))))
                }
                _ => Err(FieldError::invalid(
                    field,
                    format!(
                        "must be null (keep content) or a whole number from {} to {}",
                        CONTENT_RETENTION_DAYS_RANGE.start(),
                        CONTENT_RETENTION_DAYS_RANGE.end()
                    ),
                )),
            },
        };
    }
    let Some(&(key, _, min, max)) = RANGES.iter().find(|(k, ..)| *k == key) else {
        return Ok(None);
    };
    match whole_number(value) {
        Some(n) if (min..=max).contains(&n) => Ok(Some(Change::Int(key, n))),
        _ => Err(FieldError::invalid(
            field,
            format!("must be a whole number from {min} to {max}"),
        )),
    }
}

/// A JSON number with no fractional part: `57` or `57.0` (JSON does not
/// tell them apart, nor does JSON Schema's `integer`; a JavaScript client
/// or a spreadsheet export may send either).
fn whole_number(value: &Value) -> Option<i64> {
    /// Beyond 2^53 an `f64` no longer holds every whole number.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let n = value.as_number()?;
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() <= EXACT)
            .map(|f| f as i64)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(body: Value) -> String {
        parse_patch(&body).unwrap_err().field
    }

    #[test]
    fn defaults() {
        let s = Settings::default();
        assert!(s.allowed_destinations.is_empty());
        assert_eq!(
            (
                s.timeout_seconds,
                s.rotation_window_minutes,
                s.delivered_retention_days,
                s.stream_retention_hours,
                s.disable_after_hours,
                s.disable_after_failures
            ),
            (10, 60, 30, 72, 120, 50)
        );
        assert!(!s.nats_without_jetstream);
        assert_eq!(s.content_retention_days, None);
        assert_eq!(s.keys_in_flight, 32);
    }

    #[test]
    fn ranges_at_their_boundaries() {
        for (key, min, max) in [
            (TIMEOUT_SECONDS, 1, 60),
            (ROTATION_WINDOW_MINUTES, 5, 1440),
            (DELIVERED_RETENTION_DAYS, 1, 3650),
            (STREAM_RETENTION_HOURS, 1, 720),
            (DISABLE_AFTER_HOURS, 1, 720),
            (DISABLE_AFTER_FAILURES, 1, 100_000),
            (KEYS_IN_FLIGHT, 1, 1_000),
        ] {
            assert!(parse_patch(&json!({ key: min })).is_ok());
            assert!(parse_patch(&json!({ key: max })).is_ok());
            assert_eq!(field(json!({ key: min - 1 })), key);
            assert_eq!(field(json!({ key: max + 1 })), key);
            assert_eq!(field(json!({ key: "10" })), key);
            assert_eq!(field(json!({ key: 10.5 })), key);
            // A whole number written with a fraction is that number.
            assert_eq!(
                parse_patch(&json!({ key: max as f64 })).unwrap(),
                vec![Change::Int(key, max)]
            );
            assert_eq!(field(json!({ key: (max + 1) as f64 })), key);
        }
    }

    #[test]
    fn destinations_and_unknown_keys() {
        let changes =
            parse_patch(&json!({"webhooks.destinos_permitidos": ["A.io", "a.io", "b.io:8080"]}))
                .unwrap();
        assert_eq!(
            changes,
            vec![Change::Destinations(vec![
                "a.io".into(),
                "b.io:8080".into()
            ])]
        );
        assert_eq!(
            field(json!({"webhooks.destinos_permitidos": ["ok.io", "*.io"]})),
            "webhooks.destinos_permitidos[1]"
        );
        assert_eq!(
            field(json!({"webhooks.destinos_permitidos": "a.io"})),
            "webhooks.destinos_permitidos"
        );
        assert_eq!(field(json!({"webhooks.otro": 1})), "webhooks.otro");
        assert_eq!(field(json!([1])), crate::error::WHOLE_INPUT);
        assert_eq!(
            parse_patch(&json!({"brokers.nats_sin_jetstream": true})).unwrap(),
            vec![Change::Bool(NATS_WITHOUT_JETSTREAM, true)]
        );
        assert_eq!(
            field(json!({"brokers.nats_sin_jetstream": 1})),
            "brokers.nats_sin_jetstream"
        );
    }

    #[test]
    fn content_retention_is_off_or_1_to_3650_days() {
        assert_eq!(
            parse_patch(&json!({CONTENT_RETENTION_DAYS: 1})).unwrap(),
            vec![Change::OptionalInt(CONTENT_RETENTION_DAYS, Some(1))]
        );
        assert!(parse_patch(&json!({CONTENT_RETENTION_DAYS: 3650})).is_ok());
        assert_eq!(
            parse_patch(&json!({CONTENT_RETENTION_DAYS: null})).unwrap(),
            vec![Change::OptionalInt(CONTENT_RETENTION_DAYS, None)]
        );
        assert_eq!(
            parse_patch(&json!({CONTENT_RETENTION_DAYS: 7.0})).unwrap(),
            vec![Change::OptionalInt(CONTENT_RETENTION_DAYS, Some(7))]
        );
        for bad in [
            json!(0),
            json!(3651),
            json!("7"),
            json!(1.5),
            json!(-1),
            json!(1e300),
        ] {
            assert_eq!(
                field(json!({CONTENT_RETENTION_DAYS: bad})),
                CONTENT_RETENTION_DAYS
            );
        }
        let mut s = Settings::default();
        s.apply(&Change::OptionalInt(CONTENT_RETENTION_DAYS, Some(7)));
        assert_eq!(s.content_retention_days, Some(7));
        let seven = json!(7);
        assert_eq!(
            Settings::from_rows([(CONTENT_RETENTION_DAYS, &seven)]).content_retention_days,
            Some(7)
        );
    }

    #[test]
    fn sustained_failure_needs_both_the_time_and_the_count() {
        let s = Settings::default();
        let now = chrono::Utc::now();
        let h = chrono::Duration::hours;
        assert!(s.sustained_failure(now - h(120), 50, now));
        assert!(!s.sustained_failure(now - h(119), 500, now));
        assert!(!s.sustained_failure(now - h(500), 49, now));
    }

    #[test]
    fn rows_fall_back_to_defaults() {
        let good = json!(15);
        let bad = json!(0);
        let s = Settings::from_rows([(TIMEOUT_SECONDS, &good), (DELIVERED_RETENTION_DAYS, &bad)]);
        assert_eq!(s.timeout_seconds, 15);
        assert_eq!(s.delivered_retention_days, 30);
    }
}
