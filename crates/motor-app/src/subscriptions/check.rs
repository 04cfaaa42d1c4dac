//! The `/check` run: the receiver conformance battery
//! (`motor_destinations::check`, the same one `motor check-receiver`
//! runs) against a registered webhook subscription, rendered and signed
//! with its live keys as its deliveries are (its `contrato`; under `motor`
//! its `firma`), within its attempt timeout (the contract's, else
//! `webhooks.timeout_segundos`),
//! through a client that connects only where a delivery may (the allowed
//! destinations first, then the senders' resolver guard on the address
//! actually connected to).
//!
//! Only webhooks: the battery grades HTTP answers (401, 408, a refused
//! repeated header) that a broker never gives, so a broker subscription is
//! a conflict with what the subscription is, as a deleted one is. A
//! destination the allowed lists or the app's `politica_destinos` no
//! longer admit is refused the same way, before anything is sent.

use std::time::Duration;

use motor_destinations::{
    check::{self, CheckOptions, CheckProfile, ReceiverKey, Report},
    Destinations,
};
use motor_domain::{
    destination::Destination, keyring, seal::SealingKey, subscription::SubscriptionId,
};
use motor_store::{operator, settings, subscriptions as store, Pool};

use crate::{access::refuse_deleted, Access, AppError, Result};

/// The `type` of every event the battery sends (never in the ledger).
pub const CHECK_EVENT_TYPE: &str = "webhook.check";

/// Runs the battery against one of `access`'s webhook subscriptions.
pub async fn run(
    pool: &Pool,
    sealing: &SealingKey,
    destinations: &Destinations,
    access: &Access,
    id: SubscriptionId,
) -> Result<Report> {
    let mut conn = pool.acquire().await?;
    let sub = store::get(&mut conn, access.app, id).await?;
    access.check_visible(&sub)?;
    refuse_deleted(&sub)?;
    let config = settings::load(&mut *conn).await?;
    let app = operator::get_app(&mut *conn, access.app).await?;
    let sealed = store::live_keys(&mut *conn, id).await?;
    drop(conn);

    let destination = match Destination::parse(&sub.url, "url") {
        Ok(Destination::Webhook(url)) => Destination::Webhook(url),
        Ok(_) => {
            return Err(AppError::conflict(
                "the conformance check grades webhook receivers; this subscription \
                 publishes to a broker",
            ))
        }
        Err(_) => {
            return Err(AppError::conflict(
                "the subscription's url no longer parses; change it first",
            ))
        }
    };
    let allowed = [&config.allowed_destinations, &app.allowed_destinations];
    if !destination.is_allowed_by(allowed.iter().flat_map(|list| list.iter())) {
        return Err(AppError::conflict(
            "the subscription's host is not in the allowed destinations (destino_no_permitido)",
        ));
    }
    if app.destination_policy.check(&destination, "url").is_err() {
        return Err(AppError::conflict(
            "the app's politica_destinos does not admit the subscription's url (destino_bloqueado)",
        ));
    }

    let keys: Vec<ReceiverKey> = keyring::open_live(sealing, id, &sealed, chrono::Utc::now())
        .keys
        .into_iter()
        .map(|key| ReceiverKey {
            key_id: key.key_id,
            secret: key.secret,
        })
        .collect();
    if keys.is_empty() {
        return Err(AppError::conflict(
            "the subscription has no live signing key (sin_secreto); rotate it first",
        ));
    }
    let profile = CheckProfile::of_subscription(sub.contract, sub.signature);
    let timeout = profile
        .contract()
        .spec()
        .attempt_timeout
        .unwrap_or(Duration::from_secs(
            config.timeout_seconds.clamp(1, 60) as u64
        ));
    let options = CheckOptions {
        url: sub.url.clone(),
        profile,
        keys,
        timeout,
        effect_url: None,
        event_type: CHECK_EVENT_TYPE.into(),
        app_id: access.app,
    };
    options
        .validate()
        .map_err(|e| AppError::conflict(format!("the subscription cannot be checked: {e}")))?;
    let client = destinations.check_client(app.destination_policy.public_ipv4_only());
    Ok(check::run(&client, &options).await)
}
