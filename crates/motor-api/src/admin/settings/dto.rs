//! The wire shapes of the settings: the answer (the settings in force, by
//! their dotted keys) and the documented `PATCH` body.

use motor_domain::settings::Settings;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A settings change: any subset of the keys (documentation of the
/// `PATCH` body; the handler checks every key and range itself).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SettingsPatch {
    /// Replaces the global list: host (any port) or host:port entries.
    #[serde(rename = "webhooks.destinos_permitidos")]
    #[schema(value_type = Vec<crate::openapi::GlobalDestinationEntry>, required = false)]
    pub destinos_permitidos: Option<Vec<String>>,
    #[serde(rename = "webhooks.timeout_segundos")]
    #[schema(value_type = i64, required = false, minimum = 1, maximum = 60)]
    pub timeout_segundos: Option<i64>,
    #[serde(rename = "webhooks.ventana_rotacion_minutos")]
    #[schema(value_type = i64, required = false, minimum = 5, maximum = 1440)]
    pub ventana_rotacion_minutos: Option<i64>,
    #[serde(rename = "retencion.dias_entregados")]
    #[schema(value_type = i64, required = false, minimum = 1, maximum = 3650)]
    pub dias_entregados: Option<i64>,
    /// Lets a NATS subject no JetStream stream captures fall back to core
    /// NATS (delivered once the server has it; no persistence).
    #[serde(rename = "brokers.nats_sin_jetstream")]
    #[schema(value_type = bool, required = false)]
    pub nats_sin_jetstream: Option<bool>,
    /// Hours a stream cursor stays resumable (`?desde=`, `Last-Event-ID`).
    #[serde(rename = "streams.retencion_horas")]
    #[schema(value_type = i64, required = false, minimum = 1, maximum = 720)]
    pub retencion_horas_streams: Option<i64>,
    /// Days an event's `data` is kept; older events keep their seq and
    /// envelope fields with `data` = `{"motivo":"retencion","redactado":true}`.
    /// `null` (the default) keeps content forever.
    #[serde(rename = "retencion.dias_contenido")]
    #[schema(minimum = 1, maximum = 3650, nullable)]
    pub dias_contenido: Option<i64>,
    /// Disabling on sustained failure: hours every attempt must have
    /// failed (together with `webhooks.desactivar_tras_fallos`).
    #[serde(rename = "webhooks.desactivar_tras_horas")]
    #[schema(value_type = i64, required = false, minimum = 1, maximum = 720)]
    pub desactivar_tras_horas: Option<i64>,
    /// Disabling on sustained failure: failed attempts in a row (together
    /// with `webhooks.desactivar_tras_horas`).
    #[serde(rename = "webhooks.desactivar_tras_fallos")]
    #[schema(value_type = i64, required = false, minimum = 1, maximum = 100000)]
    pub desactivar_tras_fallos: Option<i64>,
    /// A `clave`-ordered subscription's keys with a request in flight at
    /// once, per Motor process (each key still one at a time): with N
    /// processes dispatching, up to N × this.
    #[serde(rename = "webhooks.claves_en_vuelo")]
    #[schema(value_type = i64, required = false, minimum = 1, maximum = 1000)]
    pub claves_en_vuelo: Option<i64>,
}

// The settings in force, by their dotted keys. (A plain comment: a doc
// comment would become the schema's description in the OpenAPI document.)
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Settings)]
pub struct SettingsOut {
    /// Hosts (any port) or host:port every app may deliver to, on top of
    /// the app's own list.
    #[serde(rename = "webhooks.destinos_permitidos")]
    pub destinos_permitidos: Vec<String>,
    /// Timeout of one webhook attempt, 1–60 s.
    #[serde(rename = "webhooks.timeout_segundos")]
    pub timeout_segundos: i64,
    /// How long a rotated-out secret keeps signing, 5–1440 min.
    #[serde(rename = "webhooks.ventana_rotacion_minutos")]
    pub ventana_rotacion_minutos: i64,
    /// Days an `entregada` delivery is kept, 1–3650.
    #[serde(rename = "retencion.dias_entregados")]
    pub dias_entregados: i64,
    /// Whether a NATS destination whose subject no JetStream stream
    /// captures may fall back to core NATS (fire and forget: delivered once
    /// the server has the message, with no persistence). Default `false`:
    /// such a delivery fails with `sin_stream` and is retried.
    #[serde(rename = "brokers.nats_sin_jetstream")]
    pub nats_sin_jetstream: bool,
    /// Hours a stream cursor stays resumable, 1–720: a cursor whose next
    /// event was received earlier than this is answered 410.
    #[serde(rename = "streams.retencion_horas")]
    pub retencion_horas_streams: i64,
    /// Days an event's `data` is kept, 1–3650; `null` (the default) keeps
    /// it forever. Older events keep their seq and envelope fields with
    /// `data` = `{"motivo":"retencion","redactado":true}`.
    #[serde(rename = "retencion.dias_contenido")]
    pub dias_contenido: Option<i64>,
    /// A subscription whose attempts have all failed for this many hours,
    /// 1–720 …
    #[serde(rename = "webhooks.desactivar_tras_horas")]
    pub desactivar_tras_horas: i64,
    /// … and at least this many attempts in a row (1–100 000) is suspended
    /// with `fallos_sostenidos`.
    #[serde(rename = "webhooks.desactivar_tras_fallos")]
    pub desactivar_tras_fallos: i64,
    /// A `clave`-ordered subscription's keys with a request in flight at
    /// once, per Motor process, 1–1000 (default 32): with N processes
    /// dispatching, up to N × this; each key's lane still sends one
    /// delivery at a time, globally.
    #[serde(rename = "webhooks.claves_en_vuelo")]
    pub claves_en_vuelo: i64,
}

impl From<Settings> for SettingsOut {
    fn from(s: Settings) -> Self {
        Self {
            destinos_permitidos: s.allowed_destinations,
            timeout_segundos: s.timeout_seconds,
            ventana_rotacion_minutos: s.rotation_window_minutes,
            dias_entregados: s.delivered_retention_days,
            nats_sin_jetstream: s.nats_without_jetstream,
            retencion_horas_streams: s.stream_retention_hours,
            dias_contenido: s.content_retention_days,
            desactivar_tras_horas: s.disable_after_hours,
            desactivar_tras_fallos: s.disable_after_failures,
            claves_en_vuelo: s.keys_in_flight,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_patch_has_every_setting() {
        let schema =
            serde_json::to_value(<SettingsPatch as utoipa::PartialSchema>::schema()).unwrap();
        let documented: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(documented, motor_domain::settings::KEYS);
        let answered = serde_json::to_value(SettingsOut::from(Settings::default())).unwrap();
        let answered: Vec<&str> = answered
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(answered, motor_domain::settings::KEYS);
    }
}
