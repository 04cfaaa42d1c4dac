//! Fan-out: the deliveries of newly appended events, in the ingest
//! transaction, with one set-based insert.

use motor_domain::{
    delivery::{DeliveryId, DeliveryJob, Lane},
    outbox::{OutboxRecord, Topic},
    subscription::SubscriptionId,
    time::Timestamp,
    InstanceId,
};
use sqlx::{PgConnection, Row};

use crate::{outbox, Result};

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
    let rows = sqlx::query(
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
             RETURNING id, subscription_id, seq, proximo_intento
         )
         SELECT c.id, c.subscription_id, c.seq, c.proximo_intento, s.estado = 'activa' AS activa
         FROM created c JOIN subscriptions s ON s.id = c.subscription_id
         ORDER BY c.seq, c.subscription_id",
    )
    .bind(instance.as_uuid())
    .bind(after_seq)
    .bind(up_to_seq)
    .fetch_all(&mut *conn)
    .await?;
    let created = rows.len() as u64;
    let jobs: Vec<DeliveryJob> = rows
        .iter()
        .filter(|r| r.get::<bool, _>("activa"))
        .map(|r| DeliveryJob {
            delivery_id: DeliveryId::from_uuid(r.get("id")),
            subscription_id: SubscriptionId::from_uuid(r.get("subscription_id")),
            instance_id: instance,
            lane: Lane::Live,
            seq: r.get("seq"),
            attempt: 1,
            due_at: r.get::<Timestamp, _>("proximo_intento"),
        })
        .collect();
    outbox::insert(
        conn,
        jobs.iter()
            .map(|j| OutboxRecord::job_on(j, Topic::Deliveries)),
    )
    .await?;
    Ok(created)
}
