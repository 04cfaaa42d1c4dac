//! Fan-out: the deliveries of newly appended events, in the ingest
//! transaction, with one set-based insert — and, when a dispatcher runs in
//! the committing process, the first attempts it can start at once
//! ([`Handed`]).

use std::time::Duration;

use motor_domain::{
    delivery::{DeliveryId, DeliveryJob, Lane},
    destination::Destination,
    outbox::{OutboxRecord, Topic},
    subscription::SubscriptionId,
    time::Timestamp,
    AppId, EventId, InstanceId,
};
use sqlx::{PgConnection, Row};

use super::Claimed;
use crate::{outbox, Result};

/// First attempts a commit hands to the dispatcher of its own process, once
/// it has committed (never before: a receiver must not see an event that
/// could still roll back).
#[derive(Debug, Clone, Default)]
pub struct Handed {
    /// Deliveries claimed in the fan-out itself (the head of a free lane of
    /// an ordered subscription): leased, with no job. The dispatcher attempts
    /// them now; if the process dies first, the lease runs out and the
    /// sweeper sends them.
    pub claimed: Vec<Claimed>,
    /// Jobs of unordered subscriptions' deliveries: written to the outbox as
    /// usual (the durable path) and handed over too, so the first attempt
    /// need not wait for Kafka; the job's copy from Kafka finds the attempt
    /// taken.
    pub jobs: Vec<DeliveryJob>,
}

impl Handed {
    pub fn is_empty(&self) -> bool {
        self.claimed.is_empty() && self.jobs.is_empty()
    }

    pub fn extend(&mut self, other: Handed) {
        self.claimed.extend(other.claimed);
        self.jobs.extend(other.jobs);
    }
}

/// Creates one `pendiente` live-lane delivery for every event of each
/// `(instance, after_seq, up_to_seq)` range (`after_seq < seq <= up_to_seq`)
/// and every subscription of the instance's app that is not `eliminada` and
/// covers it (`instancias` empty or naming the instance, `tipos` empty or
/// naming the type), and writes the first-attempt job of each delivery whose
/// subscription is `activa` to the outbox (`{prefix}.deliveries`, key =
/// instance, in seq order), in one statement whatever the number of ranges. Deliveries of a paused or suspended
/// subscription are created parked: they have no job, so when the head that
/// reactivation releases finishes, it releases the next one, and so on.
///
/// With `lease` (a dispatcher runs in this process), the lowest new
/// delivery of each ordered `activa` subscription whose live lane has no
/// open delivery is claimed as it is inserted — leased for `lease`, no job
/// — and returned in [`Handed::claimed`]; the instances' row locks (held by
/// the caller) keep any other insert out of the lane meanwhile. Jobs of
/// unordered subscriptions are returned in [`Handed::jobs`] too.
///
/// The subscription's state is read without a lock: if a reactivation
/// commits meanwhile, its [`super::release_lane_heads`] cannot see these
/// rows and the sweeper sends them ([`super::due_lane_heads`]); a pause that
/// commits meanwhile makes the job's claim fail, and the job is dropped (a
/// delivery claimed at insert is recorded stale or its attempt goes out:
/// the pause raced the event, as with any attempt already claimed).
pub(crate) async fn fan_out(
    conn: &mut PgConnection,
    ranges: &[(InstanceId, i64, i64)],
    lease: Option<Duration>,
) -> Result<Handed> {
    let lease = lease.map(|l| chrono::TimeDelta::from_std(l).unwrap_or(chrono::TimeDelta::MAX));
    let instances: Vec<uuid::Uuid> = ranges.iter().map(|r| *r.0.as_uuid()).collect();
    let after: Vec<i64> = ranges.iter().map(|r| r.1).collect();
    let up_to: Vec<i64> = ranges.iter().map(|r| r.2).collect();
    let rows = sqlx::query(FAN_OUT)
        .bind(&instances)
        .bind(&after)
        .bind(&up_to)
        .bind(lease)
        .fetch_all(&mut *conn)
        .await?;
    let mut handed = Handed::default();
    let mut jobs = Vec::new();
    for r in rows.iter().filter(|r| r.get::<bool, _>("activa")) {
        let delivery_id = DeliveryId::from_uuid(r.get("id"));
        let subscription_id = SubscriptionId::from_uuid(r.get("subscription_id"));
        let seq: i64 = r.get("seq");
        let instance = InstanceId::from_uuid(r.get("instance_id"));
        if let Some(lease_until) = r.get::<Option<Timestamp>, _>("reservado_hasta") {
            handed.claimed.push(Claimed {
                delivery_id,
                subscription_id,
                app_id: AppId::from_uuid(r.get("app_id")),
                instance_id: instance,
                event_id: EventId::from_uuid(r.get("event_id")),
                lane: Lane::Live,
                seq,
                replay_of: None,
                attempt: 1,
                destination: Destination::parse(r.get("url"), "url").ok(),
                ordenado: r.get("ordenado"),
                max_por_segundo: r.get::<Option<i32>, _>("max_por_segundo").map(i64::from),
                subscription_version: r.get("subscription_version"),
                // The caller holds the envelope it just stored.
                envelope: String::new(),
                creada_en: r.get("creado_en"),
                lease_until,
            });
            continue;
        }
        let job = DeliveryJob {
            delivery_id,
            subscription_id,
            instance_id: instance,
            lane: Lane::Live,
            seq,
            attempt: 1,
            due_at: r.get::<Timestamp, _>("proximo_intento"),
        };
        if lease.is_some() && !r.get::<bool, _>("ordenado") {
            handed.jobs.push(job.clone());
        }
        jobs.push(job);
    }
    outbox::insert(
        conn,
        jobs.iter()
            .map(|j| OutboxRecord::job_on(j, Topic::Deliveries)),
    )
    .await?;
    Ok(handed)
}

/// The roles that share the committing process, as the ingest path sees
/// them: a dispatcher that takes first attempts straight after the commit,
/// and a relay woken instead of waiting for its next poll.
pub trait AfterCommit: Send + Sync {
    /// The lease of a first attempt claimed in the fan-out (the attempt's
    /// timeout and a margin), or `None` when no dispatcher runs here.
    fn lease(&self) -> Option<Duration>;

    /// Takes what a commit handed over; call it right after the commit,
    /// never before.
    fn committed(&self, handed: Handed);
}

/// The statement of [`fan_out`]: `$1` instances, `$2` the seq each range
/// starts after, `$3` the seq it ends at, `$4` the lease of a claim at
/// insert (`NULL`: none).
pub(super) const FAN_OUT: &str =
        "WITH candidates AS (
             SELECT motor_uuid_v7() AS id, s.id AS subscription_id, s.app_id, e.instance_id,
                    e.event_id, e.seq, s.estado, s.ordenado,
                    row_number() OVER (PARTITION BY s.id, e.instance_id ORDER BY e.seq) AS nth
             FROM UNNEST($1::uuid[], $2::bigint[], $3::bigint[]) AS r(instance_id, after_seq, up_to_seq)
             -- OFFSET 0 keeps the range an index condition per instance
             -- (flattened, the planner reads every event of the instance).
             CROSS JOIN LATERAL (
                 SELECT * FROM events e
                 WHERE e.instance_id = r.instance_id
                   AND e.seq > r.after_seq AND e.seq <= r.up_to_seq
                 OFFSET 0) e
             JOIN instances i ON i.id = e.instance_id
             JOIN subscriptions s ON s.app_id = i.app_id
             WHERE s.estado <> 'eliminada' AND NOT i.sistema
               AND (cardinality(s.instancias) = 0 OR e.instance_id = ANY (s.instancias))
               AND (cardinality(s.tipos) = 0 OR e.type = ANY (s.tipos))
         ), busy AS (
             -- Ordered lanes that already hold an open delivery: one probe
             -- of the open-lane index per lane (the ORDER BY keeps it one).
             SELECT c.subscription_id, c.instance_id
             FROM candidates c
             CROSS JOIN LATERAL (
                 SELECT 1 FROM deliveries b
                 WHERE b.subscription_id = c.subscription_id AND b.instance_id = c.instance_id
                   AND b.lane = 'live' AND b.estado = 'pendiente'
                 ORDER BY b.seq
                 LIMIT 1) open
             WHERE $4::interval IS NOT NULL AND c.nth = 1 AND c.ordenado AND c.estado = 'activa'
         ), created AS (
             INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq, lane,
                                     aparcado_en, reservado_hasta)
             SELECT c.id, c.subscription_id, c.app_id, c.instance_id, c.event_id, c.seq, 'live',
                    CASE WHEN c.estado <> 'activa' THEN now() END,
                    CASE WHEN $4::interval IS NOT NULL AND c.estado = 'activa' AND c.ordenado
                              AND c.nth = 1
                              AND NOT EXISTS (
                                  SELECT 1 FROM subscription_throttle t
                                  WHERE t.subscription_id = c.subscription_id
                                    AND t.hasta > now())
                              AND NOT EXISTS (
                                  SELECT 1 FROM busy
                                  WHERE busy.subscription_id = c.subscription_id
                                    AND busy.instance_id = c.instance_id)
                         THEN now() + $4 END
             FROM candidates c
             ORDER BY c.instance_id, c.seq, c.subscription_id
             RETURNING id, subscription_id, app_id, instance_id, event_id, seq, proximo_intento,
                       reservado_hasta, creado_en
         )
         SELECT c.*, s.estado = 'activa' AS activa, s.ordenado, s.url, s.max_por_segundo,
                s.version AS subscription_version
         FROM created c JOIN subscriptions s ON s.id = c.subscription_id
         ORDER BY c.instance_id, c.seq, c.subscription_id";
