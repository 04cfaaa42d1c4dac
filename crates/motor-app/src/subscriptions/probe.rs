//! The `/test` attempt: one signed `webhook.test` to the subscription's
//! URL (or broker: published like a delivery), outside the ledger. It is
//! the dispatcher's own attempt (`motor_destinations::attempt`) — same
//! body shape and headers under the subscription's contract, signed with
//! the live keys, no redirects, the contract's timeout, at most 4 KB of
//! the answer read, the address actually connected to checked — so the
//! test tests what production does.

use std::time::Duration;

use bytes::Bytes;
use motor_destinations::{attempt, Attempt, Destinations};
use motor_domain::{
    credentials::{credentials_aad, BrokerCredentials},
    delivery::{DeliveryId, Outcome},
    destination::Destination,
    envelope::{Envelope, SCHEMA_VERSION},
    keyring,
    seal::SealingKey,
    subscription::SubscriptionId,
    time, EventId, InstanceId, Origin,
};
use motor_store::{operator, settings, subscriptions as store, Pool};

use crate::{access::refuse_deleted, Access, Result};

/// The type of the test event.
pub const TEST_EVENT_TYPE: &str = "webhook.test";

/// How the destination took the test, read as a delivery's attempt is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReport {
    /// Delivered (a 2xx, or the broker's confirmation).
    pub ok: bool,
    /// The receiver's HTTP status, or the broker's confirmation as one.
    pub status: Option<u16>,
    pub duration: Duration,
    /// The sanitised error code (`http_500`, `timeout`, …) when not `ok`.
    pub error: Option<String>,
}

/// Sends the test for one of `access`'s subscriptions (not a deleted one).
pub async fn test(
    pool: &Pool,
    sealing: &SealingKey,
    destinations: &Destinations,
    access: &Access,
    id: SubscriptionId,
) -> Result<ProbeReport> {
    let mut conn = pool.acquire().await?;
    let sub = store::get(&mut conn, access.app, id).await?;
    access.check_visible(&sub)?;
    refuse_deleted(&sub)?;
    let config = settings::load(&mut *conn).await?;
    let app = operator::get_app(&mut *conn, access.app).await?;
    let sealed = store::live_keys(&mut *conn, id).await?;
    let sealed_credentials = store::sealed_credentials(&mut *conn, id).await?;
    let instances = operator::list_instances(&mut *conn, access.app).await?;
    drop(conn);

    let destination = Destination::parse(&sub.url, "url").ok();
    let keys = keyring::open_live(sealing, id, &sealed, chrono::Utc::now());
    let credentials = sealed_credentials.and_then(|sealed| {
        let plain = sealing.open(&sealed, &credentials_aad(id.as_uuid())).ok()?;
        BrokerCredentials::from_plaintext(&plain)
    });
    for key in &keys.unopened {
        tracing::error!(key = %key, subscription = %id, "a signing key does not open");
    }

    // The test event: covered by the subscription, never in the ledger
    // (seq 0, a fresh event id).
    let instance = sub
        .instances
        .first()
        .and_then(|i| instances.iter().find(|x| x.id == *i))
        .or_else(|| instances.first());
    let now = time::now_millis();
    let envelope = Envelope {
        schema_version: SCHEMA_VERSION,
        event_id: EventId::new(),
        instance_id: instance.map_or(InstanceId::from_uuid(uuid::Uuid::nil()), |i| i.id),
        seq: 0,
        event_type: TEST_EVENT_TYPE.into(),
        occurred_at: now,
        received_at: now,
        generation: instance.map_or(1, |i| i.generation),
        origin: Origin::Operator,
        command_id: None,
        data: serde_json::json!({"prueba": true}),
    };
    let delivery_id = DeliveryId::from_uuid(uuid::Uuid::now_v7());
    let report = attempt(
        destinations,
        Attempt {
            destination: destination.as_ref(),
            allowed: &[&config.allowed_destinations, &app.allowed_destinations],
            policy: app.destination_policy,
            keys: &keys.keys,
            profile: sub.signature,
            contract: sub.contract,
            app_id: access.app,
            environment: sub.environment,
            delivery_id,
            replay: false,
            replay_of: None,
            envelope: Bytes::from(envelope.to_json()),
            event_id: envelope.event_id,
            timeout_seconds: config.timeout_seconds,
            credentials: credentials.as_ref(),
            nats_without_jetstream: config.nats_without_jetstream,
        },
    )
    .await;
    // Read as a delivery's attempt is: the same sanitised codes.
    let outcome = report.outcome(chrono::Utc::now());
    Ok(ProbeReport {
        ok: outcome == Outcome::Delivered,
        status: report.status(),
        duration: report.duration,
        error: outcome.error().map(|e| e.to_string()),
    })
}
