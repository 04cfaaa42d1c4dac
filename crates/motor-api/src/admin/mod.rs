//! The operator API (`/v1/admin/...`, `MOTOR_ADMIN_TOKEN`): apps, their
//! instances and API keys. The operations are plain functions so that
//! `motor admin` runs the very same code from the shell.

pub mod operator;
pub mod settings;

use axum::{
    body::Body,
    extract::{Path, State},
    http::StatusCode,
    response::IntoResponse,
    Json,
};
use motor_domain::{
    destination::DestinationPolicy,
    operator::{
        parse_destinations, parse_name, parse_scopes, ApiKeyInfo, App, CreatedKey, Instance,
    },
    AppId, FieldError, InstanceId,
};
use motor_store::{operator as store, Pool, StoreError};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    auth::Operator,
    error::ApiError,
    extract::{parse_json, path_id, read_body},
    AppState,
};

/// Most instances one key may be restricted to.
pub const MAX_KEY_INSTANCES: usize = 200;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateApp {
    #[schema(max_length = 120, pattern = "\\S")]
    pub nombre: String,
    #[serde(default)]
    #[schema(value_type = Vec<crate::openapi::DestinationEntry>)]
    pub destinos_permitidos: Vec<String>,
    /// `estandar` (default) or `publica_https`: HTTPS on port 443 to
    /// public IPv4 addresses only, checked at create and at connect.
    #[serde(default)]
    #[schema(pattern = "^(estandar|publica_https)$")]
    pub politica_destinos: Option<String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateApp {
    #[schema(max_length = 120, pattern = "\\S")]
    pub nombre: Option<String>,
    #[schema(value_type = Option<Vec<crate::openapi::DestinationEntry>>)]
    pub destinos_permitidos: Option<Vec<String>>,
    /// `estandar` or `publica_https`. Existing subscriptions are held to
    /// it at their next connection (suspended with `destino_bloqueado`
    /// when their destination no longer passes).
    #[schema(pattern = "^(estandar|publica_https)$")]
    pub politica_destinos: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInstance {
    #[schema(max_length = 120, pattern = "\\S")]
    pub nombre: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKey {
    #[schema(max_length = 120, pattern = "\\S")]
    pub nombre: String,
    #[schema(min_items = 1, value_type = Vec<crate::openapi::ScopeName>)]
    pub scopes: Vec<String>,
    #[serde(default)]
    #[schema(value_type = Vec<uuid::Uuid>)]
    pub instancias: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AppList {
    #[schema(value_type = Vec<crate::openapi::AppSchema>)]
    pub apps: Vec<App>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InstanceList {
    #[schema(value_type = Vec<crate::openapi::InstanceSchema>)]
    pub instances: Vec<Instance>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyList {
    #[schema(value_type = Vec<crate::openapi::ApiKeyInfoSchema>)]
    pub keys: Vec<ApiKeyInfo>,
}

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
        apps: store::list_apps(pool).await?,
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

pub async fn create_instance(
    pool: &Pool,
    app: AppId,
    input: CreateInstance,
) -> Result<Instance, ApiError> {
    let nombre = parse_name(&input.nombre, "body.nombre")?;
    Ok(store::create_instance(pool, app, &nombre).await?)
}

pub async fn list_instances(pool: &Pool, app: AppId) -> Result<InstanceList, ApiError> {
    store::get_app(pool, app).await?;
    Ok(InstanceList {
        instances: store::list_instances(pool, app).await?,
    })
}

pub async fn create_key(pool: &Pool, app: AppId, input: CreateKey) -> Result<CreatedKey, ApiError> {
    let nombre = parse_name(&input.nombre, "body.nombre")?;
    let scopes = parse_scopes(&input.scopes, "body.scopes")?;
    if input.instancias.len() > MAX_KEY_INSTANCES {
        return Err(FieldError::invalid(
            "body.instancias",
            format!("at most {MAX_KEY_INSTANCES} instances"),
        )
        .into());
    }
    let mut instancias: Vec<InstanceId> = Vec::with_capacity(input.instancias.len());
    for (i, raw) in input.instancias.iter().enumerate() {
        let id = raw.parse().map_err(|_| {
            FieldError::invalid(format!("body.instancias[{i}]"), "must be an instance id")
        })?;
        if !instancias.contains(&id) {
            instancias.push(id);
        }
    }
    store::get_app(pool, app).await?;
    match store::create_key(pool, app, &nombre, &scopes, &instancias).await {
        Err(StoreError::NotFound(_)) => Err(FieldError::invalid(
            "body.instancias",
            "every instance must belong to this app",
        )
        .into()),
        other => Ok(other?),
    }
}

pub async fn list_keys(pool: &Pool, app: AppId) -> Result<KeyList, ApiError> {
    store::get_app(pool, app).await?;
    Ok(KeyList {
        keys: store::list_keys(pool, app).await?,
    })
}

pub async fn revoke_key(pool: &Pool, app: AppId, key_id: &str) -> Result<(), ApiError> {
    Ok(store::revoke_key(pool, app, key_id).await?)
}

// ---- HTTP handlers --------------------------------------------------------

#[utoipa::path(post, path = "/v1/admin/apps", tag = "admin",
    security(("admin_token" = [])), request_body = CreateApp,
    responses((status = 201, body = crate::openapi::AppSchema),
              (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
async fn post_app(
    _: Operator,
    State(state): State<AppState>,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let input = parse_json(&read_body(body).await?)?;
    Ok((
        StatusCode::CREATED,
        Json(create_app(&state.pool, input).await?),
    ))
}

#[utoipa::path(get, path = "/v1/admin/apps", tag = "admin",
    security(("admin_token" = [])),
    responses((status = 200, body = AppList), (status = 401, body = crate::error::ErrorBody)))]
async fn get_apps(_: Operator, State(state): State<AppState>) -> Result<Json<AppList>, ApiError> {
    Ok(Json(list_apps(&state.pool).await?))
}

#[utoipa::path(get, path = "/v1/admin/apps/{id}", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")),
    responses((status = 200, body = crate::openapi::AppSchema),
              (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
async fn get_one_app(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<App>, ApiError> {
    Ok(Json(get_app(&state.pool, path_id(&id, "app")?).await?))
}

#[utoipa::path(patch, path = "/v1/admin/apps/{id}", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")), request_body = UpdateApp,
    responses((status = 200, body = crate::openapi::AppSchema), (status = 401, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
async fn patch_app(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<App>, ApiError> {
    let app = path_id(&id, "app")?;
    let input = parse_json(&read_body(body).await?)?;
    Ok(Json(update_app(&state.pool, app, input).await?))
}

#[utoipa::path(post, path = "/v1/admin/apps/{id}/instances", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")), request_body = CreateInstance,
    responses((status = 201, body = crate::openapi::InstanceSchema), (status = 401, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
async fn post_instance(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let app = path_id(&id, "app")?;
    let input = parse_json(&read_body(body).await?)?;
    Ok((
        StatusCode::CREATED,
        Json(create_instance(&state.pool, app, input).await?),
    ))
}

#[utoipa::path(get, path = "/v1/admin/apps/{id}/instances", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")),
    responses((status = 200, body = InstanceList), (status = 401, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody)))]
async fn get_instances(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<InstanceList>, ApiError> {
    Ok(Json(
        list_instances(&state.pool, path_id(&id, "app")?).await?,
    ))
}

#[utoipa::path(post, path = "/v1/admin/apps/{id}/keys", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")), request_body = CreateKey,
    responses((status = 201, body = crate::openapi::CreatedKeySchema), (status = 401, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
async fn post_key(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let app = path_id(&id, "app")?;
    let input = parse_json(&read_body(body).await?)?;
    Ok((
        StatusCode::CREATED,
        Json(create_key(&state.pool, app, input).await?),
    ))
}

#[utoipa::path(get, path = "/v1/admin/apps/{id}/keys", tag = "admin",
    security(("admin_token" = [])), params(("id" = String, Path, format = Uuid, description = "App id")),
    responses((status = 200, body = KeyList), (status = 401, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody)))]
async fn get_keys(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<KeyList>, ApiError> {
    Ok(Json(list_keys(&state.pool, path_id(&id, "app")?).await?))
}

#[utoipa::path(delete, path = "/v1/admin/apps/{id}/keys/{key_id}", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid, description = "App id"), ("key_id" = String, Path)),
    responses((status = 204), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
async fn delete_key(
    _: Operator,
    State(state): State<AppState>,
    Path((id, key_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    revoke_key(&state.pool, path_id(&id, "app")?, &key_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_apps, post_app))
        .routes(routes!(get_one_app, patch_app))
        .routes(routes!(get_instances, post_instance))
        .routes(routes!(get_keys, post_key))
        .routes(routes!(delete_key))
        .merge(settings::router())
        .merge(operator::router())
}
