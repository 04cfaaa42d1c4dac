//! The reconciliation report: what is stuck now, with the default
//! thresholds (what `motor doctor` prints). It does not touch alerts: the
//! sweeper role keeps those.

use motor_domain::reconcile::{Report, Thresholds};
use motor_store::{reconcile, Pool};

use crate::Result;

pub async fn report(pool: &Pool) -> Result<Report> {
    Ok(reconcile::find(pool, Thresholds::default()).await?)
}
