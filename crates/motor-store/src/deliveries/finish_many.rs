//! Group commit of the hot finish: many attempts that ended `entregada`
//! (from different lanes, usually of many subscriptions), each with its
//! lane's next delivery claimed for the same dispatcher, recorded in one
//! statement — [`super::record_attempt`]'s fused case, set-based.

use std::time::Duration;

use motor_domain::delivery::DeliveryState;
use sqlx::Row;
use uuid::Uuid;

use super::{
    claim::{claimed, CLAIMED_COLUMNS},
    finish::release_next,
    Attempt, Claimed, Recorded, CLAIMABLE_NOW,
};
use crate::{Pool, Result};

/// Records each `(claimed, attempt)` as delivered and claims the next
/// delivery of its lane for `lease` when it can be claimed now, in one
/// statement; answers in input order. A delivery no longer at its attempt
/// is [`Recorded::Stale`]. A next delivery that was parked but cannot be
/// claimed now gets its job in a transaction of its own (a crash in
/// between is a lost wake-up the sweeper repairs), as in the single case.
///
/// The attempts must be of distinct deliveries, and (ordered lanes run one
/// delivery at a time) of distinct ordered lanes.
pub async fn record_delivered_many(
    pool: &Pool,
    done: &[(&Claimed, &Attempt)],
    lease: Duration,
) -> Result<Vec<Recorded>> {
    let lease = chrono::TimeDelta::from_std(lease).unwrap_or(chrono::TimeDelta::MAX);
    let ids: Vec<Uuid> = done.iter().map(|(c, _)| *c.delivery_id.as_uuid()).collect();
    let numbers: Vec<i32> = done
        .iter()
        .map(|(c, _)| i32::try_from(c.attempt).unwrap_or(i32::MAX))
        .collect();
    let statuses: Vec<Option<i32>> = done.iter().map(|(_, a)| a.status.map(i32::from)).collect();
    let started: Vec<_> = done.iter().map(|(_, a)| a.iniciado_en).collect();
    let durations: Vec<i32> = done
        .iter()
        .map(|(_, a)| i32::try_from(a.duracion_ms).unwrap_or(i32::MAX))
        .collect();
    // Key ids never hold a comma (`whk_` and hex); one text per attempt
    // keeps the arrays one-dimensional.
    let key_ids: Vec<String> = done.iter().map(|(_, a)| a.key_ids.join(",")).collect();
    let rows = sqlx::query(&record_delivered_many_sql())
        .bind(&ids)
        .bind(&numbers)
        .bind(&statuses)
        .bind(&started)
        .bind(&durations)
        .bind(&key_ids)
        .bind(lease)
        .fetch_all(pool)
        .await?;

    let mut answers = Vec::with_capacity(done.len());
    for (claimed_now, _) in done {
        let row = rows
            .iter()
            .find(|r| r.get::<Uuid, _>("input_id") == *claimed_now.delivery_id.as_uuid())
            .expect("one row per input");
        if row.get::<Option<Uuid>, _>("head").is_none() {
            answers.push(Recorded::Stale);
            continue;
        }
        let (mut next, mut released) = (None, None);
        if row.get::<Option<Uuid>, _>("id").is_some() {
            let intentos: i32 = row.get("intentos");
            next = Some(Box::new(claimed(
                row,
                u32::try_from(intentos).unwrap_or(0) + 1,
            )));
        } else if row.get::<Option<bool>, _>("following_parked") == Some(true) {
            let mut tx = pool.begin().await?;
            released = release_next(&mut tx, claimed_now).await?;
            tx.commit().await?;
        }
        answers.push(Recorded::Done {
            estado: DeliveryState::Delivered,
            next,
            released,
            suspended: false,
        });
    }
    Ok(answers)
}

/// The statement of [`record_delivered_many`]: `$1` delivery ids, `$2`
/// attempt numbers, `$3` statuses, `$4` start times, `$5` durations (ms),
/// `$6` key ids (comma-joined), `$7` the next one's lease.
pub(super) fn record_delivered_many_sql() -> String {
    format!(
        "WITH input AS (
             SELECT * FROM UNNEST($1::uuid[], $2::int[], $3::int[], $4::timestamptz[], $5::int[],
                                  $6::text[])
                 AS t(id, numero, status, iniciado_en, duracion_ms, key_ids)
         ), head AS (
             UPDATE deliveries d
             SET estado = 'entregada', intentos = i.numero, ultimo_status = i.status,
                 ultimo_error = NULL, proximo_intento = NULL, lease_until = NULL,
                 parked_at = NULL, entregada_en = now(), actualizada_en = now()
             FROM input i
             WHERE d.id = i.id AND d.estado = 'pendiente' AND d.intentos = i.numero - 1
             RETURNING d.id, d.subscription_id, d.instance_id, d.lane
         ), attempt AS (
             INSERT INTO delivery_attempts (delivery_id, numero, iniciado_en, duracion_ms, status,
                                            error, key_ids)
             SELECT h.id, i.numero, i.iniciado_en, i.duracion_ms, i.status, NULL,
                    string_to_array(i.key_ids, ',')
             FROM head h JOIN input i ON i.id = h.id
         ), healed AS (
             -- A success forgets its subscription's failures (a probe of
             -- the key when it had none).
             DELETE FROM subscription_health
             WHERE subscription_id IN (SELECT subscription_id FROM head)
         ), following AS (
             SELECT h.id AS head, f.id, f.parked_at IS NOT NULL AS parked
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
             RETURNING {CLAIMED_COLUMNS}, d.intentos, f.head AS after_head
         )
         SELECT i.id AS input_id, h.id AS head, f.parked AS following_parked, n.*
         FROM input i
         LEFT JOIN head h ON h.id = i.id
         LEFT JOIN following f ON f.head = h.id
         LEFT JOIN next n ON n.after_head = h.id"
    )
}
