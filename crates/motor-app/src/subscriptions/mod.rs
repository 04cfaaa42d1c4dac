//! An app's subscriptions: create, list, read, change, delete and rotate
//! the secret, for a key (`Access` from its principal) or the operator.
//! A secret's value leaves in exactly two answers — create and rotate —
//! and is sealed before it reaches the store. `probe` sends the `/test`
//! attempt.

pub mod check;
pub mod operator;
pub mod probe;

use std::fmt;

use motor_domain::{
    contract::{render::ENVIRONMENT_FIELD, Environment, Ordering},
    credentials::{credentials_aad, BrokerCredentials},
    seal::{secret_aad, SealingKey},
    secret::IssuedSecret,
    subscription::{
        parse_contract, parse_instances, parse_max_per_second, parse_ordering, parse_signature,
        parse_state_patch, parse_subscription_name, parse_types, parse_url, NewSubscription,
        Subscription, SubscriptionId, SubscriptionState,
    },
    FieldError,
};
use motor_store::{
    lifecycle,
    operator_view::{self, OpSubscription},
    settings, subscriptions as store, Pool,
};

use crate::{
    access::{check_destination, check_types, refuse_deleted},
    parse::comma_list,
    Access, AppError, Result,
};

/// A new subscription as a caller sends it (raw text, checked here).
#[derive(Debug, Clone, Default)]
pub struct NewSubscriptionInput {
    pub name: String,
    pub url: String,
    /// Instance ids; empty = every instance of the app.
    pub instances: Vec<String>,
    /// Event types; empty = every type.
    pub types: Vec<String>,
    /// `ordenado`, the older boolean: `true` = `instancia`, `false` =
    /// `ninguno`.
    pub ordered: Option<bool>,
    /// `orden`: `instancia`, `clave` or `ninguno`; with neither, the
    /// contract's default ordering.
    pub ordering: Option<String>,
    /// `mw-v1` (default), `t-v1` or `standard-webhooks`.
    pub signature: Option<String>,
    /// `motor`, `visito`, `asixto` or `standard-webhooks`; absent = the
    /// app's `contrato`.
    pub contract: Option<String>,
    /// `live` (default) or `test`: the events it receives.
    pub environment: Option<String>,
    pub credentials: Option<RawCredentials>,
    pub max_per_second: Option<i64>,
}

/// A change: what is `None` stays. `credentials` and `max_per_second`
/// tell removal (`Some(None)`) from keeping (`None`).
#[derive(Debug, Clone, Default)]
pub struct SubscriptionChange {
    pub name: Option<String>,
    pub url: Option<String>,
    pub instances: Option<Vec<String>>,
    pub types: Option<Vec<String>>,
    pub ordered: Option<bool>,
    pub ordering: Option<String>,
    pub signature: Option<String>,
    pub contract: Option<String>,
    /// Fixed at creation: only the subscription's own is accepted.
    pub environment: Option<String>,
    /// `activa` or `pausada`.
    pub state: Option<String>,
    /// The version the change is based on; another one is a conflict.
    pub expected_version: Option<i64>,
    pub credentials: Option<Option<RawCredentials>>,
    pub max_per_second: Option<Option<i64>>,
}

/// A broker login as sent: `user` and `password`, or `token`.
#[derive(Clone, Default)]
pub struct RawCredentials {
    pub user: Option<String>,
    pub password: Option<String>,
    pub token: Option<String>,
}

impl fmt::Debug for RawCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawCredentials")
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "[REDACTED]"))
            .field("token", &self.token.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

impl RawCredentials {
    fn parse(&self) -> Result<BrokerCredentials, FieldError> {
        BrokerCredentials::parse(
            self.user.as_deref(),
            self.password.as_deref(),
            self.token.as_deref(),
        )
    }
}

/// A subscription with the secret just issued for it (shown once).
#[derive(Debug)]
pub struct WithSecret {
    pub subscription: Subscription,
    pub secret: IssuedSecret,
}

fn seal_credentials(key: &SealingKey, id: SubscriptionId, c: &BrokerCredentials) -> Vec<u8> {
    key.seal(&c.to_plaintext(), &credentials_aad(id.as_uuid()))
}

fn seal(key: &SealingKey, id: SubscriptionId, issued: &IssuedSecret) -> Vec<u8> {
    key.seal(
        issued.secret.expose().as_bytes(),
        &secret_aad(id.as_uuid(), issued.key_id.as_str()),
    )
}

pub async fn create(
    pool: &Pool,
    sealing: &SealingKey,
    access: &Access,
    input: NewSubscriptionInput,
) -> Result<WithSecret> {
    let contract = input.contract.as_deref().map(parse_contract).transpose()?;
    // The ordering is checked before the default is known.
    parse_ordering(
        input.ordering.as_deref(),
        input.ordered,
        None,
        Ordering::Instance,
    )?;
    let mut new = NewSubscription {
        name: parse_subscription_name(&input.name)?,
        url: parse_url(&input.url)?,
        instances: parse_instances(&input.instances)?,
        event_types: parse_types(&input.types)?,
        ordering: Ordering::Instance,
        signature: input
            .signature
            .as_deref()
            .map(parse_signature)
            .transpose()?
            .unwrap_or_default(),
        contract,
        environment: input
            .environment
            .as_deref()
            .map(Environment::parse)
            .transpose()?
            .unwrap_or_default(),
        max_per_second: input.max_per_second.map(parse_max_per_second).transpose()?,
    };
    let credentials = input
        .credentials
        .as_ref()
        .map(RawCredentials::parse)
        .transpose()?;
    if let Some(c) = &credentials {
        c.check_fits(&new.url)?;
    }
    let mut tx = pool.begin().await?;
    let contract = match new.contract {
        Some(c) => c,
        None => store::app_contract(&mut *tx, access.app).await?,
    };
    new.ordering = parse_ordering(
        input.ordering.as_deref(),
        input.ordered,
        None,
        contract.spec().ordering,
    )?;
    access.check_instances(&mut tx, &new.instances).await?;
    check_destination(&mut tx, access.app, &new.url).await?;
    check_types(&mut tx, access.app, &new.event_types).await?;
    let selected: Vec<String> = new
        .event_types
        .iter()
        .map(|t| t.as_str().to_owned())
        .collect();
    access.check_read_scopes(&mut tx, &selected).await?;
    let id = SubscriptionId::new();
    let issued = IssuedSecret::generate();
    let sealed = seal(sealing, id, &issued);
    let sealed_credentials = credentials
        .as_ref()
        .map(|c| seal_credentials(sealing, id, c));
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
    if let Some(key) = &access.key_id {
        store::bind_key(&mut tx, id, key).await?;
    }
    tx.commit().await?;
    Ok(WithSecret {
        subscription,
        secret: issued,
    })
}

/// The subscriptions `access` sees, oldest first; `states` is a comma list
/// of states, absent = every state but `eliminada`.
pub async fn list(pool: &Pool, access: &Access, states: Option<&str>) -> Result<Vec<Subscription>> {
    let states = match states {
        None => vec![
            SubscriptionState::Active,
            SubscriptionState::Paused,
            SubscriptionState::Suspended,
        ],
        Some(raw) => comma_list(
            raw,
            "estado",
            "must be a comma list of activa, pausada, suspendida, eliminada",
            SubscriptionState::parse,
        )?,
    };
    let mut conn = pool.acquire().await?;
    let all = store::list(&mut conn, access.app, &states).await?;
    Ok(all
        .into_iter()
        .filter(|s| access.check_visible(s).is_ok())
        .collect())
}

pub async fn get(pool: &Pool, access: &Access, id: SubscriptionId) -> Result<Subscription> {
    let mut conn = pool.acquire().await?;
    let sub = store::get(&mut conn, access.app, id).await?;
    access.check_visible(&sub)?;
    Ok(sub)
}

/// Changes fields, pauses or reactivates, with every consequence of the
/// state change (`motor_store::lifecycle`) in the same transaction.
pub async fn update(
    pool: &Pool,
    sealing: &SealingKey,
    access: &Access,
    id: SubscriptionId,
    input: SubscriptionChange,
) -> Result<Subscription> {
    let name = input
        .name
        .as_deref()
        .map(parse_subscription_name)
        .transpose()?;
    let url = input.url.as_deref().map(parse_url).transpose()?;
    let instances = input
        .instances
        .as_deref()
        .map(parse_instances)
        .transpose()?;
    let event_types = input.types.as_deref().map(parse_types).transpose()?;
    let signature = input
        .signature
        .as_deref()
        .map(parse_signature)
        .transpose()?;
    let contract = input.contract.as_deref().map(parse_contract).transpose()?;
    let environment = input
        .environment
        .as_deref()
        .map(Environment::parse)
        .transpose()?;
    let max_per_second = input
        .max_per_second
        .map(|n| n.map(parse_max_per_second).transpose())
        .transpose()?;
    let wanted_state = input.state.as_deref().map(parse_state_patch).transpose()?;
    let credentials = match &input.credentials {
        None => None,
        Some(None) => Some(None),
        Some(Some(c)) => Some(Some(c.parse()?)),
    };

    let mut tx = pool.begin().await?;
    let current = store::lock(&mut tx, access.app, id).await?;
    access.check_visible(&current)?;
    refuse_deleted(&current)?;
    if let Some(expected) = input.expected_version {
        if expected != current.version {
            return Err(AppError::Conflict(format!(
                "version_esperada is {expected} but the subscription is at version {}",
                current.version
            )));
        }
    }
    // Its deliveries are of events of its environment: moving it would
    // send them to the other one.
    if environment.is_some_and(|e| e != current.environment) {
        return Err(FieldError::invalid(
            ENVIRONMENT_FIELD,
            format!(
                "is fixed at creation (this subscription's is {}); create another subscription \
                 for the other environment",
                current.environment.as_str()
            ),
        )
        .into());
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
    next.ordering = parse_ordering(
        input.ordering.as_deref(),
        input.ordered,
        Some(current.ordering),
        current.ordering,
    )?;
    if let Some(signature) = signature {
        next.signature = signature;
    }
    // Its deliveries take the new shape at their next attempt; each keeps
    // the retry ladder it started with.
    if let Some(contract) = contract {
        next.contract = contract;
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
            new_credentials = Some(Some(seal_credentials(sealing, id, c)));
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
    // Changing it binds it to the calling key, which needs the read scope
    // of every type it selects, as at creation (seed 001).
    access.check_read_scopes(&mut tx, &next.event_types).await?;
    if let Some(sealed) = &new_credentials {
        store::set_credentials(&mut tx, id, sealed.as_deref()).await?;
    }
    let saved = store::save(&mut tx, &next).await?;
    if let Some(key) = &access.key_id {
        store::bind_key(&mut tx, id, key).await?;
    }
    // Reactivation's alerts, lane heads and failure streak.
    lifecycle::state_changed(&mut tx, &saved, current.state, current.reason).await?;
    tx.commit().await?;
    Ok(saved)
}

/// State `eliminada`: no new deliveries, pending ones not sent, its keys
/// forgotten. The row stays for audit. Deleting twice is not an error.
pub async fn delete(pool: &Pool, access: &Access, id: SubscriptionId) -> Result<()> {
    let mut tx = pool.begin().await?;
    let current = store::lock(&mut tx, access.app, id).await?;
    access.check_visible(&current)?;
    if current.state == SubscriptionState::Deleted {
        return Ok(());
    }
    let (from, from_reason) = (current.state, current.reason);
    let mut next = current;
    next.state = SubscriptionState::Deleted;
    next.reason = None;
    next.suspended_at = None;
    store::forget_keys(&mut tx, id).await?;
    let saved = store::save(&mut tx, &next).await?;
    lifecycle::state_changed(&mut tx, &saved, from, from_reason).await?;
    tx.commit().await?;
    Ok(())
}

/// Issues a new secret; the previous one keeps signing for
/// `webhooks.ventana_rotacion_minutos`.
pub async fn rotate_secret(
    pool: &Pool,
    sealing: &SealingKey,
    access: &Access,
    id: SubscriptionId,
) -> Result<WithSecret> {
    let mut tx = pool.begin().await?;
    let current = store::lock(&mut tx, access.app, id).await?;
    access.check_visible(&current)?;
    refuse_deleted(&current)?;
    let window = settings::load(&mut *tx).await?.rotation_window();
    let issued = IssuedSecret::generate();
    let sealed = seal(sealing, id, &issued);
    let subscription = store::rotate(&mut tx, &current, &issued.key_id, &sealed, window).await?;
    tx.commit().await?;
    Ok(WithSecret {
        subscription,
        secret: issued,
    })
}

/// The operator sets a subscription's `estado` (`activa` or `pausada`)
/// by its id alone, whatever its app: the same change as an update.
pub async fn set_state(
    pool: &Pool,
    sealing: &SealingKey,
    id: SubscriptionId,
    wanted: &str,
) -> Result<Subscription> {
    let access = operator::access(pool, id).await?;
    let change = SubscriptionChange {
        state: Some(wanted.to_owned()),
        ..Default::default()
    };
    update(pool, sealing, &access, id, change).await
}

/// Every subscription of every app with its backlog, for the operator's
/// console.
pub async fn overview(pool: &Pool) -> Result<Vec<OpSubscription>> {
    Ok(operator_view::subscriptions(pool).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_a_secret_or_credentials() {
        let issued = IssuedSecret::generate();
        let printed = format!("{issued:?}");
        assert!(!printed.contains(issued.secret.expose()), "{printed}");
        let raw = RawCredentials {
            user: Some("ana".into()),
            password: Some("s3creto".into()),
            token: Some("tok3n".into()),
        };
        let printed = format!("{raw:?}");
        assert!(printed.contains("ana"));
        assert!(
            !printed.contains("s3creto") && !printed.contains("tok3n"),
            "{printed}"
        );
    }
}
