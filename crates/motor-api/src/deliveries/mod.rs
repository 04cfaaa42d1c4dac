//! `/v1/deliveries` (scope `events:read`): an app's deliveries, newest
//! first, and one delivery with every attempt made for it. A key restricted
//! to instances sees only the deliveries of those instances.
//!
//! Where the contract is silent: the list answers `{entregas, pagina,
//! por_pagina, hay_mas}`; `por_pagina` defaults to 50; `key_ids` of an
//! attempt is one string, comma-separated and newest first, as the
//! `X-MW-Key-Id` header of that attempt; a delivery of an instance outside a
//! key's restriction is a 404, a filter naming such an instance a 403.

mod dto;
mod handlers;
pub mod retry;

pub use motor_app::deliveries::{ListQuery, DEFAULT_PER_PAGE, MAX_PER_PAGE};
use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_deliveries))
        .routes(routes!(handlers::get_delivery))
        .merge(retry::router())
}
