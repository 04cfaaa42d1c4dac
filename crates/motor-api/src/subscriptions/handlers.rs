//! The HTTP handlers of subscriptions, named by what they do; each reads
//! the request, calls the operation of the same name and answers.

use axum::{
    body::Body,
    extract::{rejection::QueryRejection, Path, Query, State},
    http::StatusCode,
    response::IntoResponse,
    Json,
};

use crate::{
    auth::Caller,
    error::ApiError,
    extract::{parse_json, path_id, read_body},
    AppState,
};

use super::*;

/// Creates a subscription; the secret is in this answer and never again.
#[utoipa::path(post, path = "/v1/subscriptions", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    request_body = CreateSubscription,
    responses(
        (status = 201, body = SubscriptionWithSecret),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn create_subscription(
    State(state): State<AppState>,
    caller: Caller,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let access = manager(&caller)?;
    let input = parse_json(&read_body(body).await?)?;
    let created = super::create_subscription(&state, &access, input).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// Lists the app's subscriptions (without secrets), oldest first.
#[utoipa::path(get, path = "/v1/subscriptions", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(ListQuery),
    responses(
        (status = 200, body = SubscriptionList),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn list_subscriptions(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<SubscriptionList>, ApiError> {
    let access = manager(&caller)?;
    let Query(query) = query.map_err(crate::extract::rejected_query)?;
    Ok(Json(
        super::list_subscriptions(&state, &access, query.estado.as_deref()).await?,
    ))
}

/// Reads one subscription (any state, `eliminada` included).
#[utoipa::path(get, path = "/v1/subscriptions/{id}", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = crate::subscriptions::SubscriptionOut),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
    ))]
pub(super) async fn get_subscription(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<SubscriptionOut>, ApiError> {
    let access = manager(&caller)?;
    let id = path_id(&id, "subscription")?;
    Ok(Json(
        super::get_subscription(&state, &access, id).await?.into(),
    ))
}

/// Changes fields, pauses or reactivates. A stale `version_esperada` is a
/// 409.
#[utoipa::path(patch, path = "/v1/subscriptions/{id}", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(("id" = String, Path, format = Uuid)),
    request_body = UpdateSubscription,
    responses(
        (status = 200, body = crate::subscriptions::SubscriptionOut),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn update_subscription(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<SubscriptionOut>, ApiError> {
    let access = manager(&caller)?;
    let id = path_id(&id, "subscription")?;
    let input = parse_json(&read_body(body).await?)?;
    Ok(Json(
        super::update_subscription(&state, &access, id, input)
            .await?
            .into(),
    ))
}

/// Deletes it: state `eliminada`, no new deliveries, pending ones not
/// sent. The row stays for audit; no event is deleted.
#[utoipa::path(delete, path = "/v1/subscriptions/{id}", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 204),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
    ))]
pub(super) async fn delete_subscription(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let access = manager(&caller)?;
    let id = path_id(&id, "subscription")?;
    super::delete_subscription(&state, &access, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Issues a new secret (shown once). The previous one keeps signing for
/// `webhooks.ventana_rotacion_minutos`, then expires.
#[utoipa::path(post, path = "/v1/subscriptions/{id}/rotate", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = SubscriptionWithSecret),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody),
    ))]
pub(super) async fn rotate_secret(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<SubscriptionWithSecret>, ApiError> {
    let access = manager(&caller)?;
    let id = path_id(&id, "subscription")?;
    Ok(Json(super::rotate_secret(&state, &access, id).await?))
}
