//! Retention: `entregada` deliveries older than
//! `retencion.dias_entregados` are deleted, in batches; `fallida` ones never
//! are (they are the DLQ) and `pendiente` ones are still owed. Events
//! received longer ago than `retencion.dias_contenido` (when set) have
//! their `data` redacted, in small batches
//! (`motor_store::ledger::redact`). The sweeper role runs both.

use motor_store::{deliveries, Pool};

use crate::{sweeper::SweeperConfig, Result};

/// One retention pass (in batches until nothing is left); how many
/// `entregada` deliveries it deleted.
pub async fn purge_once(config: &SweeperConfig, pool: &Pool) -> Result<u64> {
    let days = motor_store::settings::load(pool)
        .await?
        .delivered_retention_days;
    let mut total = 0;
    loop {
        let deleted = deliveries::purge_delivered(pool, days, config.batch).await?;
        total += deleted;
        if deleted < config.batch as u64 {
            return Ok(total);
        }
    }
}

/// One content-retention pass: how many events it redacted (none when
/// `retencion.dias_contenido` is off).
pub async fn redact_once(config: &SweeperConfig, pool: &Pool) -> Result<u64> {
    let Some(days) = motor_store::settings::load(pool)
        .await?
        .content_retention_days
    else {
        return Ok(0);
    };
    // Small batches: each is one short transaction on one instance.
    let batch = config.batch.min(100);
    Ok(motor_store::ledger::redact::redact_older_than(pool, days, batch).await?)
}
