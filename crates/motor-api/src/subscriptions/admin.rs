//! The operator manages an app's subscriptions too (the docs: "Un operador
//! también puede crear y administrar las suscripciones de tu app"):
//! `/v1/admin/apps/{id}/subscriptions[/{id}[/rotate|/test]]` with
//! `MOTOR_ADMIN_TOKEN`, the same operations and answers as
//! `/v1/subscriptions`, with no instance restriction.

use axum::{
    body::Body,
    extract::{rejection::QueryRejection, Path, Query, State},
    http::StatusCode,
    response::IntoResponse,
    Json,
};
use motor_domain::AppId;

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    auth::Operator,
    error::ApiError,
    extract::{parse_json, path_id, read_body},
    subscriptions::probe::{self, TestResult},
    subscriptions::{
        self as subs, Access, ListQuery, SubscriptionList, SubscriptionOut, SubscriptionWithSecret,
    },
    AppState,
};

/// The operator acts for a whole app; the app must exist.
async fn access(state: &AppState, raw: &str) -> Result<Access, ApiError> {
    let app: AppId = path_id(raw, "app")?;
    Ok(Access::operator(&state.pool, app).await?)
}

/// Creates a subscription for the app; the secret is shown once.
#[utoipa::path(post, path = "/v1/admin/apps/{id}/subscriptions", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid, description = "App id")),
    request_body = subs::CreateSubscription,
    responses(
        (status = 201, body = SubscriptionWithSecret),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn create_app_subscription(
    _: Operator,
    State(state): State<AppState>,
    Path(app): Path<String>,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let access = access(&state, &app).await?;
    let input = parse_json(&read_body(body).await?)?;
    let created = subs::create_subscription(&state, &access, input).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// Lists the app's subscriptions.
#[utoipa::path(get, path = "/v1/admin/apps/{id}/subscriptions", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid, description = "App id"), ListQuery),
    responses(
        (status = 200, body = SubscriptionList),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn list_app_subscriptions(
    _: Operator,
    State(state): State<AppState>,
    Path(app): Path<String>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<SubscriptionList>, ApiError> {
    let access = access(&state, &app).await?;
    let Query(query) = query.map_err(crate::extract::rejected_query)?;
    Ok(Json(
        subs::list_subscriptions(&state, &access, query.estado.as_deref()).await?,
    ))
}

/// Reads one of the app's subscriptions.
#[utoipa::path(get, path = "/v1/admin/apps/{id}/subscriptions/{sid}", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid, description = "App id"), ("sid" = String, Path, format = Uuid, description = "Subscription id")),
    responses(
        (status = 200, body = crate::subscriptions::SubscriptionOut),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn get_app_subscription(
    _: Operator,
    State(state): State<AppState>,
    Path((app, id)): Path<(String, String)>,
) -> Result<Json<SubscriptionOut>, ApiError> {
    let access = access(&state, &app).await?;
    let id = path_id(&id, "subscription")?;
    Ok(Json(
        subs::get_subscription(&state, &access, id).await?.into(),
    ))
}

/// Changes, pauses or reactivates one of the app's subscriptions.
#[utoipa::path(patch, path = "/v1/admin/apps/{id}/subscriptions/{sid}", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid, description = "App id"), ("sid" = String, Path, format = Uuid, description = "Subscription id")),
    request_body = subs::UpdateSubscription,
    responses(
        (status = 200, body = crate::subscriptions::SubscriptionOut),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn update_app_subscription(
    _: Operator,
    State(state): State<AppState>,
    Path((app, id)): Path<(String, String)>,
    body: Body,
) -> Result<Json<SubscriptionOut>, ApiError> {
    let access = access(&state, &app).await?;
    let id = path_id(&id, "subscription")?;
    let input = parse_json(&read_body(body).await?)?;
    Ok(Json(
        subs::update_subscription(&state, &access, id, input)
            .await?
            .into(),
    ))
}

/// Deletes one of the app's subscriptions (state `eliminada`).
#[utoipa::path(delete, path = "/v1/admin/apps/{id}/subscriptions/{sid}", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid, description = "App id"), ("sid" = String, Path, format = Uuid, description = "Subscription id")),
    responses(
        (status = 204),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn delete_app_subscription(
    _: Operator,
    State(state): State<AppState>,
    Path((app, id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let access = access(&state, &app).await?;
    let id = path_id(&id, "subscription")?;
    subs::delete_subscription(&state, &access, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Rotates the secret of one of the app's subscriptions.
#[utoipa::path(post, path = "/v1/admin/apps/{id}/subscriptions/{sid}/rotate", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid, description = "App id"), ("sid" = String, Path, format = Uuid, description = "Subscription id")),
    responses(
        (status = 200, body = SubscriptionWithSecret),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn rotate_app_secret(
    _: Operator,
    State(state): State<AppState>,
    Path((app, id)): Path<(String, String)>,
) -> Result<Json<SubscriptionWithSecret>, ApiError> {
    let access = access(&state, &app).await?;
    let id = path_id(&id, "subscription")?;
    Ok(Json(subs::rotate_secret(&state, &access, id).await?))
}

/// Sends a signed `webhook.test` for one of the app's subscriptions.
#[utoipa::path(post, path = "/v1/admin/apps/{id}/subscriptions/{sid}/test", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid, description = "App id"), ("sid" = String, Path, format = Uuid, description = "Subscription id")),
    responses(
        (status = 200, body = TestResult),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn send_app_test(
    _: Operator,
    State(state): State<AppState>,
    Path((app, id)): Path<(String, String)>,
) -> Result<Json<TestResult>, ApiError> {
    let access = access(&state, &app).await?;
    let id = path_id(&id, "subscription")?;
    Ok(Json(probe::test_subscription(&state, &access, id).await?))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_app_subscriptions, create_app_subscription))
        .routes(routes!(
            get_app_subscription,
            update_app_subscription,
            delete_app_subscription
        ))
        .routes(routes!(rotate_app_secret))
        .routes(routes!(send_app_test))
}
