//! An app's closed catalogue of event types (`None` leaves it open: any
//! type is accepted), and the read scope it may map each type to
//! (`permisos_lectura`, seed 001's permission model).

use std::collections::BTreeMap;

use motor_domain::{event::EventType, read_scope, AppId, FieldError};
use motor_store::{operator, settings as store, subscriptions, Pool};

use crate::Result;

/// Most types in an app's catalogue.
pub const MAX_CATALOGUE_TYPES: usize = 1000;

/// An app's catalogue: its types (`None`: open) and each type's read
/// scope, for the types that have one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalogue {
    pub types: Option<Vec<String>>,
    pub read_scopes: BTreeMap<String, String>,
}

pub async fn get(pool: &Pool, app: AppId) -> Result<Catalogue> {
    operator::get_app(pool, app).await?;
    Ok(Catalogue {
        types: store::event_catalogue(pool, app).await?,
        read_scopes: store::read_scope_map(pool, app).await?,
    })
}

/// Replaces the app's catalogue (duplicates dropped, order kept) and its
/// read scopes: each names a type of the catalogue (so it needs a closed
/// one), errors name `permisos_lectura.<type>`. Existing subscriptions'
/// types are not re-checked (a type is refused at create or change, never
/// at delivery), but under a contract that cancels on deactivation
/// (Visito) a subscription whose bound API key lacks a read scope the new
/// map asks for a type it selects is suspended (`clave_sin_permiso`) and
/// its pending deliveries cancelled, in the catalogue's transaction.
pub async fn set(
    pool: &Pool,
    app: AppId,
    types: Option<Vec<String>>,
    read_scopes: BTreeMap<String, String>,
) -> Result<Catalogue> {
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
    for (t, scope) in &read_scopes {
        let field = format!("{}.{t}", read_scope::FIELD);
        match &types {
            None => {
                return Err(FieldError::invalid(
                    read_scope::FIELD,
                    "read scopes need a closed catalogue: send tipos",
                )
                .into())
            }
            Some(types) if !types.contains(t) => {
                return Err(FieldError::invalid(field, "not a type of tipos").into())
            }
            Some(_) => {}
        }
        read_scope::parse(scope, &field)?;
    }
    operator::get_app(pool, app).await?;
    let mut tx = pool.begin().await?;
    store::set_event_catalogue(&mut *tx, app, types.as_deref(), &read_scopes).await?;
    subscriptions::suspend_for_under_scoped_keys(&mut tx, app, &read_scopes).await?;
    tx.commit().await?;
    Ok(Catalogue { types, read_scopes })
}
