//! `/v1/subscriptions` (scope `subscriptions:manage`): create, list, read,
//! change, delete and rotate the secret of an app's webhook subscriptions.
//! A secret's value appears in exactly two kinds of response — create and
//! rotate — and is sealed before it reaches the store.

pub mod admin;
pub mod check;
pub mod probe;

use motor_app::subscriptions as ops;
pub use motor_app::Access;
use motor_domain::{
    subscription::{Subscription, SubscriptionId},
    Scope,
};

mod dto;
mod handlers;

pub use self::dto::{
    ContractOut, CreateSubscription, Credenciales, EnvironmentOut, ListQuery, Secreto,
    SigningKeyIdOut, SigningProfileOut, SubscriptionIdOut, SubscriptionKeyOut, SubscriptionList,
    SubscriptionOut, SubscriptionStateOut, SubscriptionWithSecret, SuspensionReasonOut,
    UpdateSubscription,
};
use crate::{auth::Caller, error::ApiError, AppState};
use utoipa_axum::{router::OpenApiRouter, routes};

pub async fn create_subscription(
    state: &AppState,
    access: &Access,
    input: CreateSubscription,
) -> Result<SubscriptionWithSecret, ApiError> {
    let created = ops::create(&state.pool, &state.sealing, access, input.into())
        .await
        .map_err(ApiError::in_body)?;
    Ok(created.into())
}

pub async fn list_subscriptions(
    state: &AppState,
    access: &Access,
    estado: Option<&str>,
) -> Result<SubscriptionList, ApiError> {
    let all = ops::list(&state.pool, access, estado)
        .await
        .map_err(ApiError::in_query)?;
    Ok(SubscriptionList {
        suscripciones: all.into_iter().map(Into::into).collect(),
    })
}

pub async fn get_subscription(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
) -> Result<Subscription, ApiError> {
    Ok(ops::get(&state.pool, access, id).await?)
}

pub async fn update_subscription(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
    input: UpdateSubscription,
) -> Result<Subscription, ApiError> {
    ops::update(&state.pool, &state.sealing, access, id, input.into())
        .await
        .map_err(ApiError::in_body)
}

pub async fn delete_subscription(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
) -> Result<(), ApiError> {
    Ok(ops::delete(&state.pool, access, id).await?)
}

pub async fn rotate_secret(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
) -> Result<SubscriptionWithSecret, ApiError> {
    let rotated = ops::rotate_secret(&state.pool, &state.sealing, access, id).await?;
    Ok(rotated.into())
}

pub(crate) fn manager(caller: &Caller) -> Result<Access, ApiError> {
    caller.require(Scope::SubscriptionsManage)?;
    Ok(Access::from(&caller.0))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(
            handlers::list_subscriptions,
            handlers::create_subscription
        ))
        .routes(routes!(
            handlers::get_subscription,
            handlers::update_subscription,
            handlers::delete_subscription
        ))
        .routes(routes!(handlers::rotate_secret))
        .merge(probe::router())
        .merge(check::router())
        .merge(admin::router())
}

#[cfg(test)]
mod tests {
    use motor_domain::secret::IssuedSecret;

    use super::*;

    #[test]
    fn debug_output_never_shows_a_secret() {
        let issued = IssuedSecret::generate();
        let secreto = Secreto::from(&issued);
        let printed = format!("{secreto:?} {issued:?}");
        assert!(!printed.contains(issued.secret.expose()), "{printed}");
        assert!(!printed.contains(&issued.secret.expose()["whsec_".len()..]));
        assert!(printed.contains(issued.key_id.as_str()));
    }
}
