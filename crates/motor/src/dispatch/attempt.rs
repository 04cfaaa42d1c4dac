//! One attempt of a claimed delivery: check the destination, sign with the
//! live keys, send, and say what happened.

use std::time::Instant;

use motor_domain::{
    delivery::{AttemptResult, Outcome, TransportFailure},
    destination::WebhookUrl,
    signature::{self, SigningKey},
};
use motor_store::deliveries::{Attempt, Claimed};

use super::Dispatcher;

pub(super) async fn make(d: &Dispatcher, claimed: &Claimed) -> anyhow::Result<(Attempt, Outcome)> {
    let settings = d.cache.settings(&d.pool).await?;
    let destinations = d.cache.destinations(&d.pool, claimed.app_id).await?;
    let sealed = d
        .cache
        .keys(
            &d.pool,
            claimed.subscription_id,
            claimed.subscription_version,
        )
        .await?;

    let iniciado_en = chrono::Utc::now();
    let started = Instant::now();
    let mut key_ids = Vec::new();
    let result = send(d, claimed, &settings, &destinations, &sealed, &mut key_ids).await;
    let outcome = match &result {
        Ok(answer) => Outcome::classify(
            AttemptResult::Http {
                status: answer.status,
                retry_after: answer.retry_after.as_deref(),
            },
            chrono::Utc::now(),
        ),
        Err(failure) => Outcome::classify(AttemptResult::Transport(*failure), chrono::Utc::now()),
    };
    let attempt = Attempt {
        iniciado_en,
        duracion_ms: started.elapsed().as_millis().min(u32::MAX as u128) as u32,
        status: result.as_ref().ok().map(|a| a.status),
        error: outcome.error(),
        key_ids,
    };
    Ok((attempt, outcome))
}

async fn send(
    d: &Dispatcher,
    claimed: &Claimed,
    settings: &motor_domain::settings::Settings,
    app_destinations: &[String],
    sealed: &[motor_store::subscriptions::SealedKey],
    key_ids: &mut Vec<String>,
) -> Result<motor_destinations::webhook::Answer, TransportFailure> {
    let url = WebhookUrl::parse(&claimed.url, "url").map_err(|_| TransportFailure::BadUrl)?;
    if !url.is_allowed_by(settings.destinos_permitidos.iter().chain(app_destinations)) {
        return Err(TransportFailure::DestinationNotAllowed);
    }
    // A retiring key stops signing when its window ends, even if the set
    // was read a moment before.
    let now = chrono::Utc::now();
    let keys: Vec<SigningKey> = sealed
        .iter()
        .filter(|k| k.vence_en.is_none_or(|v| v > now))
        .filter_map(|k| {
            SigningKey::open(
                &d.sealing,
                claimed.subscription_id.as_uuid(),
                &k.key_id,
                &k.sealed,
                k.creado_en,
                k.vence_en,
            )
            .map_err(
                |e| tracing::error!(error = %e, key = %k.key_id, "a signing key does not open"),
            )
            .ok()
        })
        .collect();
    let delivery_id = claimed.delivery_id.to_string();
    let signed = signature::sign(
        &keys,
        chrono::Utc::now(),
        &delivery_id,
        claimed.envelope.as_bytes(),
    )
    .map_err(|_| TransportFailure::NoSecret)?;
    key_ids.extend(signed.key_id_list().into_iter().map(str::to_owned));
    let mut headers = vec![
        ("X-MW-Event-Id", claimed.event_id.to_string()),
        ("X-MW-Delivery-Id", delivery_id),
    ];
    headers.extend(signed.pairs().map(|(k, v)| (k, v.to_owned())));
    let timeout = std::time::Duration::from_secs(settings.timeout_segundos.clamp(1, 60) as u64);
    d.webhook
        .send(url.as_str(), timeout, &headers, claimed.envelope.clone())
        .await
}
