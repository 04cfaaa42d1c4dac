//! `/v1/subscriptions` (scope `subscriptions:manage`): create, list, read,
//! change, delete and rotate the secret of an app's webhook subscriptions.
//! A secret's value appears in exactly two kinds of response — create and
//! rotate — and is sealed before it reaches the store.

pub mod admin;
pub mod probe;
pub mod rules;

use motor_domain::{
    credentials::{credentials_aad, BrokerCredentials},
    seal::{secret_aad, SealingKey},
    secret::IssuedSecret,
    subscription::{
        parse_instances, parse_max_per_second, parse_signature, parse_state_patch,
        parse_subscription_name, parse_types, parse_url, NewSubscription, Subscription,
        SubscriptionId, SubscriptionState,
    },
    Scope,
};
use motor_store::{lifecycle, settings, subscriptions as store};

mod dto;
mod handlers;

pub use self::dto::{
    CreateSubscription, Credenciales, ListQuery, Secreto, SigningKeyIdSchema, SigningProfileSchema,
    SubscriptionIdSchema, SubscriptionKeySchema, SubscriptionList, SubscriptionSchema,
    SubscriptionStateSchema, SubscriptionWithSecret, SuspensionReasonSchema, UpdateSubscription,
};
pub use crate::subscriptions::rules::Access;
use crate::{
    auth::Caller,
    error::ApiError,
    extract::comma_list,
    subscriptions::rules::{check_destination, check_types, refuse_deleted},
    AppState,
};
use utoipa_axum::{router::OpenApiRouter, routes};

fn seal_credentials(key: &SealingKey, id: SubscriptionId, c: &BrokerCredentials) -> Vec<u8> {
    key.seal(&c.to_plaintext(), &credentials_aad(id.as_uuid()))
}

fn seal(key: &SealingKey, id: SubscriptionId, issued: &IssuedSecret) -> Vec<u8> {
    key.seal(
        issued.secret.expose().as_bytes(),
        &secret_aad(id.as_uuid(), issued.key_id.as_str()),
    )
}

pub async fn create_subscription(
    state: &AppState,
    access: &Access,
    input: CreateSubscription,
) -> Result<SubscriptionWithSecret, ApiError> {
    let new = NewSubscription {
        name: parse_subscription_name(&input.nombre)?,
        url: parse_url(&input.url)?,
        instances: parse_instances(&input.instancias)?,
        event_types: parse_types(&input.tipos)?,
        ordered: input.ordenado.unwrap_or(true),
        signature: input
            .firma
            .as_deref()
            .map(parse_signature)
            .transpose()?
            .unwrap_or_default(),
        max_per_second: input
            .max_por_segundo
            .map(parse_max_per_second)
            .transpose()?,
    };
    let credentials = input
        .credenciales
        .as_ref()
        .map(Credenciales::parse)
        .transpose()?;
    if let Some(c) = &credentials {
        c.check_fits(&new.url)?;
    }
    let mut tx = state.pool.begin().await?;
    access.check_instances(&mut tx, &new.instances).await?;
    check_destination(&mut tx, access.app, &new.url).await?;
    check_types(&mut tx, access.app, &new.event_types).await?;
    let id = SubscriptionId::new();
    let issued = IssuedSecret::generate();
    let sealed = seal(&state.sealing, id, &issued);
    let sealed_credentials = credentials
        .as_ref()
        .map(|c| seal_credentials(&state.sealing, id, c));
    let subscription = store::insert(
        &mut tx,
        id,
        access.app,
        &new,
        &issued.key_id,
        &sealed,
        sealed_credentials.as_deref(),
    )
    .await?;
    tx.commit().await?;
    Ok(SubscriptionWithSecret {
        suscripcion: subscription.into(),
        secreto: Secreto::from(&issued),
    })
}

pub async fn list_subscriptions(
    state: &AppState,
    access: &Access,
    estado: Option<&str>,
) -> Result<SubscriptionList, ApiError> {
    let estados = match estado {
        None => vec![
            SubscriptionState::Active,
            SubscriptionState::Paused,
            SubscriptionState::Suspended,
        ],
        Some(raw) => comma_list(
            raw,
            "query.estado",
            "must be a comma list of activa, pausada, suspendida, eliminada",
            SubscriptionState::parse,
        )?,
    };
    let mut conn = state.pool.acquire().await?;
    let all = store::list(&mut conn, access.app, &estados).await?;
    Ok(SubscriptionList {
        suscripciones: all
            .into_iter()
            .filter(|s| access.check_visible(s).is_ok())
            .map(Into::into)
            .collect(),
    })
}

pub async fn get_subscription(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
) -> Result<Subscription, ApiError> {
    let mut conn = state.pool.acquire().await?;
    let sub = store::get(&mut conn, access.app, id).await?;
    access.check_visible(&sub)?;
    Ok(sub)
}

pub async fn update_subscription(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
    input: UpdateSubscription,
) -> Result<Subscription, ApiError> {
    let name = input
        .nombre
        .as_deref()
        .map(parse_subscription_name)
        .transpose()?;
    let url = input.url.as_deref().map(parse_url).transpose()?;
    let instances = input
        .instancias
        .as_deref()
        .map(parse_instances)
        .transpose()?;
    let event_types = input.tipos.as_deref().map(parse_types).transpose()?;
    let signature = input.firma.as_deref().map(parse_signature).transpose()?;
    let max_per_second = input
        .max_por_segundo
        .map(|n| n.map(parse_max_per_second).transpose())
        .transpose()?;
    let wanted_state = input.estado.as_deref().map(parse_state_patch).transpose()?;
    let credentials = match &input.credenciales {
        None => None,
        Some(None) => Some(None),
        Some(Some(c)) => Some(Some(c.parse()?)),
    };

    let mut tx = state.pool.begin().await?;
    let current = store::lock(&mut tx, access.app, id).await?;
    access.check_visible(&current)?;
    refuse_deleted(&current)?;
    if let Some(expected) = input.version_esperada {
        if expected != current.version {
            return Err(ApiError::Conflict(format!(
                "version_esperada is {expected} but the subscription is at version {}",
                current.version
            )));
        }
    }
    let mut next = current.clone();
    if let Some(name) = name {
        next.name = name;
    }
    if let Some(url) = &url {
        check_destination(&mut tx, access.app, url).await?;
        next.url = url.as_str().to_owned();
    }
    if let Some(instances) = instances {
        access.check_instances(&mut tx, &instances).await?;
        next.instances = instances;
    }
    if let Some(event_types) = event_types {
        check_types(&mut tx, access.app, &event_types).await?;
        next.event_types = event_types.iter().map(|t| t.as_str().to_owned()).collect();
    }
    if let Some(ordered) = input.ordenado {
        next.ordered = ordered;
    }
    if let Some(signature) = signature {
        next.signature = signature;
    }
    if let Some(max) = max_per_second {
        next.max_per_second = max;
    }
    // Credentials: replaced, removed, or kept as long as the destination
    // can use them (a webhook cannot: moving to one drops them).
    let destination = parse_url(&next.url)?;
    let mut new_credentials = None;
    match &credentials {
        Some(Some(c)) => {
            c.check_fits(&destination)?;
            new_credentials = Some(Some(seal_credentials(&state.sealing, id, c)));
            next.has_credentials = true;
        }
        Some(None) => {
            new_credentials = Some(None);
            next.has_credentials = false;
        }
        None if current.has_credentials && !destination.is_broker() => {
            new_credentials = Some(None);
            next.has_credentials = false;
        }
        None => {}
    }
    if let Some(wanted_state) = wanted_state {
        if current.state == SubscriptionState::Suspended
            && wanted_state != SubscriptionState::Suspended
        {
            // Reactivating: the cause must be gone for a destination problem.
            let url = parse_url(&next.url)?;
            check_destination(&mut tx, access.app, &url).await?;
            next.reason = None;
            next.suspended_at = None;
        }
        next.state = wanted_state;
    }
    if next == current && new_credentials.is_none() {
        return Ok(current);
    }
    if let Some(sealed) = &new_credentials {
        store::set_credentials(&mut tx, id, sealed.as_deref()).await?;
    }
    let saved = store::save(&mut tx, &next).await?;
    // Reactivation's alerts, lane heads and failure streak.
    lifecycle::state_changed(&mut tx, id, current.state, saved.state).await?;
    tx.commit().await?;
    Ok(saved)
}

pub async fn delete_subscription(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
) -> Result<(), ApiError> {
    let mut tx = state.pool.begin().await?;
    let current = store::lock(&mut tx, access.app, id).await?;
    access.check_visible(&current)?;
    if current.state == SubscriptionState::Deleted {
        return Ok(());
    }
    let from = current.state;
    let mut next = current;
    next.state = SubscriptionState::Deleted;
    next.reason = None;
    next.suspended_at = None;
    store::forget_keys(&mut tx, id).await?;
    store::save(&mut tx, &next).await?;
    lifecycle::state_changed(&mut tx, id, from, next.state).await?;
    tx.commit().await?;
    Ok(())
}

pub async fn rotate_secret(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
) -> Result<SubscriptionWithSecret, ApiError> {
    let mut tx = state.pool.begin().await?;
    let current = store::lock(&mut tx, access.app, id).await?;
    access.check_visible(&current)?;
    refuse_deleted(&current)?;
    let window = settings::load(&mut *tx).await?.rotation_window();
    let issued = IssuedSecret::generate();
    let sealed = seal(&state.sealing, id, &issued);
    let subscription = store::rotate(&mut tx, &current, &issued.key_id, &sealed, window).await?;
    tx.commit().await?;
    Ok(SubscriptionWithSecret {
        suscripcion: subscription.into(),
        secreto: Secreto::from(&issued),
    })
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
        .merge(admin::router())
}

#[cfg(test)]
mod tests {
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
