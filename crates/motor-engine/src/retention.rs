//! Retention: `entregada` deliveries older than
//! `retencion.dias_entregados` are deleted, in batches; `fallida` ones never
//! are (they are the DLQ), `cancelada` ones go as `entregada` ones (from
//! `cancelada_en`), and `pendiente` ones are still owed — except under a
//! contract with periods of its own (Visito: every finished delivery 30
//! days after its finish, cancelled ones included, `ContractSpec::retention`). Events
//! received longer ago than `retencion.dias_contenido` (when set) have
//! their `data` redacted, in small batches
//! (`motor_store::ledger::redact`). The sweeper role runs both
//! (`crate::sweeper::purge_once`, `redact_once`), giving its batch size;
//! nothing here knows the sweeper.

use motor_domain::contract::Contract;
use motor_store::{deliveries, Pool};

use crate::Result;

/// One retention pass (in batches of `batch` until nothing is left); how
/// many finished deliveries it deleted.
pub(crate) async fn purge(pool: &Pool, batch: i64) -> Result<u64> {
    let days = motor_store::settings::load(pool)
        .await?
        .delivered_retention_days;
    let mut total = 0;
    loop {
        let deleted = deliveries::purge_delivered(pool, days, batch).await?;
        total += deleted;
        if deleted < batch as u64 {
            break;
        }
    }
    for contract in Contract::ALL {
        loop {
            let deleted = deliveries::purge_contract(pool, contract, batch).await?;
            total += deleted;
            if deleted < batch as u64 {
                break;
            }
        }
        loop {
            let deleted = deliveries::purge_contract_cancelled(pool, contract, batch).await?;
            total += deleted;
            if deleted < batch as u64 {
                break;
            }
        }
    }
    Ok(total)
}

/// One content-retention pass: how many events it redacted (none when
/// `retencion.dias_contenido` is off).
pub(crate) async fn redact(pool: &Pool, batch: i64) -> Result<u64> {
    let Some(days) = motor_store::settings::load(pool)
        .await?
        .content_retention_days
    else {
        return Ok(0);
    };
    // Small batches: each is one short transaction on one instance.
    let batch = batch.min(100);
    Ok(motor_store::ledger::redact::redact_older_than(pool, days, batch).await?)
}
