//! The claim: a compare-and-set that turns a job into the right to make one
//! attempt, or says why the job means nothing now.

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use motor_domain::{
    delivery::{DeliveryId, Lane},
    destination::Destination,
    subscription::{SubscriptionId, SubscriptionState},
    time::Timestamp,
    AppId, EventId, InstanceId,
};
use sqlx::PgExecutor;
use uuid::Uuid;

use super::finish::FinishedRow;
use crate::{interval, Pool, Result};

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
    pub ordered: bool,
    /// The subscription's `max_por_segundo` at claim time: the attempt
    /// takes a token of its bucket first (`crate::throttle`).
    pub max_per_second: Option<i64>,
    /// The subscription's `version` at claim time (a rotation bumps it):
    /// what a cache of its keys is keyed by.
    pub subscription_version: i64,
    /// The event's stored envelope: the request body, byte for byte.
    pub envelope: String,
    /// When the delivery was created: the start of its 72 h horizon.
    pub created_at: Timestamp,
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
    /// Its next attempt is not due before `due`, which is `wait` away by
    /// Postgres's clock. A job for an earlier attempt time is stale (the
    /// job written with this due time will come); a job whose own `due_at`
    /// this is means the clocks disagree, or the job came a little early
    /// (a timer is not exact): hold it for `wait` and claim again rather
    /// than drop it.
    NotDue { due: Timestamp, wait: Duration },
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
    for _ in 0..3 {
        if let Some(row) = try_claim(pool, delivery, attempt, lease).await? {
            return Ok(Claim::Claimed(Box::new(row.claimed(attempt))));
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

/// Renews `claimed`'s lease for `lease` from now, if this claim still
/// holds it: the delivery is still `pendiente` at the same attempt and
/// its lease is still the one this claim set (any other claim sets
/// another). The new end of the lease, or `None` when the claim was lost
/// (its lease ran out and someone else claimed it, or it moved on): the
/// attempt must not be made then. For a claim that waited (for a slot of
/// its unordered subscription) long enough that its attempt might not be
/// recorded before the lease ends.
pub async fn renew(pool: &Pool, claimed: &Claimed, lease: Duration) -> Result<Option<Timestamp>> {
    Ok(sqlx::query_scalar!(
        r#"UPDATE deliveries SET reservado_hasta = now() + $4
           WHERE id = $1 AND estado = 'pendiente' AND intentos = $2::bigint - 1
             AND reservado_hasta = $3
           RETURNING reservado_hasta AS "lease_until!""#,
        claimed.delivery_id.as_uuid(),
        i64::from(claimed.attempt),
        claimed.lease_until,
        interval(lease),
    )
    .fetch_optional(pool)
    .await?)
}

/// Claims, for `lease`, those of `parked` — first attempts a commit of
/// this process created parked behind an open delivery of their ordered
/// lane ([`super::Handed::parked`]) — whose lane has freed since: the
/// delivery before each finished while the commit was in flight, and its
/// finish could not see them. Call it after the commit. The others stay
/// parked for that delivery's finish, which will see them. A crash before
/// it is a lost wake-up the sweeper repairs (the lane's head is due and
/// unleased).
///
/// One statement claims every lane found free, taking no lock but the
/// claimed rows; a second finds the lanes whose delivery before is locked
/// now (its finish in flight) or gone since the first. Both run in one
/// call of `motor_claim_freed` (migration 0031: one round trip where
/// `BEGIN`, the two statements and `COMMIT` took three or four). The
/// lanes still finishing are tried again, both statements on just them,
/// after `FREED_WAIT` and then twice as long each time, holding no
/// connection meanwhile: a finish in flight has committed by then, and
/// either claimed its lane's parked one (no longer parked: left alone) or
/// left its lane free (claimed here).
/// What is still finishing after `FREED_TRIES` tries is claimed one by
/// one through [`claim`], whose lane check waits for that finish. (One
/// statement that waited on one lane while holding another lane's lock
/// deadlocked with group commits finishing the same lanes; waiting in
/// [`claim`] for every such lane held a connection 5 ms a lane: at 2,000
/// events/s, 5,053 such waits in 10 s.)
///
/// The function turns sequential and bitmap scans off
/// ([`super::BY_KEY_SETUP`]) and keeps generic plans.
pub async fn claim_freed(
    pool: &Pool,
    parked: &[DeliveryId],
    lease: Duration,
) -> Result<Vec<Claimed>> {
    claim_freed_by(pool, parked, lease, |waiting| async move {
        let freed = look_freed(pool, &[&waiting], lease).await?;
        Ok(freed.into_iter().next().unwrap_or_default())
    })
    .await
}

/// [`claim_freed`], each look at the lanes made by `look` (given the
/// deliveries still waiting): one call of `motor_claim_freed` of its own,
/// or a share of one that several callers make together (the dispatcher's
/// group commit of these looks, [`look_freed`]). What is still finishing
/// after the last look is claimed one by one on `pool`.
pub async fn claim_freed_by<F, Fut, E>(
    pool: &Pool,
    parked: &[DeliveryId],
    lease: Duration,
    mut look: F,
) -> std::result::Result<Vec<Claimed>, E>
where
    F: FnMut(Vec<DeliveryId>) -> Fut,
    Fut: std::future::Future<Output = std::result::Result<Freed, E>>,
    E: From<crate::StoreError>,
{
    let mut waiting = parked.to_vec();
    let mut claimed = Vec::new();
    let mut wait = FREED_WAIT;
    for tries in 1.. {
        let freed = look(std::mem::take(&mut waiting)).await?;
        claimed.extend(freed.claimed);
        waiting = freed.finishing;
        if waiting.is_empty() || tries == FREED_TRIES {
            break;
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
    }
    for id in waiting {
        if let Claim::Claimed(row) = claim(pool, id, 1, lease).await? {
            claimed.push(*row);
        }
    }
    Ok(claimed)
}

/// What one look of [`claim_freed`] found for one caller: the deliveries
/// it claimed, and those whose lane is still finishing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Freed {
    pub claimed: Vec<Claimed>,
    pub finishing: Vec<DeliveryId>,
}

/// One look for several callers in one call of `motor_claim_freed`
/// (`sql/claim_freed_call.sql`), its own transaction, on `db`: every
/// caller's parked deliveries at once, each answered with its share. A
/// delivery two callers gave is claimed once, and goes to the first of
/// them: the other finds it taken, as it would have in a call of its own
/// made after the first one's. A delivery still finishing is told to every
/// caller that gave it (each looks again). `lease` is the claims'.
///
/// More deliveries in one call add no wait that one call of each did not
/// have: the call never waits on a lane's delivery before (its reads do
/// not lock, its check of a finish in flight skips locked rows), only on
/// a given delivery a record is claiming at that moment, and a record
/// never wants a delivery this call claimed (it claims the next of a
/// lane whose head it holds, and this call claims only where no head is
/// open).
pub async fn look_freed(
    db: impl PgExecutor<'_>,
    callers: &[&[DeliveryId]],
    lease: Duration,
) -> Result<Vec<Freed>> {
    let mut given: Vec<Uuid> = Vec::new();
    let mut seen = HashSet::new();
    for id in callers.iter().copied().flatten() {
        if seen.insert(*id) {
            given.push((*id).into());
        }
    }
    if given.is_empty() {
        return Ok(vec![Freed::default(); callers.len()]);
    }
    let rows = sqlx::query_file_as!(
        FinishedRow,
        "src/deliveries/sql/claim_freed_call.sql",
        &given,
        interval(lease),
    )
    .fetch_all(db)
    .await?;
    let mut found = HashMap::with_capacity(rows.len());
    for mut row in rows {
        if let Some(head) = row.head {
            found.insert(
                DeliveryId::from_uuid(head),
                row.next().map(|r| r.claimed(1)),
            );
        }
    }
    Ok(share_freed(callers, found))
}

/// Each caller's share of one look: `found` holds, by given delivery, its
/// claim, or `None` when its lane is still finishing (a given delivery
/// absent from it stays parked for its lane's finish).
fn share_freed(
    callers: &[&[DeliveryId]],
    mut found: HashMap<DeliveryId, Option<Claimed>>,
) -> Vec<Freed> {
    callers
        .iter()
        .map(|parked| {
            let mut freed = Freed::default();
            for id in *parked {
                match found.get(id) {
                    // Taken by this caller: the others find it gone.
                    Some(Some(_)) => freed.claimed.extend(found.remove(id).flatten()),
                    Some(None) if !freed.finishing.contains(id) => freed.finishing.push(*id),
                    _ => {}
                }
            }
            freed
        })
        .collect()
}

/// The first wait of [`claim_freed`] for finishes in flight: a group
/// commit holds its heads' locks for a few milliseconds.
const FREED_WAIT: Duration = Duration::from_millis(2);

/// How many times [`claim_freed`] looks for freed lanes before it waits
/// for the finishes still in flight (after 2 + 4 + 8 + 16 ms of waits).
const FREED_TRIES: u32 = 5;

/// A claimed delivery as `sql/claim.sql` returns it (and `claim_next`,
/// `record_delivered_many` for the next one):
/// `d` the delivery, `s` its subscription, `e` its event.
pub(super) struct ClaimedRow {
    pub id: Uuid,
    pub subscription_id: Uuid,
    pub app_id: Uuid,
    pub instance_id: Uuid,
    pub event_id: Uuid,
    pub lane: String,
    pub seq: i64,
    pub replay_of: Option<Uuid>,
    pub created_at: Timestamp,
    pub lease_until: Timestamp,
    pub url: String,
    pub ordered: bool,
    pub max_per_second: Option<i32>,
    pub subscription_version: i64,
    pub envelope: String,
    /// `intentos` after the claim: the claim is for the next attempt.
    pub attempts_made: i32,
}

impl ClaimedRow {
    /// The claim of attempt `attempt`.
    pub(super) fn claimed(self, attempt: u32) -> Claimed {
        Claimed {
            delivery_id: DeliveryId::from_uuid(self.id),
            subscription_id: SubscriptionId::from_uuid(self.subscription_id),
            app_id: AppId::from_uuid(self.app_id),
            instance_id: InstanceId::from_uuid(self.instance_id),
            event_id: EventId::from_uuid(self.event_id),
            lane: self.lane.parse().unwrap_or(Lane::Live),
            seq: self.seq,
            replay_of: self.replay_of.map(DeliveryId::from_uuid),
            attempt,
            destination: Destination::parse(&self.url, "url").ok(),
            ordered: self.ordered,
            max_per_second: self.max_per_second.map(i64::from),
            subscription_version: self.subscription_version,
            envelope: self.envelope,
            created_at: self.created_at,
            lease_until: self.lease_until,
        }
    }

    /// The claim of the delivery's next attempt (`intentos + 1`).
    pub(super) fn claimed_next(self) -> Claimed {
        let attempt = u32::try_from(self.attempts_made).unwrap_or(0) + 1;
        self.claimed(attempt)
    }
}

/// The compare-and-set (`sql/claim.sql`). Two concurrent claims both reach
/// the row; the second waits for the first's commit, re-checks the row and
/// finds the lease taken.
async fn try_claim(
    db: impl PgExecutor<'_>,
    delivery: DeliveryId,
    attempt: u32,
    lease: Duration,
) -> Result<Option<ClaimedRow>> {
    Ok(sqlx::query_file_as!(
        ClaimedRow,
        "src/deliveries/sql/claim.sql",
        delivery.as_uuid(),
        i64::from(attempt),
        interval(lease),
    )
    .fetch_optional(db)
    .await?)
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
/// `Claimable` and the caller claims again. `sql/park_or_why_not.sql`.
async fn park_or_why_not(
    db: impl PgExecutor<'_>,
    delivery: DeliveryId,
    attempt: u32,
) -> Result<Parking> {
    let row = sqlx::query_file!(
        "src/deliveries/sql/park_or_why_not.sql",
        delivery.as_uuid(),
        i64::from(attempt),
    )
    .fetch_optional(db)
    .await?;
    let Some(row) = row else {
        return Ok(Parking::Skip(Skip::Stale));
    };
    if row.parked {
        return Ok(Parking::Parked);
    }
    let now: Timestamp = row.now;
    if row.estado != "pendiente" || i64::from(row.intentos) != i64::from(attempt) - 1 {
        return Ok(Parking::Skip(Skip::Stale));
    }
    let state =
        SubscriptionState::parse(&row.subscription_state).unwrap_or(SubscriptionState::Suspended);
    if state != SubscriptionState::Active {
        return Ok(Parking::Skip(Skip::Inactive(state)));
    }
    if let Some(lease) = row.reservado_hasta {
        if lease > now {
            return Ok(Parking::Skip(Skip::Leased(lease)));
        }
    }
    if let Some(due) = row.proximo_intento {
        if due > now {
            let wait = (due - now).to_std().unwrap_or_default();
            return Ok(Parking::Skip(Skip::NotDue { due, wait }));
        }
    }
    if let Some(until) = row.held_until {
        return Ok(Parking::Held(until));
    }
    Ok(Parking::Claimable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim_of(id: DeliveryId) -> Claimed {
        Claimed {
            delivery_id: id,
            subscription_id: SubscriptionId::from_uuid(Uuid::nil()),
            app_id: AppId::from_uuid(Uuid::nil()),
            instance_id: InstanceId::from_uuid(Uuid::nil()),
            event_id: EventId::from_uuid(Uuid::nil()),
            lane: Lane::Live,
            seq: 1,
            replay_of: None,
            attempt: 1,
            destination: None,
            ordered: true,
            max_per_second: None,
            subscription_version: 1,
            envelope: String::new(),
            created_at: chrono::DateTime::UNIX_EPOCH,
            lease_until: chrono::DateTime::UNIX_EPOCH,
        }
    }

    fn ids<const N: usize>() -> [DeliveryId; N] {
        std::array::from_fn(|_| DeliveryId::from_uuid(Uuid::new_v4()))
    }

    #[test]
    fn each_caller_gets_its_own_claims_and_a_shared_one_goes_to_the_first() {
        let [a, b, shared, finishing, parked] = ids();
        let found = HashMap::from([
            (a, Some(claim_of(a))),
            (b, Some(claim_of(b))),
            (shared, Some(claim_of(shared))),
            (finishing, None),
        ]);
        let callers: [&[DeliveryId]; 3] = [
            &[a, shared, finishing],
            &[shared, b, finishing, parked],
            &[parked],
        ];
        let freed = share_freed(&callers, found);
        let claimed =
            |f: &Freed| -> Vec<DeliveryId> { f.claimed.iter().map(|c| c.delivery_id).collect() };
        assert_eq!(claimed(&freed[0]), [a, shared]);
        assert_eq!(freed[0].finishing, [finishing]);
        // The shared claim went to the first caller; the second finds it
        // taken, and its lane still finishing as the first does.
        assert_eq!(claimed(&freed[1]), [b]);
        assert_eq!(freed[1].finishing, [finishing]);
        // Still parked (no row): nothing to do for anyone.
        assert_eq!(freed[2], Freed::default());
    }

    #[test]
    fn a_delivery_given_twice_by_one_caller_is_claimed_or_waited_for_once() {
        let [claimed, finishing] = ids();
        let found = HashMap::from([(claimed, Some(claim_of(claimed))), (finishing, None)]);
        let freed = share_freed(&[&[claimed, finishing, claimed, finishing]], found);
        assert_eq!(freed[0].claimed, [claim_of(claimed)]);
        assert_eq!(freed[0].finishing, [finishing]);
    }
}
