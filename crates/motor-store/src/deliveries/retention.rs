//! Retention: finished deliveries deleted (with their attempts) once
//! their period passed, the setting's ([`purge_delivered`]) or a
//! contract's own ([`purge_contract`], [`purge_contract_cancelled`]).
//! `fallida` rows are the DLQ: only a contract's own period deletes them.

use std::time::Duration;

use motor_domain::contract::{Contract, Retention};
use sqlx::{Acquire, Postgres};

use super::by_key;
use crate::{interval, Result};

/// Retention: deletes up to `limit` `entregada` deliveries (with their
/// attempts) delivered more than `days` days ago, except those of
/// subscriptions whose contract keeps its own period ([`purge_contract`]),
/// and up to `limit` `cancelada` ones cancelled that long ago, except
/// those of subscriptions whose contract keeps its own period for them
/// ([`purge_contract_cancelled`]). `fallida` rows are never deleted here — they are the DLQ —
/// and `pendiente` ones are still owed. Returns how many were deleted.
///
/// Oldest first, from `deliveries_delivered`, then each by its primary
/// key: a pass reads what it deletes, however many rows are pending or
/// failed.
///
/// Its transaction turns sequential and bitmap scans off
/// ([`super::BY_KEY_SETUP`]).
pub async fn purge_delivered<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    days: i64,
    limit: i64,
) -> Result<u64> {
    let days = i32::try_from(days).unwrap_or(i32::MAX);
    let own = |period: fn(&Retention) -> Option<Duration>| -> Vec<&'static str> {
        Contract::ALL
            .into_iter()
            .filter(|c| period(&c.spec().retention).is_some())
            .map(Contract::as_str)
            .collect()
    };
    let own_delivered = own(|r| r.delivered);
    let own_cancelled = own(|r| r.cancelled);
    let mut tx = db.begin().await?;
    by_key(&mut tx).await?;
    let deleted = sqlx::query_file_scalar!(
        "src/deliveries/sql/purge_delivered.sql",
        days,
        limit,
        &own_delivered as &[&str]
    )
    .fetch_one(&mut *tx)
    .await?;
    // `cancelada` rows are finished the same way, from `cancelada_en`.
    let cancelled = sqlx::query_file_scalar!(
        "src/deliveries/sql/purge_cancelled.sql",
        days,
        limit,
        &own_cancelled as &[&str]
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(u64::try_from(deleted + cancelled).unwrap_or(0))
}

/// Retention of a contract that keeps its own periods
/// (`ContractSpec::retention`; Visito: 30 days after any finish): deletes
/// up to `limit` finished deliveries of its subscriptions, with their
/// attempts — `entregada` ones delivered longer ago than its `delivered`
/// period, `fallida` ones finished longer ago than its `failed` one (a
/// period it leaves to the operator, `None`, deletes nothing here: the
/// setting's pass and the DLQ's rule apply). Returns how many were
/// deleted.
pub async fn purge_contract<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    contract: Contract,
    limit: i64,
) -> Result<u64> {
    let retention = contract.spec().retention;
    if retention.delivered.is_none() && retention.failed.is_none() {
        return Ok(0);
    }
    // `None`: a period no row can pass.
    let never = interval(Duration::from_secs(1_000 * 365 * 24 * 3600));
    let period = |d: Option<Duration>| d.map_or(never, interval);
    let mut tx = db.begin().await?;
    by_key(&mut tx).await?;
    let deleted = sqlx::query_file_scalar!(
        "src/deliveries/sql/purge_contract.sql",
        contract.as_str(),
        period(retention.delivered),
        period(retention.failed),
        limit,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(u64::try_from(deleted).unwrap_or(0))
}

/// Retention of the `cancelada` rows of a contract that keeps its own
/// period for them (`Retention::cancelled`; Visito: 30 days after
/// `cancelada_en`): deletes up to `limit` of its subscriptions' cancelled
/// deliveries cancelled longer ago, with their attempts; nothing when the
/// contract leaves them to the operator ([`purge_delivered`] does).
/// Returns how many were deleted.
///
/// Its own statement, one subscription at a time through
/// `deliveries_cancelled_by_subscription` (migration 0022): a third
/// branch in [`purge_contract`]'s statement planned, young, a walk of the
/// table.
pub async fn purge_contract_cancelled<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    contract: Contract,
    limit: i64,
) -> Result<u64> {
    let Some(period) = contract.spec().retention.cancelled else {
        return Ok(0);
    };
    let mut tx = db.begin().await?;
    by_key(&mut tx).await?;
    let deleted = sqlx::query_file_scalar!(
        "src/deliveries/sql/purge_contract_cancelled.sql",
        contract.as_str(),
        interval(period),
        limit,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(u64::try_from(deleted).unwrap_or(0))
}
