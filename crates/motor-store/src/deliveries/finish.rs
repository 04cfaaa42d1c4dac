//! Finishing an attempt: the attempt row, the delivery's new state and the
//! outbox records that follow from it, in one transaction.

use std::time::Duration;

use motor_domain::{
    delivery::{Decision, DeliveryId, DeliveryJob, DeliveryState, ErrorCode},
    outbox::{DeadLetter, OutboxRecord, Topic},
    time::Timestamp,
};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{claim::ClaimedRow, enqueue, Claimed, JobRow};
use crate::{health, interval, outbox, subscriptions, Pool, Result};

/// One attempt as the sender saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub started_at: Timestamp,
    /// As measured: the row keeps whole milliseconds ([`Attempt::duration_ms`]),
    /// the metrics the exact time (a loopback answer takes less than one).
    pub duration: std::time::Duration,
    /// The HTTP status, if an answer came.
    pub status: Option<u16>,
    /// The sanitised code; `None` when delivered.
    pub error: Option<ErrorCode>,
    /// The key ids that signed it, newest first.
    pub key_ids: Vec<String>,
}

impl Attempt {
    /// The duration as the row stores it: whole milliseconds.
    pub fn duration_ms(&self) -> i32 {
        i32::try_from(self.duration.as_millis()).unwrap_or(i32::MAX)
    }
}

/// What a head that became terminal does with the next delivery of its
/// ordered lane, in its recording transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Claim it for this lease when it can be claimed now (due, unleased,
    /// subscription `activa`): the caller makes that attempt next, with no
    /// job and no second commit. A process that dies before recording it
    /// leaves a lease the sweeper expires. When it cannot be claimed, as
    /// [`Next::Release`].
    Claim(Duration),
    /// Write its job if it was parked behind this one; whoever reads the
    /// job claims it.
    Release,
}

/// What recording an attempt did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The delivery is now in `state`.
    Done {
        state: DeliveryState,
        /// The next delivery of its lane, claimed for the caller
        /// ([`Next::Claim`]).
        next: Option<Box<Claimed>>,
        /// The next delivery of its lane, whose job was written because it
        /// was parked behind this one.
        released: Option<DeliveryId>,
        /// The subscription went from `activa`/`pausada` to `suspendida`.
        suspended: bool,
    },
    /// The delivery was no longer at this attempt (another attempt
    /// recorded first, or it is terminal), or another claim took it after
    /// this one's lease ran out: nothing was written.
    Stale,
}

/// Records attempt `claimed.attempt` of a claimed delivery and applies
/// `decision`, in one transaction:
/// - the attempt row (`numero`, `iniciado_en`, `duracion_ms`, `status`,
///   `error`, `key_ids`);
/// - `Delivered` → `entregada`; `Fail` → `fallida` with `ultimo_error` and
///   the envelope on `{prefix}.dlq`; `Retry` → still `pendiente`,
///   `intentos` + 1, `proximo_intento` = `due_at`, and the job for the next
///   attempt on the decision's tier; `Suspend` → still `pendiente`, due at
///   once, and the subscription `suspendida` with `motivo` and an open
///   alert;
/// - a failed attempt (`Retry`, `Fail`) counts towards disabling the
///   subscription on sustained failure (`crate::health`), which may
///   suspend it with `fallos_sostenidos`; a delivered one forgets them;
/// - the lease is cleared; when the delivery became terminal, the next
///   delivery of its ordered lane is claimed or released as `next` says.
///
/// Every retry gets its job here; [`record_attempt_parking`] parks the
/// long ones instead.
pub async fn record_attempt(
    pool: &Pool,
    claimed: &Claimed,
    attempt: &Attempt,
    decision: &Decision,
    next: Next,
) -> Result<Recorded> {
    record_attempt_parking(pool, claimed, attempt, decision, next, Duration::MAX).await
}

/// [`record_attempt`], but a `Retry` whose wait is longer than
/// `park_after` gets no job: the delivery stays `pendiente`, unleased,
/// with `proximo_intento` = its due time, parked in Postgres, and the
/// sweeper hands it back once due ([`super::due_lane_heads`] finds an
/// unleased head due for `stale_after`, [`super::requeue`] writes its
/// job). A wait longer than the longest delay tier would otherwise sit
/// in a consumer for hours, holding one of its in-flight slots and its
/// partition's committed offset. The delivery stays the head of its
/// lane, so the lane keeps waiting for it exactly as for a job in a tier.
pub async fn record_attempt_parking(
    pool: &Pool,
    claimed: &Claimed,
    attempt: &Attempt,
    decision: &Decision,
    next: Next,
    park_after: Duration,
) -> Result<Recorded> {
    if let (Decision::Delivered, Next::Claim(_)) = (decision, next) {
        let mut recorded = super::record_delivered_many(pool, &[(claimed, attempt, next)]).await?;
        return Ok(recorded.pop().expect("one answer per input"));
    }
    let mut tx = pool.begin().await?;
    let state = decision.state();
    let proximo: Option<Timestamp> = match decision {
        Decision::Retry { due_at, .. } => Some(*due_at),
        Decision::Suspend { .. } => Some(chrono::Utc::now()),
        Decision::Delivered | Decision::Fail { .. } => None,
    };
    let updated = sqlx::query_file!(
        "src/deliveries/sql/record_attempt.sql",
        claimed.delivery_id.as_uuid(),
        i32::try_from(claimed.attempt).unwrap_or(i32::MAX),
        state.as_str(),
        attempt.status.map(i32::from),
        decision.last_error().map(|e| e.to_string()),
        proximo,
        claimed.lease_until,
    )
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() == 0 {
        tx.rollback().await?;
        return Ok(Recorded::Stale);
    }
    sqlx::query!(
        "INSERT INTO delivery_attempts (delivery_id, numero, iniciado_en, duracion_ms, status, error, key_ids)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        claimed.delivery_id.as_uuid(),
        i32::try_from(claimed.attempt).unwrap_or(i32::MAX),
        attempt.started_at,
        attempt.duration_ms(),
        attempt.status.map(i32::from),
        attempt.error.map(|e| e.to_string()),
        &attempt.key_ids,
    )
    .execute(&mut *tx)
    .await?;

    // Sustained failure: every failed attempt counts, a success forgets.
    let mut suspended = match decision {
        Decision::Retry { .. } | Decision::Fail { .. } => {
            health::record_failure(&mut tx, claimed.subscription_id, attempt.started_at).await?
        }
        Decision::Delivered => {
            health::forget(&mut *tx, &[*claimed.subscription_id.as_uuid()]).await?;
            false
        }
        Decision::Suspend { .. } => false,
    };
    match decision {
        // Parked: no job; the sweeper hands it back when due.
        Decision::Retry { wait, .. } if *wait > park_after => {}
        Decision::Retry {
            next_attempt,
            due_at,
            tier,
            ..
        } => {
            let job = DeliveryJob {
                delivery_id: claimed.delivery_id,
                subscription_id: claimed.subscription_id,
                instance_id: claimed.instance_id,
                lane: claimed.lane.clone(),
                seq: claimed.seq,
                attempt: *next_attempt,
                due_at: *due_at,
            };
            outbox::insert(&mut tx, [OutboxRecord::job_on(&job, Topic::Retry(*tier))]).await?;
        }
        Decision::Suspend { reason, error } => {
            let detalle = format!("{error} on delivery {}", claimed.delivery_id);
            suspended |= subscriptions::suspend_at_version(
                &mut tx,
                claimed.subscription_id,
                claimed.subscription_version,
                *reason,
                &detalle,
            )
            .await?;
        }
        Decision::Fail { error } => {
            let error = error.to_string();
            let letter = DeadLetter {
                delivery_id: claimed.delivery_id,
                subscription_id: claimed.subscription_id,
                instance_id: claimed.instance_id,
                event_id: claimed.event_id,
                seq: claimed.seq,
                lane: claimed.lane.clone(),
                envelope: &claimed.envelope,
                error: &error,
            };
            outbox::insert(&mut tx, [OutboxRecord::dead_letter(letter)]).await?;
        }
        Decision::Delivered => {}
    }
    let (mut claimed_next, mut released) = (None, None);
    if state.is_terminal() {
        if let Next::Claim(lease) = next {
            claimed_next = claim_next(&mut tx, claimed, lease).await?;
        }
        if claimed_next.is_none() {
            released = release_next(&mut tx, claimed).await?;
        }
    }
    tx.commit().await?;
    Ok(Recorded::Done {
        state,
        next: claimed_next,
        released,
        suspended,
    })
}

/// What follows a recorded head (`sql/next_after_many.sql`): the head,
/// whether its lane's next delivery was parked, and the next delivery's
/// [`ClaimedRow`] columns, all NULL when none was claimed. Also
/// `motor_claim_freed`'s answer (`sql/claim_freed_call.sql`): a given
/// delivery, and its own columns when it was claimed.
pub(super) struct FinishedRow {
    pub head: Option<Uuid>,
    pub following_parked: Option<bool>,
    pub id: Option<Uuid>,
    pub subscription_id: Option<Uuid>,
    pub app_id: Option<Uuid>,
    pub instance_id: Option<Uuid>,
    pub event_id: Option<Uuid>,
    pub lane: Option<String>,
    pub seq: Option<i64>,
    pub replay_of: Option<Uuid>,
    pub created_at: Option<Timestamp>,
    pub lease_until: Option<Timestamp>,
    pub url: Option<String>,
    pub ordered: Option<bool>,
    pub max_per_second: Option<i32>,
    pub subscription_version: Option<i64>,
    pub envelope: Option<String>,
    pub attempts_made: Option<i32>,
}

impl FinishedRow {
    /// The next delivery of the lane, when it was claimed.
    pub(super) fn next(&mut self) -> Option<ClaimedRow> {
        Some(ClaimedRow {
            id: self.id?,
            subscription_id: self.subscription_id?,
            app_id: self.app_id?,
            instance_id: self.instance_id?,
            event_id: self.event_id?,
            lane: self.lane.take()?,
            seq: self.seq?,
            replay_of: self.replay_of,
            created_at: self.created_at?,
            lease_until: self.lease_until?,
            url: self.url.take()?,
            ordered: self.ordered?,
            max_per_second: self.max_per_second,
            subscription_version: self.subscription_version?,
            envelope: self.envelope.take()?,
            attempts_made: self.attempts_made?,
        })
    }
}

/// Claims the lowest open delivery of the claimed one's lane (the new head)
/// when it is due, unleased and its subscription still `activa` and
/// ordered. Runs after the head's update, in its transaction.
async fn claim_next(
    conn: &mut PgConnection,
    claimed: &Claimed,
    lease: Duration,
) -> Result<Option<Box<Claimed>>> {
    let row = sqlx::query_file_as!(
        ClaimedRow,
        "src/deliveries/sql/claim_next.sql",
        claimed.subscription_id.as_uuid(),
        claimed.instance_id.as_uuid(),
        claimed.lane.to_string(),
        interval(lease),
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|row| Box::new(row.claimed_next())))
}

/// Writes the job of the lowest open delivery of the claimed one's lane if
/// it was parked, and clears its mark. Runs after the head's update, so it
/// sees a park that committed while the update waited for its lock.
pub(super) async fn release_next(
    conn: &mut PgConnection,
    claimed: &Claimed,
) -> Result<Option<DeliveryId>> {
    let row = sqlx::query_file_as!(
        JobRow,
        "src/deliveries/sql/release_next.sql",
        claimed.subscription_id.as_uuid(),
        claimed.instance_id.as_uuid(),
        claimed.lane.to_string(),
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let job = row.next_job();
    enqueue(conn, std::slice::from_ref(&job)).await?;
    Ok(Some(job.delivery_id))
}
