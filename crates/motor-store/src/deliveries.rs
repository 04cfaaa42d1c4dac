//! Deliveries in Postgres: the fan-out of new events ([`FannedOut`]), the
//! claim that guards every attempt ([`claim`]), recording an attempt with
//! everything that follows from it ([`record_attempt`]), releasing and
//! sweeping lane heads ([`release_lane_heads`], [`due_lane_heads`],
//! [`requeue`]) and the reads behind `GET /v1/deliveries` ([`read`]).
//!
//! Kafka only carries [`DeliveryJob`]s, pointers to rows here; every job is
//! written to the outbox in the transaction that decided it. Postgres
//! decides whether a job still means something: a stale or duplicate job
//! finds nothing to claim.
//!
//! Decisions the contract leaves open:
//! - A delivery of a `pausada` or `suspendida` subscription is created
//!   `pendiente` but gets no job: its claim would fail. Reactivation calls
//!   [`release_lane_heads`], which writes jobs for the head of every lane.
//! - A replay (`crate::replays`) creates its deliveries in a lane of its own
//!   and writes jobs through [`release_lane`]: the head of each instance's
//!   part of the lane when ordered, every delivery when not, none while the
//!   subscription is paused or suspended.
//! - A claim that finds a lower-seq delivery of its ordered lane still open
//!   marks the delivery parked (`aparcado_en`). The head's finish claims the
//!   next delivery of its lane in its own transaction and hands it to the
//!   same dispatcher ([`Next::Claim`]: a lane with a backlog costs one
//!   commit per delivery, and nothing travels through Kafka); when it does
//!   not ([`Next::Release`], or the next one cannot be claimed now) it
//!   writes the job of the next delivery if that one was parked. The park
//!   locks the blockers (`FOR SHARE`), so a finish that commits in between
//!   is either seen by the lane check or sees the park; the sweeper covers
//!   lost wake-ups either way.
//! - An unordered subscription's delivered attempt claims, the same way,
//!   the subscription's oldest due delivery that nobody holds, so its
//!   backlog (a burst, or what accumulated while it was suspended) moves
//!   at the receiver's pace without a job and a claim per delivery; the
//!   jobs of what a chain already claimed find nothing.

mod cancel;
mod claim;
mod fan_out;
mod finish;
mod finish_many;
mod lane_hints;
pub mod read;
mod retention;
mod sweep;

use chrono::Utc;
use motor_domain::{
    delivery::{DeliveryId, DeliveryJob, Lane},
    outbox::OutboxRecord,
    subscription::SubscriptionId,
    time::Timestamp,
    InstanceId,
};
use sqlx::PgConnection;
use uuid::Uuid;

pub use cancel::cancel_pending;
pub use claim::{
    claim, claim_freed, claim_freed_by, look_freed, renew, Claim, Claimed, Freed, Skip,
};
pub(crate) use fan_out::{hand_over, FannedOut};
pub use fan_out::{AfterCommit, Handed, ParkedHead, Taking};
pub use finish::{record_attempt, record_attempt_parking, Attempt, Next, Recorded};
pub use finish_many::{record_delivered_many, record_delivered_many_on};
pub use lane_hints::{LaneHints, FORGET_AFTER, LANES_PER_PASS};
pub use retention::{purge_contract, purge_contract_cancelled, purge_delivered};
pub use sweep::{due_lane_heads, release_lane, release_lane_heads, requeue};

/// Delivers the system instance's newest event (just appended, under the
/// instance's lock) to every `activa` subscription of `app` but `except`,
/// whatever their `instancias` and `tipos`: one `pendiente` delivery each
/// in its live lane, and its job (a job for a delivery that is not the
/// head of its ordered lane parks, and the head's finish releases it).
/// How many deliveries it made.
pub(crate) async fn fan_out_system(
    conn: &mut PgConnection,
    app: motor_domain::AppId,
    except: SubscriptionId,
    system: InstanceId,
) -> Result<usize> {
    let rows = sqlx::query_as!(
        JobRow,
        "WITH newest AS (
             SELECT event_id, seq FROM events WHERE instance_id = $3 ORDER BY seq DESC LIMIT 1
         )
         INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq, lane)
         SELECT motor_uuid_v7(), s.id, s.app_id, $3, n.event_id, n.seq, 'live'
         FROM subscriptions s, newest n
         WHERE s.app_id = $1 AND s.estado = 'activa' AND s.id <> $2
           AND s.entorno = (SELECT o.entorno FROM subscriptions o WHERE o.id = $2)
         ORDER BY s.id
         RETURNING id, subscription_id, instance_id, lane, seq, intentos AS attempts_made,
                   proximo_intento AS due",
        Uuid::from(app),
        except.as_uuid(),
        Uuid::from(system),
    )
    .fetch_all(&mut *conn)
    .await?;
    let jobs: Vec<DeliveryJob> = rows.into_iter().map(JobRow::next_job).collect();
    enqueue(conn, &jobs).await?;
    Ok(jobs.len())
}

use crate::{outbox, Result};

/// The retry ladder a delivery keeps: the one its row names, or — the
/// first time it is asked, at the delivery's first failed attempt —
/// `ladder`, written then and never changed after (a subscription that
/// changes contract does not change its pending deliveries' ladders).
/// One statement; a row that is gone answers `ladder`.
pub async fn keep_ladder(
    db: impl sqlx::PgExecutor<'_>,
    delivery: DeliveryId,
    ladder: motor_domain::contract::LadderId,
) -> Result<String> {
    let wanted = ladder.to_string();
    let kept = sqlx::query_scalar!(
        r#"UPDATE deliveries SET escalera = COALESCE(escalera, $2)
           WHERE id = $1
           RETURNING escalera AS "escalera!""#,
        delivery.as_uuid(),
        &wanted,
    )
    .fetch_optional(db)
    .await?;
    Ok(kept.unwrap_or(wanted))
}

/// Writes each job to the outbox on the topic its `due_at` calls for
/// ([`Topic::for_job`](motor_domain::outbox::Topic::for_job)), key = its
/// instance, in the given order.
async fn enqueue(conn: &mut PgConnection, jobs: &[DeliveryJob]) -> Result<()> {
    let now = Utc::now();
    outbox::insert(conn, jobs.iter().map(|j| OutboxRecord::job(j, now))).await
}

/// A delivery row as a statement that writes a job for it returns it:
/// `RETURNING id, subscription_id, instance_id, lane, seq,
/// intentos AS attempts_made, proximo_intento AS due`.
pub(crate) struct JobRow {
    pub id: Uuid,
    pub subscription_id: Uuid,
    pub instance_id: Uuid,
    pub lane: String,
    pub seq: i64,
    pub attempts_made: i32,
    pub due: Option<Timestamp>,
}

impl JobRow {
    /// The job for the row's next attempt: attempt `intentos + 1`, due at
    /// `proximo_intento` or now, whichever is later.
    pub(crate) fn next_job(self) -> DeliveryJob {
        DeliveryJob {
            delivery_id: DeliveryId::from_uuid(self.id),
            subscription_id: SubscriptionId::from_uuid(self.subscription_id),
            instance_id: InstanceId::from_uuid(self.instance_id),
            // The column only ever holds Lane's own text.
            lane: self.lane.parse().unwrap_or(Lane::Live),
            seq: self.seq,
            attempt: u32::try_from(self.attempts_made).unwrap_or(0) + 1,
            due_at: self.due.map_or_else(Utc::now, |d| d.max(Utc::now())),
        }
    }
}

/// [`enqueue`] for the other modules of the crate.
pub(crate) async fn enqueue_jobs(conn: &mut PgConnection, jobs: &[DeliveryJob]) -> Result<()> {
    enqueue(conn, jobs).await
}

/// What the statements that take rows of `deliveries` by key (`id = ANY
/// (…)`: the group commit of delivered attempts, the claim after a commit,
/// the sweeper's `requeue`) or read a range of an index in its order up to
/// a limit (reactivation's `release`, retention's purge) set in their
/// transactions first. A generic plan made while `deliveries` was young
/// (never vacuumed: the planner takes the table's size from its file, ten
/// pages at the least) may answer them with a sequential or a bitmap scan,
/// where reading every page (or the whole range, then sorting it) costs
/// less than the probes; a connection keeps that plan as the table grows,
/// until autovacuum's first `ANALYZE`. Seen: the group commit reading
/// 41,879 rows a batch, planned at 24 pages, a third of Postgres' CPU in a
/// closed loop; the sweeper's requeue reading 450,000 a pass; `release`
/// reading 200,000 open deliveries for the 1,000 oldest. With both off the
/// plan probes the indexes at any size. (In `release`'s case they stay off
/// for the rest of the caller's transaction.) `set_config(…, true)` is `SET
/// LOCAL`, both in one statement. The group commit of delivered attempts
/// runs in `motor_record_delivered` (migration 0024; its body now
/// 0030's) and the claim after a commit in `motor_claim_freed` (0031),
/// whose definitions carry the same settings and keep generic plans too:
/// the group commit's custom plan, sure of its arrays' lengths, looked
/// cheaper to some connections, which then planned it anew at every call
/// (2,055 plans in 11,099 calls, 710 ms of Postgres' CPU in 40 s at
/// 200–400 events/s).
pub(crate) const BY_KEY_SETUP: &str = "SELECT set_config('enable_seqscan', 'off', true), \
                                       set_config('enable_bitmapscan', 'off', true)";

/// Runs [`BY_KEY_SETUP`] in `tx`.
async fn by_key(tx: &mut PgConnection) -> Result<()> {
    sqlx::query(BY_KEY_SETUP).execute(tx).await?;
    Ok(())
}

/// A statement that runs on every attempt or every sweeper pass, whose cost
/// must not grow with the backlog: its name (the function that runs it),
/// its parameter types (as `PREPARE` takes them), what its transaction
/// sets first (`SET LOCAL …`, or nothing) and its text. For the test that
/// checks their plans on a large table; not an API.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct HotStatement {
    pub name: &'static str,
    pub params: &'static str,
    pub setup: &'static str,
    pub sql: String,
}

/// Every [`HotStatement`] of this module: the texts its functions run
/// (`sql/*.sql`, checked against the schema when the crate is built), and
/// the relay's read ([`outbox::fetch_after`], which reads the ledger).
#[doc(hidden)]
pub fn hot_statements() -> Vec<HotStatement> {
    let hot = |name, params, sql: &str| HotStatement {
        name,
        params,
        setup: "",
        sql: sql.to_owned(),
    };
    vec![
        hot(
            "claim",
            "uuid, bigint, interval",
            include_str!("deliveries/sql/claim.sql"),
        ),
        hot(
            "park_or_why_not",
            "uuid, bigint",
            include_str!("deliveries/sql/park_or_why_not.sql"),
        ),
        hot(
            "record_attempt",
            "uuid, integer, text, integer, text, timestamptz",
            include_str!("deliveries/sql/record_attempt.sql"),
        ),
        hot(
            "claim_next",
            "uuid, uuid, text, interval",
            include_str!("deliveries/sql/claim_next.sql"),
        ),
        hot(
            "release_next",
            "uuid, uuid, text",
            include_str!("deliveries/sql/release_next.sql"),
        ),
        HotStatement {
            setup: BY_KEY_SETUP,
            ..hot(
                "record_delivered_many",
                "uuid[], integer[], integer[], timestamptz[], integer[], text[]",
                include_str!("deliveries/sql/record_delivered_many.sql"),
            )
        },
        HotStatement {
            setup: BY_KEY_SETUP,
            ..hot(
                "next_after_many",
                "uuid[], uuid[], uuid[], text[], uuid[], interval, timestamptz",
                include_str!("deliveries/sql/next_after_many.sql"),
            )
        },
        HotStatement {
            setup: BY_KEY_SETUP,
            ..hot(
                "claim_freed",
                "uuid[], interval",
                include_str!("deliveries/sql/claim_freed.sql"),
            )
        },
        HotStatement {
            setup: BY_KEY_SETUP,
            ..hot(
                "finishing_lanes",
                "uuid[]",
                include_str!("deliveries/sql/finishing_lanes.sql"),
            )
        },
        hot(
            "append",
            "int[], timestamptz, uuid[], bigint[], uuid[], text[], text[], text[], uuid[], \
             bigint[], interval, text[], text[], uuid[], bigint[], bigint[], uuid[], text[]",
            include_str!("deliveries/sql/append.sql"),
        ),
        hot(
            "fetch_after",
            "int[], bigint, bigint[], bigint[]",
            outbox::FETCH_AFTER,
        ),
        HotStatement {
            setup: BY_KEY_SETUP,
            ..hot(
                "release",
                "uuid, text",
                include_str!("deliveries/sql/release.sql"),
            )
        },
        HotStatement {
            setup: lane_hints::DUE_LANE_HEADS_SETUP,
            ..hot(
                "due_lane_heads",
                "interval, bigint, uuid[], uuid[], text[], bigint[], uuid, uuid",
                include_str!("deliveries/sql/due_lane_heads.sql"),
            )
        },
        HotStatement {
            setup: BY_KEY_SETUP,
            ..hot(
                "requeue",
                "uuid[]",
                include_str!("deliveries/sql/requeue.sql"),
            )
        },
        HotStatement {
            setup: BY_KEY_SETUP,
            ..hot(
                "purge_delivered",
                "bigint, bigint, text[]",
                include_str!("deliveries/sql/purge_delivered.sql"),
            )
        },
        HotStatement {
            setup: BY_KEY_SETUP,
            ..hot(
                "purge_contract",
                "text, interval, interval, bigint",
                include_str!("deliveries/sql/purge_contract.sql"),
            )
        },
        HotStatement {
            setup: BY_KEY_SETUP,
            ..hot(
                "purge_cancelled",
                "bigint, bigint, text[]",
                include_str!("deliveries/sql/purge_cancelled.sql"),
            )
        },
        HotStatement {
            setup: BY_KEY_SETUP,
            ..hot(
                "purge_contract_cancelled",
                "text, interval, bigint",
                include_str!("deliveries/sql/purge_contract_cancelled.sql"),
            )
        },
    ]
}

fn uuids<T: Copy + Into<Uuid>>(ids: &[T]) -> Vec<Uuid> {
    ids.iter().map(|i| (*i).into()).collect()
}
