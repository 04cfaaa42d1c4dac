//! `GET /v1/admin/alerts` and `POST /v1/admin/alerts/{id}/close`: what
//! the engine opened when it suspended a subscription.

use crate::subscriptions::SubscriptionIdSchema;
use motor_domain::time::Timestamp;

use axum::{
    extract::{rejection::QueryRejection, Path, Query, State},
    Json,
};
use motor_domain::{alert::Alert, AppId, FieldError};
use motor_store::{alerts, Pool};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{auth::Operator, error::ApiError, extract::path_id, AppState};

/// Most alerts in one listing.
pub const MAX_ALERTS: i64 = 500;

#[derive(Debug, Serialize, ToSchema)]
pub struct AlertList {
    #[schema(value_type = Vec<AlertSchema>)]
    pub alerts: Vec<Alert>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AlertQuery {
    /// `abierta` or `cerrada`; both when absent.
    #[param(pattern = "^(abierta|cerrada)$")]
    pub estado: Option<String>,
    /// Only this app's alerts.
    #[param(format = Uuid)]
    pub app_id: Option<String>,
}

pub async fn list_alerts(pool: &Pool, query: &AlertQuery) -> Result<AlertList, ApiError> {
    let abiertas = match query.estado.as_deref() {
        None => None,
        Some("abierta") => Some(true),
        Some("cerrada") => Some(false),
        Some(_) => {
            return Err(FieldError::invalid("query.estado", "must be abierta or cerrada").into())
        }
    };
    let app = query
        .app_id
        .as_deref()
        .map(|raw| {
            raw.parse::<AppId>()
                .map_err(|_| FieldError::invalid("query.app_id", "must be an app id"))
        })
        .transpose()?;
    Ok(AlertList {
        alerts: alerts::list(pool, abiertas, app, MAX_ALERTS).await?,
    })
}

pub async fn close_alert(pool: &Pool, id: uuid::Uuid) -> Result<Alert, ApiError> {
    Ok(alerts::close(pool, id).await?)
}

/// The HTTP handlers, named like the operations they answer with.
mod handlers {
    use super::*;

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
        let Query(query) = query.map_err(|e| FieldError::invalid("query", e.body_text()))?;
        Ok(Json(super::list_alerts(&state.pool, &query).await?))
    }

    /// Closes an alert.
    #[utoipa::path(post, path = "/v1/admin/alerts/{id}/close", tag = "admin",
        security(("admin_token" = [])),
        params(("id" = String, Path, format = Uuid)),
        responses(
            (status = 200, body = crate::admin::alerts::AlertSchema),
            (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        ))]
    pub(super) async fn close_alert(
        _: Operator,
        State(state): State<AppState>,
        Path(id): Path<String>,
    ) -> Result<Json<Alert>, ApiError> {
        Ok(Json(
            super::close_alert(&state.pool, path_id(&id, "alert")?).await?,
        ))
    }
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_alerts))
        .routes(routes!(handlers::close_alert))
}

// ---- OpenAPI schemas of the domain types this resource answers with -----
//
// The domain crate knows no OpenAPI: these mirror its types field for
// field (the snapshot and drift tests compare them with real answers).

#[derive(Serialize, ToSchema)]
#[schema(as = Alert)]
pub struct AlertSchema {
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    /// `null` for an alert about the whole installation (reconciliation
    /// found the outbox behind).
    #[schema(value_type = Option<String>, format = Uuid, required = true)]
    pub app_id: Option<AppId>,
    #[schema(required = true)]
    pub suscripcion_id: Option<SubscriptionIdSchema>,
    /// What happened: a suspension `motivo` (`rechazo_401`, …), or
    /// `reconciliacion` (work that should be moving is not; closed by the
    /// engine once it moves again).
    pub motivo: String,
    pub detalle: String,
    #[schema(value_type = String, format = DateTime)]
    pub abierta_en: Timestamp,
    /// `null` while the alert is open.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub cerrada_en: Option<Timestamp>,
}
