//! `POST /v1/admin/subscriptions/{id}/pause` and `…/reactivate`: the
//! operator acts on any app's subscription by its id alone — the same
//! change as a PATCH of `estado` (reactivating a suspended one checks its
//! destination again, closes its alerts and releases what accumulated).

use axum::{
    extract::{Path, State},
    Json,
};
use motor_app::subscriptions as ops;
use motor_domain::subscription::{Subscription, SubscriptionId};
use uuid::Uuid;

use crate::{
    auth::Operator, error::ApiError, extract::path_id, subscriptions::SubscriptionOut, AppState,
};

/// Sets a subscription's `estado` (`activa` or `pausada`), whatever its app.
async fn set_state(state: &AppState, id: Uuid, wanted: &str) -> Result<Subscription, ApiError> {
    let id = SubscriptionId::from_uuid(id);
    // A reactivation checks the stored url again; a refusal names it
    // `body.url`, as the same change through a PATCH does.
    ops::set_state(&state.pool, &state.sealing, id, wanted)
        .await
        .map_err(ApiError::in_body)
}

/// Pauses a subscription: its deliveries wait, `pendiente`, until it is
/// reactivated.
#[utoipa::path(post, path = "/v1/admin/subscriptions/{id}/pause", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = crate::subscriptions::SubscriptionOut),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn pause_subscription(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<SubscriptionOut>, ApiError> {
    let id = path_id(&id, "subscription")?;
    Ok(Json(set_state(&state, id, "pausada").await?.into()))
}

/// Reactivates a paused or suspended subscription: a suspended one's
/// destination must pass the rules again (422 on `body.url` otherwise); its
/// alerts close and what accumulated goes out, in lane order.
#[utoipa::path(post, path = "/v1/admin/subscriptions/{id}/reactivate", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = crate::subscriptions::SubscriptionOut),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn reactivate_subscription(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<SubscriptionOut>, ApiError> {
    let id = path_id(&id, "subscription")?;
    Ok(Json(set_state(&state, id, "activa").await?.into()))
}
