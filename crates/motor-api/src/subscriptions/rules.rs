//! Who may manage which subscriptions, and the checks a subscription's
//! fields need from the store: instances of the app (and of the key), the
//! allowed destinations, the app's catalogue of event types. Shared by the
//! API-key routes (`subscriptions.rs`) and the operator's
//! (`admin_subscriptions.rs`).

use motor_domain::{
    destination::Destination,
    principal::Principal,
    subscription::{check_catalogue, Subscription},
    AppId, EventType, FieldError, InstanceId,
};
use motor_store::{operator, settings, subscriptions as store};
use sqlx::PgConnection;

use crate::error::ApiError;

/// Whose subscriptions a call manages: an app, and the instances a key is
/// restricted to (empty = every instance).
#[derive(Debug, Clone)]
pub struct Access {
    pub app: AppId,
    pub restriction: Vec<InstanceId>,
}

impl From<&Principal> for Access {
    fn from(p: &Principal) -> Self {
        Self {
            app: p.app_id,
            restriction: p.instances.clone(),
        }
    }
}

/// A deleted subscription takes no more changes, tests or replays: 409.
pub(crate) fn refuse_deleted(sub: &Subscription) -> Result<(), ApiError> {
    if sub.state == motor_domain::subscription::SubscriptionState::Deleted {
        return Err(ApiError::Conflict(
            "the subscription was deleted; create a new one".into(),
        ));
    }
    Ok(())
}

impl Access {
    /// A restricted key sees only subscriptions that name instances, all of
    /// them its own.
    pub(crate) fn check_visible(&self, sub: &Subscription) -> Result<(), ApiError> {
        let visible = self.restriction.is_empty()
            || (!sub.instances.is_empty()
                && sub.instances.iter().all(|i| self.restriction.contains(i)));
        if visible {
            Ok(())
        } else {
            Err(ApiError::Forbidden(
                "this key is restricted to other instances".into(),
            ))
        }
    }

    /// Instance rules of a create or change: a restricted key must name
    /// instances, only its own (403); every instance must be the app's
    /// (422 naming the first that is not).
    pub(crate) async fn check_instances(
        &self,
        conn: &mut PgConnection,
        instancias: &[InstanceId],
    ) -> Result<(), ApiError> {
        if !self.restriction.is_empty() {
            if instancias.is_empty() {
                return Err(ApiError::Forbidden(
                    "a key restricted to instances must name them in instancias".into(),
                ));
            }
            if instancias.iter().any(|i| !self.restriction.contains(i)) {
                return Err(ApiError::Forbidden(
                    "this key is restricted to other instances".into(),
                ));
            }
        }
        let owned = store::owned_instances(&mut *conn, self.app, instancias).await?;
        match instancias.iter().position(|i| !owned.contains(i)) {
            Some(i) => Err(FieldError::invalid(
                format!("body.instancias[{i}]"),
                "not an instance of this app",
            )
            .into()),
            None => Ok(()),
        }
    }
}

/// Refuses a URL whose host is in neither the global nor the app's list,
/// or that the app's `politica_destinos` does not admit.
pub(crate) async fn check_destination(
    conn: &mut PgConnection,
    app: AppId,
    url: &Destination,
) -> Result<(), ApiError> {
    let global = settings::load(&mut *conn).await?.allowed_destinations;
    let app = operator::get_app(&mut *conn, app).await?;
    app.destination_policy.check(url, "body.url")?;
    Ok(url.check_allowed(
        global.iter().chain(app.allowed_destinations.iter()),
        "body.url",
    )?)
}

pub(crate) async fn check_types(
    conn: &mut PgConnection,
    app: AppId,
    tipos: &[EventType],
) -> Result<(), ApiError> {
    let catalogue = settings::event_catalogue(&mut *conn, app).await?;
    Ok(check_catalogue(tipos, catalogue.as_deref())?)
}
