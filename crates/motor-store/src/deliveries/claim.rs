//! The claim: a compare-and-set that turns a job into the right to make one
//! attempt, or says why the job means nothing now.

use std::time::Duration;

use motor_domain::{
    delivery::{DeliveryId, Lane},
    destination::Destination,
    subscription::{SubscriptionId, SubscriptionState},
    time::Timestamp,
    AppId, EventId, InstanceId,
};
use sqlx::{postgres::PgRow, PgExecutor, Row};

use super::{CLAIMABLE_NOW, LANE_IS_FREE};
use crate::{Pool, Result};

/// What the sender needs for one attempt of a delivery it claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    pub delivery_id: DeliveryId,
    pub subscription_id: SubscriptionId,
    pub app_id: AppId,
    pub instance_id: InstanceId,
    pub event_id: EventId,
    pub lane: Lane,
    pub seq: i64,
    /// The delivery this one sends again (a replay or a manual retry):
    /// `X-MW-Replay-Of`. `None` for a live delivery.
    pub replay_of: Option<DeliveryId>,
    /// The attempt this claim is for (`numero` of its attempt row).
    pub attempt: u32,
    /// The subscription's destination at claim time; `None` when its stored
    /// URL no longer passes the rules (the attempt fails with `url`).
    pub destination: Option<Destination>,
    pub ordenado: bool,
    /// The subscription's `max_por_segundo` at claim time: the attempt
    /// takes a token of its bucket first (`crate::throttle`).
    pub max_por_segundo: Option<i64>,
    /// The subscription's `version` at claim time (a rotation bumps it):
    /// what a cache of its keys is keyed by.
    pub subscription_version: i64,
    /// The event's stored envelope: the request body, byte for byte.
    pub envelope: String,
    /// When the delivery was created: the start of its 72 h horizon.
    pub creada_en: Timestamp,
    /// The attempt must be recorded before this; after it the sweeper may
    /// hand the delivery to someone else.
    pub lease_until: Timestamp,
}

/// The answer to a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Make the attempt.
    Claimed(Box<Claimed>),
    /// A lower-seq delivery of its ordered lane is still `pendiente`. The
    /// delivery is marked parked: the head's finish writes its job. Drop
    /// this one.
    Parked,
    /// Nothing to do now; drop the job.
    Skipped(Skip),
}

/// Why a job found nothing to claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// No such delivery, it is terminal, or the job is for another attempt
    /// number: a stale or duplicate job.
    Stale,
    /// Another attempt holds it until then (never two at once).
    Leased(Timestamp),
    /// Its next attempt is not due before then, by Postgres's clock. A job
    /// for an earlier attempt time is stale (the job written with this due
    /// time will come); a job whose own `due_at` this is means the clocks
    /// disagree: hold it until then and claim again rather than drop it.
    NotDue(Timestamp),
    /// Its subscription is not `activa`; reactivation releases it.
    Inactive(SubscriptionState),
    /// Its subscription is held until then by a receiver's `Retry-After`
    /// (`crate::throttle`): the delivery was deferred to then, with a job.
    Held(Timestamp),
    /// It changed under the claim more than a few times; a later job or the
    /// sweeper will find it.
    Contended,
}

/// Claims attempt `attempt` of a delivery for `lease`: succeeds only if the
/// delivery is `pendiente` with `intentos = attempt - 1`, not leased, due,
/// its subscription is `activa`, and — when the subscription is `ordenado` —
/// no lower-seq delivery of its lane (subscription, instance, lane) is still
/// `pendiente`. Concurrent claims of one delivery: exactly one wins.
///
/// `lease` must cover the whole attempt (the send's timeout and then some):
/// a claim whose lease ran out can be taken again by the sweeper's job.
pub async fn claim(
    pool: &Pool,
    delivery: DeliveryId,
    attempt: u32,
    lease: Duration,
) -> Result<Claim> {
    let lease = chrono::TimeDelta::from_std(lease).unwrap_or(chrono::TimeDelta::MAX);
    for _ in 0..3 {
        if let Some(row) = try_claim(pool, delivery, attempt, lease).await? {
            return Ok(Claim::Claimed(Box::new(claimed(&row, attempt))));
        }
        match park_or_why_not(pool, delivery, attempt).await? {
            Parking::Parked => return Ok(Claim::Parked),
            Parking::Skip(skip) => return Ok(Claim::Skipped(skip)),
            Parking::Held(until) => {
                let mut tx = pool.begin().await?;
                crate::throttle::defer(&mut tx, delivery, attempt, until).await?;
                tx.commit().await?;
                return Ok(Claim::Skipped(Skip::Held(until)));
            }
            Parking::Claimable => {}
        }
        // Claimable now: the head finished between our statements.
    }
    Ok(Claim::Skipped(Skip::Contended))
}

/// What a claim returns, for [`claimed`] (`d` the delivery, `s` its
/// subscription, `e` its event).
pub(super) const CLAIMED_COLUMNS: &str = "d.id, d.subscription_id, d.app_id, d.instance_id, \
     d.event_id, d.lane, d.seq, d.replay_of, d.creada_en, d.lease_until, s.url, s.ordenado, s.max_por_segundo, \
     s.version AS subscription_version, e.envelope";

/// The compare-and-set. Two concurrent claims both reach the row; the
/// second waits for the first's commit, re-checks the row and finds the
/// lease taken.
async fn try_claim(
    db: impl PgExecutor<'_>,
    delivery: DeliveryId,
    attempt: u32,
    lease: chrono::TimeDelta,
) -> Result<Option<PgRow>> {
    Ok(sqlx::query(&try_claim_sql())
        .bind(delivery.as_uuid())
        .bind(i64::from(attempt))
        .bind(lease)
        .fetch_optional(db)
        .await?)
}

/// The statement of [`try_claim`]: `$1` delivery, `$2` attempt, `$3`
/// lease.
pub(super) fn try_claim_sql() -> String {
    format!(
        "UPDATE deliveries d
         SET lease_until = now() + $3, parked_at = NULL, actualizada_en = now()
         FROM subscriptions s, events e
         WHERE d.id = $1 AND s.id = d.subscription_id AND e.event_id = d.event_id
           AND d.estado = 'pendiente' AND d.intentos = $2 - 1
           AND {CLAIMABLE_NOW}
           AND (NOT s.ordenado OR {LANE_IS_FREE})
         RETURNING {CLAIMED_COLUMNS}"
    )
}

/// What a failed compare-and-set found.
enum Parking {
    /// Marked parked behind an open lower-seq delivery of its lane.
    Parked,
    Skip(Skip),
    /// Held by its subscription's throttle until then: defer it.
    Held(Timestamp),
    /// Nothing stands in the way any more: claim again.
    Claimable,
}

/// Marks the delivery parked if a lower-seq delivery of its ordered lane is
/// open, locking those blockers (`FOR SHARE`) so that a finish of one of
/// them either commits first (and the blocker no longer counts) or waits for
/// this mark (and then sees it and releases this delivery); otherwise says
/// why it cannot be claimed. One statement: the reasons are read as of its
/// start, so a head that finished while the park waited shows as
/// `Claimable` and the caller claims again.
async fn park_or_why_not(
    db: impl PgExecutor<'_>,
    delivery: DeliveryId,
    attempt: u32,
) -> Result<Parking> {
    let row = sqlx::query(PARK_OR_WHY_NOT)
        .bind(delivery.as_uuid())
        .bind(i64::from(attempt))
        .fetch_optional(db)
        .await?;
    let Some(row) = row else {
        return Ok(Parking::Skip(Skip::Stale));
    };
    if row.get::<bool, _>("parked") {
        return Ok(Parking::Parked);
    }
    let now: Timestamp = row.get("now");
    let intentos: i32 = row.get("intentos");
    if row.get::<&str, _>("estado") != "pendiente" || i64::from(intentos) != i64::from(attempt) - 1
    {
        return Ok(Parking::Skip(Skip::Stale));
    }
    let subscription_state: String = row.get("sub_estado");
    let subscription_state =
        SubscriptionState::parse(&subscription_state).unwrap_or(SubscriptionState::Suspended);
    if subscription_state != SubscriptionState::Active {
        return Ok(Parking::Skip(Skip::Inactive(subscription_state)));
    }
    if let Some(lease) = row.get::<Option<Timestamp>, _>("lease_until") {
        if lease > now {
            return Ok(Parking::Skip(Skip::Leased(lease)));
        }
    }
    if let Some(due) = row.get::<Option<Timestamp>, _>("proximo_intento") {
        if due > now {
            return Ok(Parking::Skip(Skip::NotDue(due)));
        }
    }
    if let Some(until) = row.get::<Option<Timestamp>, _>("held_until") {
        return Ok(Parking::Held(until));
    }
    Ok(Parking::Claimable)
}

/// The statement of [`park_or_why_not`]: `$1` delivery, `$2` attempt.
pub(super) const PARK_OR_WHY_NOT: &str = "WITH parked AS (
             UPDATE deliveries d SET parked_at = now()
             FROM subscriptions s
             WHERE d.id = $1 AND s.id = d.subscription_id AND s.ordenado AND s.estado = 'activa'
               AND d.estado = 'pendiente' AND d.intentos = $2 - 1
               AND EXISTS (
                   SELECT 1 FROM deliveries b
                   WHERE b.subscription_id = d.subscription_id AND b.instance_id = d.instance_id
                     AND b.lane = d.lane AND b.estado = 'pendiente' AND b.seq < d.seq
                   FOR SHARE)
             RETURNING d.id
         )
         SELECT EXISTS (SELECT 1 FROM parked) AS parked, d.estado, d.intentos, d.lease_until,
                d.proximo_intento, s.estado AS sub_estado, now() AS now,
                (SELECT t.hasta FROM subscription_throttle t
                 WHERE t.subscription_id = d.subscription_id AND t.hasta > now()) AS held_until
         FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
         WHERE d.id = $1";

pub(super) fn claimed(row: &PgRow, attempt: u32) -> Claimed {
    let lane: String = row.get("lane");
    Claimed {
        delivery_id: DeliveryId::from_uuid(row.get("id")),
        subscription_id: SubscriptionId::from_uuid(row.get("subscription_id")),
        app_id: AppId::from_uuid(row.get("app_id")),
        instance_id: InstanceId::from_uuid(row.get("instance_id")),
        event_id: EventId::from_uuid(row.get("event_id")),
        lane: lane.parse().unwrap_or(Lane::Live),
        seq: row.get("seq"),
        replay_of: row
            .get::<Option<uuid::Uuid>, _>("replay_of")
            .map(DeliveryId::from_uuid),
        attempt,
        destination: Destination::parse(row.get("url"), "url").ok(),
        ordenado: row.get("ordenado"),
        max_por_segundo: row.get::<Option<i32>, _>("max_por_segundo").map(i64::from),
        subscription_version: row.get("subscription_version"),
        envelope: row.get("envelope"),
        creada_en: row.get("creada_en"),
        lease_until: row.get("lease_until"),
    }
}
