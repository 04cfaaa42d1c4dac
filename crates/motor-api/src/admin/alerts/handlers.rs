//! The HTTP handlers of the alerts, named like the operations they answer
//! with.

use axum::{
    extract::{rejection::QueryRejection, Path, Query, State},
    Json,
};

use super::{AlertList, AlertOut, AlertQuery};
use crate::{auth::Operator, error::ApiError, extract::path_id, AppState};

/// Alerts, newest first (at most 500).
#[utoipa::path(get, path = "/v1/admin/alerts", tag = "admin",
    security(("admin_token" = [])),
    params(AlertQuery),
    responses(
        (status = 200, body = AlertList),
        (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn list_alerts(
    _: Operator,
    State(state): State<AppState>,
    query: Result<Query<AlertQuery>, QueryRejection>,
) -> Result<Json<AlertList>, ApiError> {
    let Query(query) = query.map_err(crate::extract::rejected_query)?;
    Ok(Json(super::list_alerts(&state.pool, &query).await?))
}

/// Closes an alert.
#[utoipa::path(post, path = "/v1/admin/alerts/{id}/close", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = crate::admin::alerts::AlertOut),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
    ))]
pub(super) async fn close_alert(
    _: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<AlertOut>, ApiError> {
    Ok(Json(
        super::close_alert(&state.pool, path_id(&id, "alert")?).await?,
    ))
}
