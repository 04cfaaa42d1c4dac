//! Operator settings and alerts (`MOTOR_ADMIN_TOKEN`):
//! `GET/PATCH /v1/admin/settings`, `GET /v1/admin/alerts`,
//! `POST /v1/admin/alerts/{id}/close`, and an app's closed catalogue of
//! event types (`GET/PUT /v1/admin/apps/{id}/event-types`). Per-app allowed
//! destinations live on the app itself (`PATCH /v1/admin/apps/{id}`).

use axum::{
    body::Body,
    extract::{rejection::QueryRejection, Path, Query, State},
    Json,
};
use motor_domain::{
    alert::Alert, event::EventType, settings::parse_patch, settings::Settings, AppId, FieldError,
};
use motor_store::{alerts, operator, settings as store, Pool};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    auth::Operator,
    error::ApiError,
    extract::{parse_json, path_id, read_body},
    AppState,
};

/// Most types in an app's catalogue.
pub const MAX_CATALOGUE_TYPES: usize = 1000;
/// Most alerts in one listing.
pub const MAX_ALERTS: i64 = 500;

#[derive(Debug, Serialize, ToSchema)]
pub struct AlertList {
    pub alerts: Vec<Alert>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AlertQuery {
    /// `abierta` or `cerrada`; both when absent.
    #[param(pattern = "^(abierta|cerrada)$")]
    pub estado: Option<String>,
    /// Only this app's alerts.
    #[param(format = Uuid)]
    pub app_id: Option<String>,
}

/// A settings change: any subset of the keys (documentation of the
/// `PATCH` body; the handler checks every key and range itself).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SettingsPatch {
    /// Replaces the global list: host (any port) or host:port entries.
    #[serde(rename = "webhooks.destinos_permitidos")]
    #[schema(value_type = Vec<crate::openapi::DestinationEntry>, required = false)]
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
}

/// An app's catalogue of event types: `null` = any type is accepted.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EventCatalogue {
    /// Required: `null` opens the catalogue, a list closes it.
    #[serde(deserialize_with = "present")]
    #[schema(required = true, value_type = Option<Vec<crate::openapi::EventTypeName>>)]
    pub tipos: Option<Vec<String>>,
}

/// `tipos` must be sent, `null` included (serde would read a missing
/// `Option` as `null`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Option::deserialize(d)
}

pub async fn get_settings(pool: &Pool) -> Result<Settings, ApiError> {
    Ok(store::load(pool).await?)
}

/// Validates every key first, then stores them all in one transaction.
pub async fn update_settings(pool: &Pool, body: &Value) -> Result<Settings, ApiError> {
    let changes = parse_patch(body)?;
    let mut tx = pool.begin().await?;
    store::save(&mut tx, &changes).await?;
    let settings = store::load(&mut *tx).await?;
    tx.commit().await?;
    Ok(settings)
}

pub async fn list_alerts(pool: &Pool, query: &AlertQuery) -> Result<AlertList, ApiError> {
    let abiertas = match query.estado.as_deref() {
        None => None,
        Some("abierta") => Some(true),
        Some("cerrada") => Some(false),
        Some(_) => {
            return Err(FieldError::invalid("query.estado", "must be abierta or cerrada").into())
        }
    };
    let app = query
        .app_id
        .as_deref()
        .map(|raw| {
            raw.parse::<AppId>()
                .map_err(|_| FieldError::invalid("query.app_id", "must be an app id"))
        })
        .transpose()?;
    Ok(AlertList {
        alerts: alerts::list(pool, abiertas, app, MAX_ALERTS).await?,
    })
}

pub async fn close_alert(pool: &Pool, id: uuid::Uuid) -> Result<Alert, ApiError> {
    Ok(alerts::close(pool, id).await?)
}

pub async fn get_catalogue(pool: &Pool, app: AppId) -> Result<EventCatalogue, ApiError> {
    operator::get_app(pool, app).await?;
    Ok(EventCatalogue {
        tipos: store::event_catalogue(pool, app).await?,
    })
}

/// Replaces the app's catalogue. Existing subscriptions are not re-checked:
/// a type is refused at create or change, never at delivery.
pub async fn set_catalogue(
    pool: &Pool,
    app: AppId,
    input: EventCatalogue,
) -> Result<EventCatalogue, ApiError> {
    let tipos = match input.tipos {
        None => None,
        Some(raw) => {
            if raw.len() > MAX_CATALOGUE_TYPES {
                return Err(FieldError::invalid(
                    "body.tipos",
                    format!("at most {MAX_CATALOGUE_TYPES} event types"),
                )
                .into());
            }
            let mut out: Vec<String> = Vec::with_capacity(raw.len());
            for (i, t) in raw.iter().enumerate() {
                EventType::parse(t)
                    .map_err(|m| FieldError::invalid(format!("body.tipos[{i}]"), m))?;
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
            Some(out)
        }
    };
    operator::get_app(pool, app).await?;
    store::set_event_catalogue(pool, app, tipos.as_deref()).await?;
    Ok(EventCatalogue { tipos })
}

// ---- HTTP handlers --------------------------------------------------------

/// The settings in force, defaults included.
#[utoipa::path(get, path = "/v1/admin/settings", tag = "admin",
    security(("admin_token" = [])),
    responses((status = 200, body = Settings), (status = 401, body = crate::error::ErrorBody)))]
pub(crate) async fn get_admin_settings(
    _: Operator,
    State(state): State<AppState>,
) -> Result<Json<Settings>, ApiError> {
    Ok(Json(get_settings(&state.pool).await?))
}

/// Changes any of the settings; every key is checked against its range
/// before anything is stored.
#[utoipa::path(patch, path = "/v1/admin/settings", tag = "admin",
    security(("admin_token" = [])),
    request_body = SettingsPatch,
    responses(
        (status = 200, body = Settings),
        (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn patch_admin_settings(
    _: Operator,
    State(state): State<AppState>,
    body: Body,
) -> Result<Json<Settings>, ApiError> {
    let value: Value = parse_json(&read_body(body).await?)?;
    Ok(Json(update_settings(&state.pool, &value).await?))
}

/// Alerts, newest first (at most 500).
#[utoipa::path(get, path = "/v1/admin/alerts", tag = "admin",
    security(("admin_token" = [])),
    params(AlertQuery),
    responses(
        (status = 200, body = AlertList),
        (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn get_alerts(
    _: Operator,
    State(state): State<AppState>,
    query: Result<Query<AlertQuery>, QueryRejection>,
) -> Result<Json<AlertList>, ApiError> {
    let Query(query) = query.map_err(|e| FieldError::invalid("query", e.body_text()))?;
    Ok(Json(list_alerts(&state.pool, &query).await?))
}

/// Closes an alert.
#[utoipa::path(post, path = "/v1/admin/alerts/{id}/close", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = Alert),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn post_close_alert(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Alert>, ApiError> {
    Ok(Json(
        close_alert(&state.pool, path_id(&id, "alert")?).await?,
    ))
}

/// The app's closed catalogue of event types (`null`: open).
#[utoipa::path(get, path = "/v1/admin/apps/{id}/event-types", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = EventCatalogue),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn get_event_types(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<EventCatalogue>, ApiError> {
    Ok(Json(
        get_catalogue(&state.pool, path_id(&id, "app")?).await?,
    ))
}

/// Sets the app's closed catalogue; `{"tipos": null}` opens it again.
#[utoipa::path(put, path = "/v1/admin/apps/{id}/event-types", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid)),
    request_body = EventCatalogue,
    responses(
        (status = 200, body = EventCatalogue),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn put_event_types(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<EventCatalogue>, ApiError> {
    let app = path_id(&id, "app")?;
    let input = parse_json(&read_body(body).await?)?;
    Ok(Json(set_catalogue(&state.pool, app, input).await?))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_admin_settings, patch_admin_settings))
        .routes(routes!(get_alerts))
        .routes(routes!(post_close_alert))
        .routes(routes!(get_event_types, put_event_types))
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
        let answered = serde_json::to_value(Settings::default()).unwrap();
        let answered: Vec<&str> = answered
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(answered, motor_domain::settings::KEYS);
    }
}
