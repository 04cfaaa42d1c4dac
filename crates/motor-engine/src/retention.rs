//! Retention: `entregada` deliveries older than
//! `retencion.dias_entregados` are deleted, in batches; `fallida` ones never
//! are (they are the DLQ) and `pendiente` ones are still owed. The sweeper
//! role runs it.

use motor_store::{deliveries, Pool};

use crate::{sweeper::SweeperConfig, Result};

/// One retention pass (in batches until nothing is left); how many
/// `entregada` deliveries it deleted.
pub async fn purge_once(config: &SweeperConfig, pool: &Pool) -> Result<u64> {
    let days = motor_store::settings::load(pool).await?.dias_entregados;
    let mut total = 0;
    loop {
        let deleted = deliveries::purge_delivered(pool, days, config.batch).await?;
        total += deleted;
        if deleted < config.batch as u64 {
            return Ok(total);
        }
    }
}
