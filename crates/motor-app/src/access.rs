//! Whose subscriptions, deliveries and replays a call may touch, and the
//! checks a subscription's fields need from the store: instances of the
//! app (and of the key), the allowed destinations, the app's catalogue of
//! event types. Every door builds an [`Access`]: an API key from its
//! principal, the operator for a whole app.

use motor_domain::{
    destination::Destination,
    principal::Principal,
    read_scope,
    subscription::{check_catalogue, Subscription, SubscriptionState},
    AppId, EventType, FieldError, InstanceId,
};
use motor_store::{operator, settings, subscriptions as store, Pool};
use sqlx::PgConnection;

use crate::{AppError, Result};

/// Who the replays of the operator are recorded as (`solicitado_por`).
pub const OPERATOR: &str = "operador";

/// Whose subscriptions a call manages: an app, and the instances a key is
/// restricted to (empty = every instance).
#[derive(Debug, Clone)]
pub struct Access {
    pub app: AppId,
    pub restriction: Vec<InstanceId>,
    /// The API key calling (`None`: the operator). A subscription it
    /// creates or changes is bound to it.
    pub key_id: Option<String>,
    /// The read scopes the calling key holds (`None`: the operator, who
    /// needs none).
    pub read_scopes: Option<Vec<String>>,
}

impl From<&Principal> for Access {
    fn from(p: &Principal) -> Self {
        Self {
            app: p.app_id,
            restriction: p.instances.clone(),
            key_id: Some(p.key_id.clone()),
            read_scopes: Some(p.read_scopes.clone()),
        }
    }
}

impl Access {
    /// The operator acting for a whole app; the app must exist (404).
    pub async fn operator(pool: &Pool, app: AppId) -> Result<Self> {
        operator::get_app(pool, app).await?;
        Ok(Self::whole_app(app))
    }

    /// A whole app, unrestricted, without checking it exists (the caller
    /// found it through one of its rows).
    pub fn whole_app(app: AppId) -> Self {
        Self {
            app,
            restriction: Vec::new(),
            key_id: None,
            read_scopes: None,
        }
    }

    /// A restricted key sees only subscriptions that name instances, all of
    /// them its own.
    pub fn check_visible(&self, sub: &Subscription) -> Result<()> {
        let visible = self.restriction.is_empty()
            || (!sub.instances.is_empty()
                && sub.instances.iter().all(|i| self.restriction.contains(i)));
        if visible {
            Ok(())
        } else {
            Err(restricted())
        }
    }

    /// Instance rules of a create or change: a restricted key must name
    /// instances, only its own (403); every instance must be the app's
    /// (422 naming the first that is not).
    pub(crate) async fn check_instances(
        &self,
        conn: &mut PgConnection,
        instancias: &[InstanceId],
    ) -> Result<()> {
        if !self.restriction.is_empty() {
            if instancias.is_empty() {
                return Err(AppError::forbidden(
                    "a key restricted to instances must name them in instancias",
                ));
            }
            if instancias.iter().any(|i| !self.restriction.contains(i)) {
                return Err(restricted());
            }
        }
        let owned = store::owned_instances(&mut *conn, self.app, instancias).await?;
        match instancias.iter().position(|i| !owned.contains(i)) {
            Some(i) => Err(FieldError::invalid(
                format!("instancias[{i}]"),
                "not an instance of this app",
            )
            .into()),
            None => Ok(()),
        }
    }
}

impl Access {
    /// Seed 001's rule: a key needs the read scope the app's catalogue
    /// maps to every type the subscription selects (`tipos`; empty = every
    /// type, so every mapped one) — 403 naming the first type it lacks.
    /// The operator needs none.
    pub(crate) async fn check_read_scopes(
        &self,
        conn: &mut PgConnection,
        tipos: &[String],
    ) -> Result<()> {
        let Some(held) = &self.read_scopes else {
            return Ok(());
        };
        let map = settings::read_scope_map_for_change(&mut *conn, self.app).await?;
        match read_scope::missing(tipos, &map, held) {
            None => Ok(()),
            Some((t, scope)) => Err(AppError::forbidden(format!(
                "the event type {t} needs the read scope {scope}, which this key lacks \
                 (permisos_lectura)"
            ))),
        }
    }
}

/// The 403 of a key restricted to other instances.
pub(crate) fn restricted() -> AppError {
    AppError::forbidden("this key is restricted to other instances")
}

/// A deleted subscription takes no more changes, tests or replays: 409.
pub(crate) fn refuse_deleted(sub: &Subscription) -> Result<()> {
    if sub.state == SubscriptionState::Deleted {
        return Err(AppError::conflict(
            "the subscription was deleted; create a new one",
        ));
    }
    Ok(())
}

/// Refuses a URL whose host is in neither the global nor the app's list,
/// or that the app's `politica_destinos` does not admit.
pub(crate) async fn check_destination(
    conn: &mut PgConnection,
    app: AppId,
    url: &Destination,
) -> Result<()> {
    let global = settings::load(&mut *conn).await?.allowed_destinations;
    let app = operator::get_app(&mut *conn, app).await?;
    app.destination_policy.check(url, "url")?;
    Ok(url.check_allowed(global.iter().chain(app.allowed_destinations.iter()), "url")?)
}

/// Every type must be in the app's catalogue, when it has one.
pub(crate) async fn check_types(
    conn: &mut PgConnection,
    app: AppId,
    tipos: &[EventType],
) -> Result<()> {
    let catalogue = settings::event_catalogue(&mut *conn, app).await?;
    Ok(check_catalogue(tipos, catalogue.as_deref())?)
}
