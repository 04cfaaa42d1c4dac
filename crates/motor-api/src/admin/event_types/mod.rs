//! `GET/PUT /v1/admin/apps/{id}/event-types`: an app's closed catalogue of
//! event types (`null` leaves it open).

mod dto;
mod handlers;

use motor_app::event_types;
use motor_domain::AppId;
use motor_store::Pool;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{error::ApiError, AppState};

pub use motor_app::event_types::MAX_CATALOGUE_TYPES;

pub async fn get_catalogue(pool: &Pool, app: AppId) -> Result<EventCatalogue, ApiError> {
    Ok(event_types::get(pool, app).await?.into())
}

/// Replaces the app's catalogue. Existing subscriptions' types are not
/// re-checked (a type is refused at create or change, never at delivery);
/// their bound keys' read scopes are, under a contract that cancels on
/// deactivation (`motor_app::event_types::set`).
pub async fn set_catalogue(
    pool: &Pool,
    app: AppId,
    input: EventCatalogue,
) -> Result<EventCatalogue, ApiError> {
    Ok(
        event_types::set(pool, app, input.tipos, input.permisos_lectura)
            .await
            .map_err(ApiError::in_body)?
            .into(),
    )
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(
        handlers::get_event_types,
        handlers::set_event_types
    ))
}
