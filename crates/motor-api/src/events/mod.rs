//! The producer and ledger routes: `POST /v1/instances/{id}/events` appends
//! one event or a batch (`motor_app::events`: group-committed, or with its
//! `Idempotency-Key` answer in one transaction); `GET` pages through the
//! ledger. Both answer the stored envelope bytes, unchanged.

mod dto;
mod handlers;

use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(handlers::append_events, handlers::list_events))
}
