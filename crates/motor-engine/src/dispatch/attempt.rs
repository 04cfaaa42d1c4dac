//! One attempt of a claimed delivery: gather what it needs (settings, the
//! app's allowed destinations, the subscription's contract, signing
//! profile, live keys and broker credentials — all from the cache), make
//! it through `motor_destinations::attempt` (the same call `/test` makes),
//! and turn the report into the attempt row and outcome.

use bytes::Bytes;
use motor_destinations::{attempt, Attempt as Request};
use motor_domain::{delivery::Outcome, keyring};
use motor_store::deliveries::{Attempt, Claimed};

use super::Dispatcher;
use crate::Result;

pub(super) async fn make(d: &Dispatcher, claimed: &mut Claimed) -> Result<(Attempt, Outcome)> {
    let settings = d.cache.settings(&d.pool).await?;
    let app = d.cache.app(&d.pool, claimed.app_id).await?;
    let signing = d
        .cache
        .signing(
            &d.pool,
            claimed.subscription_id,
            claimed.subscription_version,
        )
        .await?;
    // A retiring key stops signing when its window ends, even if the set
    // was read a moment before.
    let keys = keyring::open_live(
        &d.sealing,
        claimed.subscription_id,
        &signing.keys,
        chrono::Utc::now(),
    );
    for key in &keys.unopened {
        tracing::error!(key = %key, subscription = %claimed.subscription_id, "a signing key does not open");
    }
    let credentials = match &claimed.destination {
        Some(destination) if destination.is_broker() => {
            d.cache
                .credentials(
                    &d.pool,
                    &d.sealing,
                    claimed.subscription_id,
                    claimed.subscription_version,
                )
                .await?
        }
        _ => Default::default(),
    };
    // A contract whose timeout is its own (Visito's 10 s) may wait longer
    // than the lease, which the operator's setting sized: renewed first,
    // so no other process takes the delivery while it is in flight. The
    // record names the lease it holds, so it keeps the new one.
    if let Some(timeout) = signing.contract.spec().attempt_timeout {
        let setting = std::time::Duration::from_secs(settings.timeout_seconds.max(1) as u64);
        if timeout > setting {
            match motor_store::deliveries::renew(&d.pool, claimed, timeout + super::LEASE_MARGIN)
                .await?
            {
                Some(until) => claimed.lease_until = until,
                None => return Err(crate::EngineError::Lost),
            }
        }
    }
    let replay_of = claimed.replay_of.map(|id| id.to_string());
    let report = attempt(
        &d.destinations,
        Request {
            destination: claimed.destination.as_ref(),
            allowed: &[&settings.allowed_destinations, &app.allowed_destinations],
            policy: app.destination_policy,
            keys: &keys.keys,
            profile: signing.profile,
            contract: signing.contract,
            app_id: claimed.app_id,
            environment: signing.environment,
            delivery_id: claimed.delivery_id,
            replay: claimed.lane.replay_id().is_some(),
            replay_of: replay_of.as_deref(),
            envelope: Bytes::from(claimed.envelope.clone()),
            timeout_seconds: settings.timeout_seconds,
            credentials: credentials.as_ref().as_ref(),
            nats_without_jetstream: settings.nats_without_jetstream,
        },
    )
    .await;
    let outcome = report.outcome(chrono::Utc::now());
    let attempt = Attempt {
        started_at: report.started_at,
        duration_ms: report.duration_ms(),
        status: report.status(),
        error: outcome.error(),
        key_ids: report.key_ids,
    };
    Ok((attempt, outcome))
}
