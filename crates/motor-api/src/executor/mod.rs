//! `/v1/executor` (scope `commands:execute`): the routes an executor —
//! the user's provider adapter — drives commands through: the long-poll
//! of an instance's claimable commands, the claim (with its lease), the
//! report of each outcome, and the instance's connection state. The
//! operations are `motor_app::executor`; see docs/COMMANDS.md.

mod dto;
mod handlers;

use utoipa_axum::{router::OpenApiRouter, routes};

pub use self::dto::*;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::poll_commands))
        .routes(routes!(handlers::claim_command))
        .routes(routes!(handlers::report_command))
        .routes(routes!(handlers::heartbeat_command))
        .routes(routes!(handlers::report_state))
}
