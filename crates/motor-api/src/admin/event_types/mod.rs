//! `GET/PUT /v1/admin/apps/{id}/event-types`: an app's closed catalogue of
//! event types (`null` leaves it open).

mod dto;
mod handlers;

use motor_domain::{event::EventType, AppId, FieldError};
use motor_store::{operator, settings as store, Pool};
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{error::ApiError, AppState};

/// Most types in an app's catalogue.
pub const MAX_CATALOGUE_TYPES: usize = 1000;

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

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(
        handlers::get_event_types,
        handlers::set_event_types
    ))
}
