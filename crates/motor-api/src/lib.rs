//! Motor's HTTP API: the producer and ledger routes for API keys, the
//! operator routes for `MOTOR_ADMIN_TOKEN`, the operator console, and health
//! and metrics. It is an adapter: a handler reads the request (auth, path,
//! JSON body, query), calls the operation of `motor-app` that does the work
//! (and owns its transaction), and answers with the resource's wire DTOs;
//! one error type ([`ApiError`], mapped from `motor_app::AppError` in one
//! `From`) answers every failure the same way.
//!
//! One folder per resource, each with its `router()` built with
//! utoipa-axum, so a route's OpenAPI entry is registered with the route:
//! `events` (append and read the ledger), `commands` (a producer's
//! commands: send, submit, read, list, cancel), `subscriptions` (manage, rotate, test — `probe` —, with the
//! validation `rules` and the operator's `admin` view), `deliveries` (list,
//! detail, manual `retry`), `replays`, `streams` (SSE and WebSocket over the
//! ledger), `executor` (claim, report, long-poll and instance state for
//! executors), `admin` (apps, instances, keys, settings, alerts, event types,
//! and the `operator` API), `console` (server-rendered operator pages), `stream_page` (the
//! example page that follows an instance in a browser),
//! `health` (`/healthz`, `/readyz`, `/metrics`). `openapi` holds only the
//! document's info, security, tags and the answers every route shares;
//! `auth` and `extract` are the extractors.
//!
//! Neighbours: `motor-app` (the operations), `motor-domain` (the types it
//! puts on the wire), `motor-store` (the ledger's live tail for streams,
//! the API-key lookups of `auth`), `motor-metrics`. Nothing below it
//! depends on it; the `motor` binary serves it.

pub mod admin;
pub mod auth;
pub mod commands;
pub mod console;
pub mod deliveries;
pub mod error;
pub mod events;
pub mod executor;
pub mod extract;
pub mod health;
pub mod openapi;
pub mod replays;
pub mod stream_page;
pub mod streams;
pub mod subscriptions;

use std::sync::Arc;

use axum::{extract::FromRef, Extension, Router};
use motor_destinations::Destinations;
use motor_domain::seal::SealingKey;
use motor_metrics::Metrics;
use motor_store::Pool;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

pub use error::ApiError;

/// Shared state of every handler.
#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    /// `None` closes the operator API.
    pub admin_token: Option<Arc<str>>,
    pub metrics: Arc<Metrics>,
    /// Seals subscription secrets (derived from `MOTOR_MASTER_KEY`).
    pub sealing: Arc<SealingKey>,
    /// The senders `/test` attempts through (the dispatcher's own kind).
    pub destinations: Destinations,
    /// Where producer requests go: the group commit, and the dispatcher
    /// and relay of this process handed first attempts and woken right
    /// after an ingest commit.
    pub ledger: motor_app::events::Ledger,
    /// Where command requests go: their group commit, which wakes the
    /// same roles as the ledger's after each commit.
    pub commands: motor_app::commands::Acceptor,
    /// The app of each instance seen (it never changes).
    pub instance_apps: Arc<auth::InstanceApps>,
    /// The API keys found lately.
    pub api_keys: Arc<auth::ApiKeys>,
    /// The event streams of this process and their live tail.
    pub streams: streams::Hub,
    /// The executor API's knobs and the bell its long-polls wait on
    /// (ring it after committing a command).
    pub executor: motor_app::executor::ExecutorState,
}

impl FromRef<AppState> for Pool {
    fn from_ref(state: &AppState) -> Pool {
        state.pool.clone()
    }
}

/// Every documented route: each resource registers its handlers with
/// `routes!`, which also files their OpenAPI operations, so the document
/// is exactly what is served.
fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(health::router())
        .merge(events::router())
        .merge(commands::router())
        .merge(streams::router())
        .merge(deliveries::router())
        .merge(admin::router())
        .merge(subscriptions::router())
        .merge(replays::router())
        .merge(executor::router())
        .merge(openapi::router())
}

/// The OpenAPI 3.1 document of every route.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    openapi::finish(api().split_for_parts().1)
}

/// The document as committed in `schemas/openapi.json`.
pub fn openapi_json() -> String {
    openapi::render(&openapi_document())
}

/// Every route of the API.
pub fn router(state: AppState) -> Router {
    let (routes, doc) = api().split_for_parts();
    let served = serde_json::to_string(&openapi::finish(doc)).expect("the document serialises");
    routes
        .merge(console::router())
        .merge(stream_page::router())
        .fallback(|| async { ApiError::NotFound("route") })
        .layer(Extension(openapi::Served(served.into())))
        .with_state(state)
}
