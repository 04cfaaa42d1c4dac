//! `GET/PUT /v1/admin/apps/{id}/event-types`: an app's closed catalogue of
//! event types (`null` leaves it open).

use axum::{
    body::Body,
    extract::{Path, State},
    Json,
};
use motor_domain::{event::EventType, AppId, FieldError};
use motor_store::{operator, settings as store, Pool};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    auth::Operator,
    error::ApiError,
    extract::{parse_json, path_id, read_body},
    AppState,
};

/// Most types in an app's catalogue.
pub const MAX_CATALOGUE_TYPES: usize = 1000;

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
pub(crate) async fn set_event_types(
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
    OpenApiRouter::new().routes(routes!(get_event_types, set_event_types))
}
