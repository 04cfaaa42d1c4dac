//! The producer's command routes (scopes `commands:write`,
//! `commands:read`): `POST /v1/instances/{id}/messages` (a send) and
//! `POST /v1/instances/{id}/commands` (any other kind) answer 202 with the
//! command once it is committed; `GET /v1/commands/{id}`,
//! `GET /v1/instances/{id}/commands` and `POST /v1/commands/{id}/cancel`.
//! The work is `motor_app::commands`'.
//!
//! Where the contract is silent: a repeat with the same `Idempotency-Key`
//! answers 202 again with the stored command as it is now (as a replay's
//! repeat does), with `Location: /v1/commands/{id}` like the first; the
//! listing answers `{commands, pagina, por_pagina, hay_mas}` and pages as
//! deliveries do; a cancel answers 200 with the cancelled command.

mod dto;
mod handlers;

use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::send_message))
        .routes(routes!(handlers::submit_command, handlers::list_commands))
        .routes(routes!(handlers::get_command))
        .routes(routes!(handlers::cancel_command))
}
