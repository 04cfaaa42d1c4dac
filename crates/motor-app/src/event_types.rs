//! An app's closed catalogue of event types (`None` leaves it open: any
//! type is accepted).

use motor_domain::{event::EventType, AppId, FieldError};
use motor_store::{operator, settings as store, Pool};

use crate::Result;

/// Most types in an app's catalogue.
pub const MAX_CATALOGUE_TYPES: usize = 1000;

pub async fn get(pool: &Pool, app: AppId) -> Result<Option<Vec<String>>> {
    operator::get_app(pool, app).await?;
    Ok(store::event_catalogue(pool, app).await?)
}

/// Replaces the app's catalogue (duplicates dropped, order kept).
/// Existing subscriptions are not re-checked: a type is refused at create
/// or change, never at delivery.
pub async fn set(
    pool: &Pool,
    app: AppId,
    types: Option<Vec<String>>,
) -> Result<Option<Vec<String>>> {
    let types = match types {
        None => None,
        Some(raw) => {
            if raw.len() > MAX_CATALOGUE_TYPES {
                return Err(FieldError::invalid(
                    "tipos",
                    format!("at most {MAX_CATALOGUE_TYPES} event types"),
                )
                .into());
            }
            let mut out: Vec<String> = Vec::with_capacity(raw.len());
            for (i, t) in raw.iter().enumerate() {
                EventType::parse(t).map_err(|m| FieldError::invalid(format!("tipos[{i}]"), m))?;
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
            Some(out)
        }
    };
    operator::get_app(pool, app).await?;
    store::set_event_catalogue(pool, app, types.as_deref()).await?;
    Ok(types)
}
