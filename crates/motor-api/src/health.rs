//! Liveness, readiness and metrics.

use axum::{extract::State, http::StatusCode, response::IntoResponse, Json};
use serde_json::json;

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::AppState;

#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, body = crate::openapi::HealthOut)))]
async fn get_healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

/// Ready when Postgres answers.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, body = crate::openapi::HealthOut),
              (status = 503, body = crate::openapi::HealthOut)))]
async fn get_readyz(State(state): State<AppState>) -> impl IntoResponse {
    match sqlx::query_scalar!("SELECT 1 AS ready")
        .fetch_one(&state.pool)
        .await
    {
        Ok(_) => (StatusCode::OK, Json(json!({"status": "ok"}))),
        Err(e) => {
            tracing::warn!(error = %e, "not ready: postgres");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"status": "no_disponible", "postgres": "down"})),
            )
        }
    }
}

#[utoipa::path(get, path = "/metrics", tag = "health",
    responses((status = 200, description = "Prometheus metrics, OpenMetrics text format", content_type = "application/openmetrics-text", body = String)))]
async fn get_metrics(State(state): State<AppState>) -> impl IntoResponse {
    // Open streams are this process's own count, read as it is scraped.
    state
        .metrics
        .pipeline
        .streams_open
        .set(i64::try_from(state.streams.open()).unwrap_or(i64::MAX));
    (
        [("content-type", motor_metrics::CONTENT_TYPE)],
        state.metrics.render(),
    )
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_healthz))
        .routes(routes!(get_readyz))
        .routes(routes!(get_metrics))
}
