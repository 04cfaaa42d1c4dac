//! Fan-out: the deliveries of newly appended events, in the ingest
//! transaction, with one set-based insert — and, when a dispatcher runs in
//! the committing process, the first attempts it can start at once
//! ([`Handed`]).

use std::{collections::HashSet, time::Duration};

use motor_domain::{
    delivery::{DeliveryId, DeliveryJob, Lane},
    destination::Destination,
    outbox::{OutboxRecord, Topic},
    subscription::SubscriptionId,
    time::Timestamp,
    AppId, EventId, InstanceId,
};
use sqlx::PgConnection;

use super::Claimed;
use crate::{outbox, Result};

/// First attempts a commit hands to the dispatcher of its own process, once
/// it has committed (never before: a receiver must not see an event that
/// could still roll back).
#[derive(Debug, Clone, Default)]
pub struct Handed {
    /// Deliveries claimed in the fan-out itself (the head of a free lane of
    /// an ordered subscription, and an unordered subscription's deliveries
    /// within its room here): leased, with no job. The dispatcher
    /// attempts them now; if the process dies first, the lease runs out and
    /// the sweeper sends them.
    pub claimed: Vec<Claimed>,
    /// First attempts of unordered subscriptions' deliveries past their
    /// room ([`Taking`]), as jobs that were never written: the dispatcher
    /// claims them after the commit (a process that dies first leaves them
    /// to the sweeper).
    pub jobs: Vec<DeliveryJob>,
    /// The lowest new delivery of each ordered lane that had an open
    /// delivery: created parked with no job, for that delivery's finish to
    /// take. A finish that ran while this commit was in flight could not
    /// see it, so the dispatcher claims it after the commit if its lane is
    /// free by then ([`super::claim_freed`]).
    pub parked: Vec<ParkedHead>,
    /// Whether the commit's outbox records were all `{prefix}.events`
    /// records (the append wrote no job): nothing in Motor waits for
    /// those, so the relay may gather them for longer
    /// (`MOTOR_RELAY_EVENTS_PACE_MS`). `false`, the default, for any other
    /// commit.
    pub events_only: bool,
}

/// The lowest new delivery of an ordered lane that had an open delivery
/// ([`Handed::parked`]), and its lane.
#[derive(Debug, Clone)]
pub struct ParkedHead {
    pub delivery_id: DeliveryId,
    pub subscription_id: SubscriptionId,
    pub instance_id: InstanceId,
    pub lane: Lane,
}

impl Handed {
    pub fn is_empty(&self) -> bool {
        self.claimed.is_empty() && self.jobs.is_empty() && self.parked.is_empty()
    }
}

/// A delivery the fan-out created, as `sql/append.sql` returns it: the
/// append stores new events and creates their deliveries in one statement
/// (`ledger::write`), and [`hand_over`] takes it from there.
///
/// The fan-out creates one `pendiente` live-lane delivery for every new
/// event and every subscription of the instance's app that is not
/// `eliminada` and covers it (`instancias` empty or naming the instance,
/// `tipos` empty or naming the type), each due at once. Deliveries of a
/// paused or suspended subscription are created parked: they have no job,
/// so when the head that reactivation releases finishes, it releases the
/// next one, and so on.
///
/// With a lease (a dispatcher runs in this process), the lowest new
/// delivery of each ordered `activa` subscription whose live lane has no
/// open delivery is claimed as it is inserted — leased, no job — and
/// handed over in [`Handed::claimed`]; the instances' row locks (held by
/// the caller) keep any other insert out of the lane meanwhile. The lane's
/// other new deliveries, and all of them when the lane has an open
/// delivery, are created parked with no job: the finish of the delivery
/// before each claims it (the chain) or releases it. The lowest of a lane
/// that had an open delivery is returned in [`Handed::parked`], for the
/// dispatcher to claim after the commit should its lane have freed
/// meanwhile. An unordered `activa` subscription's new deliveries are
/// claimed as they are inserted too, up to its room in this process
/// ([`Taking`]), and handed over in [`Handed::claimed`]: no claim
/// statement each after the commit (at 2,000 events/s to one unordered
/// subscription that was one transaction an event, Postgres's largest
/// cost). Those past its room get no job either: they are returned in
/// [`Handed::jobs`] for the dispatcher to claim when one of its chains can
/// take them. (Without a lease, or while the subscription is
/// held by its throttle, every delivery gets its job.) A process that dies
/// before its dispatcher took them leaves them due and unleased: the
/// sweeper writes their jobs ([`super::due_lane_heads`]).
///
/// The subscription's state is read without a lock: if a reactivation
/// commits meanwhile, its [`super::release_lane_heads`] cannot see these
/// rows and the sweeper sends them ([`super::due_lane_heads`]); a pause that
/// commits meanwhile makes the job's claim fail, and the job is dropped (a
/// delivery claimed at insert is recorded stale or its attempt goes out:
/// the pause raced the event, as with any attempt already claimed).
pub(crate) struct FannedOut {
    pub id: uuid::Uuid,
    pub subscription_id: uuid::Uuid,
    pub app_id: uuid::Uuid,
    pub instance_id: uuid::Uuid,
    pub event_id: uuid::Uuid,
    pub seq: i64,
    /// `live`, or `live/<orden_clave>` under `clave` ordering.
    pub lane: String,
    pub due: Timestamp,
    pub lease_until: Option<Timestamp>,
    pub parked: bool,
    pub created_at: Timestamp,
    pub active: bool,
    pub ordered: bool,
    pub url: String,
    pub max_per_second: Option<i32>,
    pub subscription_version: i64,
    pub taken: bool,
}

/// What the fan-out's `rows` (in seq order) hand to this process's
/// dispatcher; the jobs of the rest are written to the outbox
/// (`{prefix}.deliveries`, key = instance, in seq order).
pub(crate) async fn hand_over(conn: &mut PgConnection, rows: Vec<FannedOut>) -> Result<Handed> {
    let mut handed = Handed::default();
    let mut jobs = Vec::new();
    // Lanes whose lowest new delivery was seen (rows come in seq order).
    let mut lanes = HashSet::new();
    for r in rows.into_iter().filter(|r| r.active) {
        let delivery_id = DeliveryId::from_uuid(r.id);
        let subscription_id = SubscriptionId::from_uuid(r.subscription_id);
        let seq = r.seq;
        let instance = InstanceId::from_uuid(r.instance_id);
        // The column only ever holds Lane's own text.
        let lane: Lane = r.lane.parse().unwrap_or(Lane::Live);
        let lowest = lanes.insert((r.subscription_id, r.instance_id, r.lane));
        if r.parked {
            if lowest {
                handed.parked.push(ParkedHead {
                    delivery_id,
                    subscription_id,
                    instance_id: instance,
                    lane,
                });
            }
            continue;
        }
        if let Some(lease_until) = r.lease_until {
            handed.claimed.push(Claimed {
                delivery_id,
                subscription_id,
                app_id: AppId::from_uuid(r.app_id),
                instance_id: instance,
                event_id: EventId::from_uuid(r.event_id),
                lane,
                seq,
                replay_of: None,
                attempt: 1,
                destination: Destination::parse(&r.url, "url").ok(),
                ordered: r.ordered,
                max_per_second: r.max_per_second.map(i64::from),
                subscription_version: r.subscription_version,
                // The caller holds the envelope it just stored.
                envelope: String::new(),
                created_at: r.created_at,
                lease_until,
            });
            continue;
        }
        let job = DeliveryJob {
            delivery_id,
            subscription_id,
            instance_id: instance,
            lane,
            seq,
            attempt: 1,
            due_at: r.due,
        };
        if r.taken {
            handed.jobs.push(job);
        } else {
            jobs.push(job);
        }
    }
    handed.events_only = jobs.is_empty();
    outbox::insert(
        conn,
        jobs.iter()
            .map(|j| OutboxRecord::job_on(j, Topic::Deliveries)),
    )
    .await?;
    Ok(handed)
}

/// What the fan-out may claim for the dispatcher of the committing
/// process: first attempts it can start at once.
#[derive(Debug, Clone, Default)]
pub struct Taking {
    /// The lease of a first attempt claimed in the fan-out (the attempt's
    /// timeout and a margin).
    pub lease: Duration,
    /// How many new deliveries of an unordered subscription the fan-out
    /// claims at most of each instance of the batch (its room), when
    /// [`Self::busy`] does not name it; the
    /// rest are handed over as jobs ([`Handed::jobs`]). A claimed delivery
    /// waits in memory for one of its subscription's request slots, its
    /// lease running; a job waits unclaimed.
    pub room: u32,
    /// Unordered subscriptions with chains running in this process, and
    /// the room each has left.
    pub busy: Vec<(SubscriptionId, u32)>,
}

/// The roles that share the committing process, as the ingest path sees
/// them: a dispatcher that takes first attempts straight after the commit,
/// and a relay woken instead of waiting for its next poll.
pub trait AfterCommit: Send + Sync {
    /// What the fan-out may claim for this process's dispatcher, or `None`
    /// when no dispatcher runs here.
    fn taking(&self) -> Option<Taking>;

    /// Takes what a commit handed over; call it right after the commit,
    /// never before.
    fn committed(&self, handed: Handed);
}
