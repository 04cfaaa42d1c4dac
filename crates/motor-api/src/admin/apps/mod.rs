//! `/v1/admin/apps`: the apps (tenants), created and changed by the
//! operator through `motor_app::apps`; these functions adapt its wire
//! shapes and errors.

mod dto;
mod handlers;

use motor_app::apps;
use motor_domain::{operator::App, AppId};
use motor_store::Pool;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::{error::ApiError, AppState};

pub async fn create_app(pool: &Pool, input: CreateApp) -> Result<App, ApiError> {
    apps::create(pool, input.into())
        .await
        .map_err(ApiError::in_body)
}

pub async fn list_apps(pool: &Pool) -> Result<AppList, ApiError> {
    Ok(AppList {
        apps: apps::list(pool)
            .await?
            .into_iter()
            .map(Into::into)
            .collect(),
    })
}

pub async fn get_app(pool: &Pool, app: AppId) -> Result<App, ApiError> {
    Ok(apps::get(pool, app).await?)
}

pub async fn update_app(pool: &Pool, app: AppId, input: UpdateApp) -> Result<App, ApiError> {
    apps::update(pool, app, input.into())
        .await
        .map_err(ApiError::in_body)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_apps, handlers::create_app))
        .routes(routes!(handlers::get_app, handlers::update_app))
}
