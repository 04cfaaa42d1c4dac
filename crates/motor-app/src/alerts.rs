//! The alerts the engine opened when it suspended a subscription.

use motor_domain::{alert::Alert, AppId, FieldError};
use motor_store::{alerts, Pool};

use crate::Result;

/// Most alerts in one listing.
pub const MAX_ALERTS: i64 = 500;

/// Alerts, newest first: `state` is `abierta`, `cerrada` or absent (both);
/// `app` an app id or absent (every app).
pub async fn list(pool: &Pool, state: Option<&str>, app: Option<&str>) -> Result<Vec<Alert>> {
    let open = match state {
        None => None,
        Some("abierta") => Some(true),
        Some("cerrada") => Some(false),
        Some(_) => return Err(FieldError::invalid("estado", "must be abierta or cerrada").into()),
    };
    let app = app
        .map(|raw| {
            raw.parse::<AppId>()
                .map_err(|_| FieldError::invalid("app_id", "must be an app id"))
        })
        .transpose()?;
    Ok(alerts::list(pool, open, app, MAX_ALERTS).await?)
}

pub async fn close(pool: &Pool, id: uuid::Uuid) -> Result<Alert> {
    Ok(alerts::close(pool, id).await?)
}

/// The newest `limit` alerts of every app, open ones only when `open` is
/// `Some(true)`, closed ones when `Some(false)` (the console's lists).
pub async fn newest(pool: &Pool, open: Option<bool>, limit: i64) -> Result<Vec<Alert>> {
    Ok(alerts::list(pool, open, None, limit.clamp(1, MAX_ALERTS)).await?)
}
