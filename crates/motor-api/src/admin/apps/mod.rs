//! `/v1/admin/apps`: the apps (tenants), created and changed by the
//! operator. The operations are plain functions so that `motor admin app`
//! runs the very same code.

mod dto;
mod handlers;

use motor_domain::{
    destination::DestinationPolicy,
    operator::{parse_destinations, parse_name, App},
    AppId,
};
use motor_store::{operator as store, Pool};
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{error::ApiError, AppState};

pub async fn create_app(pool: &Pool, input: CreateApp) -> Result<App, ApiError> {
    let nombre = parse_name(&input.nombre, "body.nombre")?;
    let destinos = parse_destinations(&input.destinos_permitidos, "body.destinos_permitidos")?;
    let politica = input
        .politica_destinos
        .map(|p| DestinationPolicy::parse_field(&p, "body.politica_destinos"))
        .transpose()?
        .unwrap_or_default();
    Ok(store::create_app(pool, &nombre, &destinos, politica).await?)
}

pub async fn list_apps(pool: &Pool) -> Result<AppList, ApiError> {
    Ok(AppList {
        apps: store::list_apps(pool)
            .await?
            .into_iter()
            .map(Into::into)
            .collect(),
    })
}

pub async fn get_app(pool: &Pool, app: AppId) -> Result<App, ApiError> {
    Ok(store::get_app(pool, app).await?)
}

pub async fn update_app(pool: &Pool, app: AppId, input: UpdateApp) -> Result<App, ApiError> {
    let nombre = input
        .nombre
        .map(|n| parse_name(&n, "body.nombre"))
        .transpose()?;
    let destinos = input
        .destinos_permitidos
        .map(|d| parse_destinations(&d, "body.destinos_permitidos"))
        .transpose()?;
    let politica = input
        .politica_destinos
        .map(|p| DestinationPolicy::parse_field(&p, "body.politica_destinos"))
        .transpose()?;
    Ok(store::update_app(pool, app, nombre.as_deref(), destinos.as_deref(), politica).await?)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_apps, handlers::create_app))
        .routes(routes!(handlers::get_app, handlers::update_app))
}
