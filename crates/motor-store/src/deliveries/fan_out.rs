//! Fan-out: the deliveries of newly appended events, in the ingest
//! transaction, with one set-based insert.

use motor_domain::{delivery::Lane, outbox_shard, InstanceId};
use sqlx::PgConnection;

use super::DELIVERIES_TOPIC;
use crate::Result;

/// Creates one `pendiente` live-lane delivery for every event of `instance`
/// with `after_seq < seq <= up_to_seq` and every subscription of the
/// instance's app that is not `eliminada` and covers it (`instancias` empty
/// or naming the instance, `tipos` empty or naming the type), and writes the
/// first-attempt job of each delivery whose subscription is `activa` to the
/// outbox (`{prefix}.deliveries`, key = instance, in seq order). Returns how
/// many deliveries it created. Deliveries of a paused or suspended
/// subscription are created parked: they have no job, so when the head that
/// reactivation releases finishes, it releases the next one, and so on.
///
/// The subscription's state is read without a lock: if a reactivation
/// commits meanwhile, its [`super::release_lane_heads`] cannot see these
/// rows and the sweeper sends them ([`super::due_lane_heads`]); a pause that
/// commits meanwhile makes the job's claim fail, and the job is dropped.
pub(crate) async fn fan_out(
    conn: &mut PgConnection,
    instance: InstanceId,
    after_seq: i64,
    up_to_seq: i64,
) -> Result<u64> {
    // One statement (it runs under the instance's lock): the deliveries and
    // their jobs. A job is built here as `DeliveryJob::to_json` would write
    // it (the fan-out test reads every field back through
    // `DeliveryJob::from_json`), with `job_headers`' headers.
    let created: i64 = sqlx::query_scalar(&format!(
        "WITH created AS (
             INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq, lane, parked_at)
             SELECT motor_uuid_v7(), s.id, s.app_id, e.instance_id, e.event_id, e.seq, 'live',
                    CASE WHEN s.estado <> 'activa' THEN now() END
             FROM events e
             JOIN instances i ON i.id = e.instance_id
             JOIN subscriptions s ON s.app_id = i.app_id
             WHERE e.instance_id = $1 AND e.seq > $2 AND e.seq <= $3
               AND s.estado <> 'eliminada'
               AND (cardinality(s.instancias) = 0 OR e.instance_id = ANY (s.instancias))
               AND (cardinality(s.tipos) = 0 OR e.type = ANY (s.tipos))
             ORDER BY e.seq, s.id
             RETURNING id, subscription_id, seq, parked_at IS NULL AS activa,
                       to_char(proximo_intento AT TIME ZONE 'UTC',
                               'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS due_at
         ), jobs AS (
             INSERT INTO outbox (shard, topic, key, payload, headers)
             SELECT $4, '{DELIVERIES_TOPIC}', $1::text,
                    convert_to(json_build_object(
                        'delivery_id', id, 'subscription_id', subscription_id,
                        'instance_id', $1, 'lane', '{live}', 'seq', seq, 'attempt', 1,
                        'due_at', due_at)::text, 'UTF8'),
                    jsonb_build_object(
                        'delivery_id', id::text, 'subscription_id', subscription_id::text,
                        'seq', seq::text, 'attempt', '1', 'due_at', due_at)
             FROM created WHERE activa
             ORDER BY seq, subscription_id
         )
         SELECT count(*) FROM created",
        live = Lane::Live,
    ))
    .bind(instance.as_uuid())
    .bind(after_seq)
    .bind(up_to_seq)
    .bind(outbox_shard(instance))
    .fetch_one(&mut *conn)
    .await?;
    Ok(created as u64)
}
