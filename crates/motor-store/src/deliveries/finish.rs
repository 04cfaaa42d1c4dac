//! Finishing an attempt: the attempt row, the delivery's new state and the
//! outbox records that follow from it, in one transaction.

use std::time::Duration;

use motor_domain::{
    delivery::{Decision, DeliveryId, DeliveryJob, DeliveryState, ErrorCode},
    outbox::{DeadLetter, OutboxRecord, Topic},
    time::Timestamp,
};
use sqlx::{PgConnection, Row};

use super::{claim::CLAIMED_COLUMNS, enqueue, next_job, Claimed, CLAIMABLE_NOW};
use crate::{health, outbox, subscriptions, Pool, Result};

/// One attempt as the sender saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub iniciado_en: Timestamp,
    pub duracion_ms: u32,
    /// The HTTP status, if an answer came.
    pub status: Option<u16>,
    /// The sanitised code; `None` when delivered.
    pub error: Option<ErrorCode>,
    /// The key ids that signed it, newest first.
    pub key_ids: Vec<String>,
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
    /// The delivery is now in `estado`.
    Done {
        estado: DeliveryState,
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
    /// recorded first, or it is terminal): nothing was written.
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
pub async fn record_attempt(
    pool: &Pool,
    claimed: &Claimed,
    attempt: &Attempt,
    decision: &Decision,
    next: Next,
) -> Result<Recorded> {
    if let (Decision::Delivered, Next::Claim(lease)) = (decision, next) {
        return delivered_claiming_next(pool, claimed, attempt, lease).await;
    }
    let mut tx = pool.begin().await?;
    let estado = decision.estado();
    let proximo: Option<Timestamp> = match decision {
        Decision::Retry { due_at, .. } => Some(*due_at),
        Decision::Suspend { .. } => Some(chrono::Utc::now()),
        Decision::Delivered | Decision::Fail { .. } => None,
    };
    let updated = sqlx::query(RECORD_ATTEMPT)
        .bind(claimed.delivery_id.as_uuid())
        .bind(i32::try_from(claimed.attempt).unwrap_or(i32::MAX))
        .bind(estado.as_str())
        .bind(attempt.status.map(i32::from))
        .bind(decision.ultimo_error().map(|e| e.to_string()))
        .bind(proximo)
        .execute(&mut *tx)
        .await?;
    if updated.rows_affected() == 0 {
        tx.rollback().await?;
        return Ok(Recorded::Stale);
    }
    sqlx::query(
        "INSERT INTO delivery_attempts (delivery_id, numero, iniciado_en, duracion_ms, status, error, key_ids)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(claimed.delivery_id.as_uuid())
    .bind(i32::try_from(claimed.attempt).unwrap_or(i32::MAX))
    .bind(attempt.iniciado_en)
    .bind(i32::try_from(attempt.duracion_ms).unwrap_or(i32::MAX))
    .bind(attempt.status.map(i32::from))
    .bind(attempt.error.map(|e| e.to_string()))
    .bind(&attempt.key_ids)
    .execute(&mut *tx)
    .await?;

    // Sustained failure: every failed attempt counts, a success forgets.
    let mut suspended = match decision {
        Decision::Retry { .. } | Decision::Fail { .. } => {
            health::record_failure(&mut tx, claimed.subscription_id, attempt.iniciado_en).await?
        }
        Decision::Delivered => {
            health::forget(&mut *tx, &[*claimed.subscription_id.as_uuid()]).await?;
            false
        }
        Decision::Suspend { .. } => false,
    };
    match decision {
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
                lane: claimed.lane,
                seq: claimed.seq,
                attempt: *next_attempt,
                due_at: *due_at,
            };
            outbox::insert(&mut tx, [OutboxRecord::job_on(&job, Topic::Retry(*tier))]).await?;
        }
        Decision::Suspend { motivo, error } => {
            let detalle = format!("{error} on delivery {}", claimed.delivery_id);
            suspended |=
                subscriptions::suspend(&mut tx, claimed.subscription_id, *motivo, &detalle).await?;
        }
        Decision::Fail { error } => {
            let error = error.to_string();
            let letter = DeadLetter {
                delivery_id: claimed.delivery_id,
                subscription_id: claimed.subscription_id,
                instance_id: claimed.instance_id,
                event_id: claimed.event_id,
                seq: claimed.seq,
                lane: claimed.lane,
                envelope: &claimed.envelope,
                error: &error,
            };
            outbox::insert(&mut tx, [OutboxRecord::dead_letter(letter)]).await?;
        }
        Decision::Delivered => {}
    }
    let (mut claimed_next, mut released) = (None, None);
    if estado.is_terminal() {
        if let Next::Claim(lease) = next {
            claimed_next = claim_next(&mut tx, claimed, lease).await?;
        }
        if claimed_next.is_none() {
            released = release_next(&mut tx, claimed).await?;
        }
    }
    tx.commit().await?;
    Ok(Recorded::Done {
        estado,
        next: claimed_next,
        released,
        suspended,
    })
}

/// The state change of [`record_attempt`]: `$1` delivery, `$2` attempt,
/// `$3` estado, `$4` status, `$5` error, `$6` proximo_intento.
pub(super) const RECORD_ATTEMPT: &str = "UPDATE deliveries
         SET estado = $3, intentos = $2, ultimo_status = $4, ultimo_error = $5,
             proximo_intento = $6, lease_until = NULL, parked_at = NULL,
             entregada_en = CASE WHEN $3 = 'entregada' THEN now() END,
             actualizada_en = now()
         WHERE id = $1 AND estado = 'pendiente' AND intentos = $2 - 1";

/// The common case of [`record_attempt`] — delivered, and the next
/// delivery of the lane claimed — in one statement: no transaction block,
/// one round trip, one commit. If the next one is parked but cannot be
/// claimed now (the subscription was paused meanwhile, say), its job is
/// written in a second transaction; a crash in between is a lost wake-up
/// the sweeper repairs.
async fn delivered_claiming_next(
    pool: &Pool,
    claimed: &Claimed,
    attempt: &Attempt,
    lease: Duration,
) -> Result<Recorded> {
    let lease = chrono::TimeDelta::from_std(lease).unwrap_or(chrono::TimeDelta::MAX);
    let row = sqlx::query(&delivered_claiming_next_sql())
        .bind(claimed.delivery_id.as_uuid())
        .bind(i32::try_from(claimed.attempt).unwrap_or(i32::MAX))
        .bind(attempt.status.map(i32::from))
        .bind(attempt.iniciado_en)
        .bind(i32::try_from(attempt.duracion_ms).unwrap_or(i32::MAX))
        .bind(&attempt.key_ids)
        .bind(lease)
        .fetch_optional(pool)
        .await?;
    let Some(row) = row else {
        return Ok(Recorded::Stale);
    };
    let (mut next, mut released) = (None, None);
    if row.get::<Option<uuid::Uuid>, _>("id").is_some() {
        let intentos: i32 = row.get("intentos");
        next = Some(Box::new(super::claim::claimed(
            &row,
            u32::try_from(intentos).unwrap_or(0) + 1,
        )));
    } else if row.get::<Option<bool>, _>("following_parked") == Some(true) {
        let mut tx = pool.begin().await?;
        released = release_next(&mut tx, claimed).await?;
        tx.commit().await?;
    }
    Ok(Recorded::Done {
        estado: DeliveryState::Delivered,
        next,
        released,
        suspended: false,
    })
}

/// The statement of [`delivered_claiming_next`]: `$1` delivery, `$2`
/// attempt, `$3` status, `$4` iniciado_en, `$5` duracion_ms, `$6` key ids,
/// `$7` lease of the next claim.
pub(super) fn delivered_claiming_next_sql() -> String {
    format!(
        "WITH head AS (
             UPDATE deliveries
             SET estado = 'entregada', intentos = $2, ultimo_status = $3, ultimo_error = NULL,
                 proximo_intento = NULL, lease_until = NULL, parked_at = NULL,
                 entregada_en = now(), actualizada_en = now()
             WHERE id = $1 AND estado = 'pendiente' AND intentos = $2 - 1
             RETURNING id, subscription_id, instance_id, lane
         ), attempt AS (
             INSERT INTO delivery_attempts (delivery_id, numero, iniciado_en, duracion_ms, status, error, key_ids)
             SELECT id, $2, $4, $5, $3, NULL, $6 FROM head
         ), healed AS (
             DELETE FROM subscription_health
             WHERE subscription_id = (SELECT subscription_id FROM head)
         ), following AS (
             SELECT f.id, f.parked_at IS NOT NULL AS parked
             FROM head h, LATERAL (
                 SELECT id, parked_at FROM deliveries f
                 WHERE f.subscription_id = h.subscription_id AND f.instance_id = h.instance_id
                   AND f.lane = h.lane AND f.estado = 'pendiente' AND f.id <> h.id
                 ORDER BY f.seq LIMIT 1) f
         ), next AS (
             UPDATE deliveries d
             SET lease_until = now() + $7, parked_at = NULL, actualizada_en = now()
             FROM following f, subscriptions s, events e
             WHERE d.id = f.id AND s.id = d.subscription_id AND e.event_id = d.event_id
               AND s.ordenado AND {CLAIMABLE_NOW}
             RETURNING {CLAIMED_COLUMNS}, d.intentos
         )
         SELECT h.id AS head, f.parked AS following_parked, n.*
         FROM head h LEFT JOIN following f ON true LEFT JOIN next n ON true"
    )
}

/// Claims the lowest open delivery of the claimed one's lane (the new head)
/// when it is due, unleased and its subscription still `activa` and
/// ordered. Runs after the head's update, in its transaction.
async fn claim_next(
    conn: &mut PgConnection,
    claimed: &Claimed,
    lease: Duration,
) -> Result<Option<Box<Claimed>>> {
    let lease = chrono::TimeDelta::from_std(lease).unwrap_or(chrono::TimeDelta::MAX);
    let row = sqlx::query(&claim_next_sql())
        .bind(claimed.subscription_id.as_uuid())
        .bind(claimed.instance_id.as_uuid())
        .bind(claimed.lane.to_string())
        .bind(lease)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(row.map(|row| {
        let intentos: i32 = row.get("intentos");
        Box::new(super::claim::claimed(
            &row,
            u32::try_from(intentos).unwrap_or(0) + 1,
        ))
    }))
}

/// The statement of [`claim_next`]: `$1` subscription, `$2` instance,
/// `$3` lane, `$4` lease.
pub(super) fn claim_next_sql() -> String {
    format!(
        "UPDATE deliveries d
         SET lease_until = now() + $4, parked_at = NULL, actualizada_en = now()
         FROM subscriptions s, events e
         WHERE d.id = (
             SELECT id FROM deliveries
             WHERE subscription_id = $1 AND instance_id = $2 AND lane = $3 AND estado = 'pendiente'
             ORDER BY seq LIMIT 1)
           AND s.id = d.subscription_id AND e.event_id = d.event_id
           AND s.ordenado AND {CLAIMABLE_NOW}
         RETURNING {CLAIMED_COLUMNS}, d.intentos"
    )
}

/// Writes the job of the lowest open delivery of the claimed one's lane if
/// it was parked, and clears its mark. Runs after the head's update, so it
/// sees a park that committed while the update waited for its lock.
pub(super) async fn release_next(
    conn: &mut PgConnection,
    claimed: &Claimed,
) -> Result<Option<DeliveryId>> {
    let row = sqlx::query(RELEASE_NEXT)
        .bind(claimed.subscription_id.as_uuid())
        .bind(claimed.instance_id.as_uuid())
        .bind(claimed.lane.to_string())
        .fetch_optional(&mut *conn)
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let job = next_job(&row);
    enqueue(conn, std::slice::from_ref(&job)).await?;
    Ok(Some(DeliveryId::from_uuid(row.get("id"))))
}

/// The statement of [`release_next`]: `$1` subscription, `$2` instance,
/// `$3` lane.
pub(super) const RELEASE_NEXT: &str =
    "UPDATE deliveries SET parked_at = NULL, actualizada_en = now()
         WHERE id = (
             SELECT id FROM deliveries
             WHERE subscription_id = $1 AND instance_id = $2 AND lane = $3 AND estado = 'pendiente'
             ORDER BY seq LIMIT 1)
           AND parked_at IS NOT NULL
         RETURNING id, subscription_id, instance_id, lane, seq, intentos, proximo_intento";
