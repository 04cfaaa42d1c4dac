//! One attempt of a claimed delivery: gather what it needs (settings, the
//! app's allowed destinations, the subscription's contract, signing
//! profile, live keys and broker credentials — all from the cache), make
//! it through `motor_destinations::attempt` (the same call `/test` makes),
//! and turn the report into the attempt row and outcome.

use std::time::{Duration, Instant};

use bytes::Bytes;
use motor_destinations::{attempt, Attempt as Request};
use motor_domain::delivery::Outcome;
use motor_store::deliveries::{Attempt, Claimed};

use super::{step::renew_due, Dispatcher};
use crate::Result;

/// `claimed_at`: when the claim was made (or last renewed), by this
/// process's clock.
pub(super) async fn make(
    d: &Dispatcher,
    claimed: &mut Claimed,
    claimed_at: Instant,
) -> Result<(Attempt, Outcome)> {
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
    // Opened once a version; the signer takes those live at its instant
    // (a retiring key stops signing the moment its window ends).
    let keys = d
        .cache
        .keys(
            &d.pool,
            &d.sealing,
            claimed.subscription_id,
            claimed.subscription_version,
        )
        .await?;
    for key in keys.unopened_at(chrono::Utc::now()) {
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
    // The lease must still hold when the request leaves, and for the
    // whole attempt: renewed here, right before the send, when the reads
    // above came after the claim by more than `renew_due` allows (they
    // wait for the pool on a loaded machine), or when the contract's own
    // timeout (Visito's 10 s) is longer than the operator's setting, which
    // sized the lease. A claim lost meanwhile is not sent: its lease ran
    // out, the sweeper handed the delivery on, and the lane may have moved
    // past it — a late copy of seq 1 would reach the receiver after seq 2
    // (issue 37). The record names the lease it holds, so it keeps the
    // new one.
    let setting = Duration::from_secs(settings.timeout_seconds.max(1) as u64);
    let timeout = signing
        .contract
        .spec()
        .attempt_timeout
        .map_or(setting, |own| own.max(setting));
    if timeout > setting || renew_due(claimed_at, Instant::now()) {
        match motor_store::deliveries::renew(&d.pool, claimed, timeout + super::LEASE_MARGIN)
            .await?
        {
            Some(until) => claimed.lease_until = until,
            None => return Err(crate::EngineError::Lost),
        }
    }
    let replay_of = claimed.replay_of.map(|id| id.to_string());
    let report = attempt(
        &d.destinations,
        Request {
            destination: claimed.destination.as_ref(),
            allowed: &[&settings.allowed_destinations, &app.allowed_destinations],
            policy: app.destination_policy,
            keys: keys.keys(),
            profile: signing.profile,
            contract: signing.contract,
            app_id: claimed.app_id,
            environment: signing.environment,
            delivery_id: claimed.delivery_id,
            replay: claimed.lane.replay_id().is_some(),
            replay_of: replay_of.as_deref(),
            envelope: Bytes::from(claimed.envelope.clone()),
            event_id: claimed.event_id,
            timeout_seconds: settings.timeout_seconds,
            credentials: credentials.as_ref().as_ref(),
            nats_without_jetstream: settings.nats_without_jetstream,
        },
    )
    .await;
    let outcome = report.outcome(chrono::Utc::now());
    let attempt = Attempt {
        started_at: report.started_at,
        duration: report.duration,
        status: report.status(),
        error: outcome.error(),
        key_ids: report.key_ids,
    };
    Ok((attempt, outcome))
}
