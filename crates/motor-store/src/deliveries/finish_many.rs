//! Group commit of the hot finish: many attempts that ended `entregada`
//! (from different lanes, usually of many subscriptions), each with the
//! next delivery it should make claimed for the same dispatcher, recorded
//! in one call — [`super::record_attempt`]'s fused case, set-based.

use motor_domain::delivery::DeliveryState;
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use super::{
    finish::{release_next, FinishedRow},
    Attempt, Claimed, Next, Recorded,
};
use crate::{interval, Pool, Result};

/// Records each `(claimed, attempt, next)` as delivered, in one
/// transaction of two statements (the records, then what follows them)
/// sent as one call of `motor_record_delivered` (migration 0024: one
/// round trip where `BEGIN`, the two statements and `COMMIT` took four);
/// answers in input order. With [`Next::Claim`] it also claims
/// the next delivery to make when one can be claimed now: for an ordered
/// subscription the next delivery of the lane, for an unordered one the
/// subscription's oldest due delivery nobody holds (so a backlog moves
/// without a job and a claim per delivery; two inputs of one subscription
/// get two different ones). One lease for the batch: the longest asked.
/// A delivery no longer at its attempt, or claimed again by someone else
/// after its lease ran out, is [`Recorded::Stale`]. A next
/// delivery of an ordered lane that was parked but is not claimed gets its
/// job in a transaction of its own (a crash in between is a lost wake-up
/// the sweeper repairs).
///
/// The function turns sequential and bitmap scans off
/// ([`super::BY_KEY_SETUP`]) and keeps generic plans.
///
/// The attempts must be of distinct deliveries, and (ordered lanes run one
/// delivery at a time) of distinct ordered lanes.
pub async fn record_delivered_many(
    pool: &Pool,
    done: &[(&Claimed, &Attempt, Next)],
) -> Result<Vec<Recorded>> {
    record_delivered_many_on(&mut *pool.acquire().await?, done).await
}

/// [`record_delivered_many`] on `conn` (the recorder's kept connection,
/// `crate::held`), which must not be in a transaction (the call commits
/// on its own).
pub async fn record_delivered_many_on(
    conn: &mut PgConnection,
    done: &[(&Claimed, &Attempt, Next)],
) -> Result<Vec<Recorded>> {
    let ids: Vec<Uuid> = done
        .iter()
        .map(|(c, _, _)| *c.delivery_id.as_uuid())
        .collect();
    let numbers: Vec<i32> = done
        .iter()
        .map(|(c, _, _)| i32::try_from(c.attempt).unwrap_or(i32::MAX))
        .collect();
    let statuses: Vec<Option<i32>> = done
        .iter()
        .map(|(_, a, _)| a.status.map(i32::from))
        .collect();
    let started: Vec<_> = done.iter().map(|(_, a, _)| a.started_at).collect();
    let durations: Vec<i32> = done.iter().map(|(_, a, _)| a.duration_ms()).collect();
    // Key ids never hold a comma (`whk_` and hex); one text per attempt
    // keeps the arrays one-dimensional.
    let key_ids: Vec<String> = done.iter().map(|(_, a, _)| a.key_ids.join(",")).collect();
    let leases: Vec<_> = done.iter().map(|(c, _, _)| c.lease_until).collect();
    let lease = done
        .iter()
        .filter_map(|(_, _, n)| match n {
            Next::Claim(lease) => Some(*lease),
            Next::Release => None,
        })
        .max()
        .unwrap_or_default();
    let claiming: Vec<Uuid> = done
        .iter()
        .filter(|(_, _, n)| matches!(n, Next::Claim(_)))
        .map(|(c, _, _)| *c.delivery_id.as_uuid())
        .collect();
    let mut rows = sqlx::query_file_as!(
        FinishedRow,
        "src/deliveries/sql/record_delivered.sql",
        &ids,
        &numbers,
        &statuses as &[Option<i32>],
        &started,
        &durations,
        &key_ids,
        &leases,
        &claiming,
        interval(lease),
    )
    .fetch_all(&mut *conn)
    .await?;

    let mut answers = Vec::with_capacity(done.len());
    for (claimed_now, _, _) in done {
        let Some(row) = rows
            .iter_mut()
            .find(|r| r.head.as_ref() == Some(claimed_now.delivery_id.as_uuid()))
        else {
            answers.push(Recorded::Stale);
            continue;
        };
        let (mut next, mut released) = (None, None);
        if let Some(claimed_next) = row.next() {
            next = Some(Box::new(claimed_next.claimed_next()));
        } else if row.following_parked == Some(true) {
            let mut tx = conn.begin().await?;
            released = release_next(&mut tx, claimed_now).await?;
            tx.commit().await?;
        }
        answers.push(Recorded::Done {
            state: DeliveryState::Delivered,
            next,
            released,
            suspended: false,
        });
    }
    Ok(answers)
}
