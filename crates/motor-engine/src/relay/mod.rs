//! The relay role: outbox → Kafka.
//!
//! Records are read per shard in id order, published through the idempotent
//! producer, and deleted only after the broker acknowledged them: by a
//! later read, in the same statement (one round trip a round), once
//! [`Owed::SETTLE_AT`] of them are acknowledged or the oldest was for
//! [`Owed::SETTLE_AFTER`] (until then each read leaves them out, as it
//! does the records in flight, and writes nothing: at a steady low rate a
//! round used to be a write transaction of its own for the one record the
//! round before it published); or before shards move to another relay
//! (the check of every second waits for the rounds in flight only then),
//! at shutdown, or at once when a round fails. Rounds run on a connection
//! the relay keeps between them (`motor_store::held`: no pool pings). A round
//! does not wait for the one before it to be acknowledged: up to
//! [`RelayConfig::depth`] rounds are in flight, each read leaving out the
//! records still in flight, and the producer keeps their order per
//! partition — so a record committed while a round waits for the broker
//! leaves at once instead of a round later. After a round that read
//! records but not a whole batch, the next read waits until
//! [`RelayConfig::pace`] after that one began: at a steady rate the
//! records of that time leave in one read and one produce request instead
//! of one each (a full round reads again at once; an empty one does not
//! pace, so the first record after a quiet spell leaves at once). After a
//! round of `{prefix}.events` records alone, which nothing in Motor waits
//! for, the next read waits [`RelayConfig::events_pace`] instead, unless
//! this process commits a record that a role waits for meanwhile (a job,
//! a command: [`RelayWake::awaited`]), which brings it back to the
//! pace. A relay that dies in between
//! leaves published records behind, to be published again (a duplicate, as
//! when it dies before any delete). Shards are owned under Postgres
//! advisory locks held by one dedicated connection, so any number of relay
//! processes can run and records of one instance still leave in order; a
//! relay that dies frees its shards with its connection. Each relay takes
//! a fair share of the shards (the count of live relays is read from
//! `pg_stat_activity`) and the rest rebalance within a second.

mod flight;
mod shards;

use std::{sync::Arc, time::Duration};

use futures::FutureExt;
use motor_bus::{topics::ensure_topics, BusConfig, Producer, Record, Topics};
use motor_domain::outbox::Topic;
use motor_metrics::Metrics;
use motor_store::{held::Held, outbox, Pool};
use tokio::{
    sync::Notify,
    time::{sleep, sleep_until, Instant},
};
use tokio_util::sync::CancellationToken;

use self::{
    flight::{settle, InFlight, Owed},
    shards::Shards,
};
use crate::{EngineError, Result};

#[derive(Debug, Clone)]
pub struct RelayConfig {
    pub bus: BusConfig,
    /// Records read per round.
    pub batch: i64,
    /// Rounds published and not yet acknowledged, at most. While any is in
    /// flight a round reads at most [`Self::PIPELINED`] records, and none
    /// is started past that many in flight: each read leaves the records
    /// in flight out by id, which costs a comparison per id. A backlog is
    /// read a whole `batch` at a time, one round in flight, as with
    /// `depth` 1.
    pub depth: usize,
    /// After a round that read records but fewer than `batch`, the least
    /// time from its start to the next read's: what is committed meanwhile
    /// waits for it, and shares its read and its produce request. Zero: no
    /// pace. Measured on the 2-core machine at a steady 1,000 events/s
    /// (docs/BENCHMARKS.md, 2026-12-05 03:46–04:12), 10 ms took 40 % off
    /// the broker's CPU an event and 18 % off every process's.
    pub pace: Duration,
    /// [`Self::pace`] after a round whose records were all
    /// `{prefix}.events` records (no job, no command: their readers are
    /// the users' own Kafka consumers), unless a record a role waits for is
    /// committed in this process meanwhile ([`RelayWake::awaited`]); never
    /// shorter than `pace`. At a steady 200 events/s a round is one or two
    /// events, nearly always on different partitions, and librdkafka sends
    /// one produce request per partition: gathering 40 ms of them took
    /// 1,000 events/s from 670–703 to 571–589 µs an event across Motor,
    /// Postgres and the broker (docs/BENCHMARKS.md, 2026-12-05 16:20),
    /// at the cost of some 20 ms more from a commit to its record on
    /// `{prefix}.events` (p50).
    pub events_pace: Duration,
    /// Wait after the first empty round (the latency floor at low load);
    /// it doubles with each further empty round up to `idle_max`, so an idle
    /// relay costs Postgres a few reads a second, not hundreds.
    pub idle_wait: Duration,
    pub idle_max: Duration,
    /// How often shard ownership is re-checked.
    pub rebalance_every: Duration,
    /// Outbox writers in this process ring it: an idle relay wakes at
    /// once instead of at its next poll.
    pub wake: Option<Arc<RelayWake>>,
}

/// How outbox writers in the relay's process tell it they committed
/// records ([`RelayConfig::wake`]).
#[derive(Debug, Default)]
pub struct RelayWake {
    events: Notify,
    awaited: Notify,
}

impl RelayWake {
    /// Records of `{prefix}.events` alone were committed: the relay reads
    /// them at once if it is not pacing, or when its pace ends.
    pub fn events(&self) {
        self.events.notify_one();
    }

    /// Records a role waits for were committed (delivery jobs for the
    /// dispatchers, commands for executors, retries): as
    /// [`Self::events`], and a relay pacing after a round of events alone
    /// ([`RelayConfig::events_pace`]) reads at the end of its shorter
    /// [`RelayConfig::pace`] instead.
    pub fn awaited(&self) {
        self.awaited.notify_one();
    }
}

/// Beyond an idle relay's wait, what its rounds' connection is kept for
/// (`motor_store::held::Held::kept_across`): the read before the wait and
/// the timer's lateness.
const POLL_SLACK: Duration = Duration::from_millis(50);

impl RelayConfig {
    /// `idle_max` for a relay that shares its process with the API or the
    /// dispatcher (and so is woken by their commits): its polls only look
    /// for other processes' records, which may wait this long when idle.
    pub const IDLE_MAX_WOKEN: Duration = Duration::from_millis(250);

    /// Records a round reads, and records in flight, while rounds overlap.
    pub const PIPELINED: usize = 256;

    /// The default [`Self::pace`].
    pub const PACE: Duration = Duration::from_millis(10);

    /// The default [`Self::events_pace`].
    pub const EVENTS_PACE: Duration = Duration::from_millis(40);

    pub fn new(bus: BusConfig) -> Self {
        Self {
            bus,
            batch: 2000,
            depth: 16,
            pace: Self::PACE,
            events_pace: Self::EVENTS_PACE,
            idle_wait: Duration::from_millis(5),
            idle_max: Duration::from_millis(50),
            rebalance_every: Duration::from_secs(1),
            wake: None,
        }
    }
}

/// A round's reading: how many records, and whether all of them were
/// bound for `{prefix}.events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Round {
    read: usize,
    events_only: bool,
}

impl Round {
    const EMPTY: Round = Round {
        read: 0,
        events_only: true,
    };
}

/// When the read after `round` may start: at once after a full round
/// (more may wait) or an empty one (the next record is the first of a
/// quiet spell), otherwise `pace` after the round began — `events_pace`
/// (when longer) after a round of events alone. Returns that, and the
/// time to read at instead should a record a role waits for be committed
/// meanwhile (`pace`'s).
fn next_read(
    began: Instant,
    round: Round,
    limit: i64,
    pace: Duration,
    events_pace: Duration,
) -> (Instant, Instant) {
    if round.read == 0 || round.read as i64 >= limit {
        (began, began)
    } else if round.events_only {
        (began + pace.max(events_pace), began + pace)
    } else {
        (began + pace, began + pace)
    }
}

/// Runs the relay until `shutdown` fires.
pub async fn run(
    config: RelayConfig,
    pool: Pool,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<()> {
    let mut producer = Producer::new(&config.bus)?;
    let topics = Topics::new(&config.bus.prefix);
    wait_for_topics(&config.bus, &shutdown).await;
    let mut shards = Shards::new(pool.clone())?;
    let mut idle = config.idle_wait;
    // Acknowledged records not yet deleted.
    let mut owed = Owed::default();
    // The rounds' connection, kept between them (no pool pings), also
    // across an idle relay's polls (`idle_max` apart, and the read).
    let mut held = Held::new(pool.clone()).kept_across(config.idle_max + POLL_SLACK);
    let mut flight = InFlight::default();
    // Whether to read now (a wake, a poll due, or a full round: more may
    // wait), and when the next poll is due otherwise.
    let mut read_now = true;
    let mut poll_at = Instant::now();
    // No read before this (`RelayConfig::pace`, or `events_pace`), and no
    // read before `hurried_until` once a record a role waits for is
    // committed here.
    let mut paced_until = Instant::now();
    let mut hurried_until = paced_until;
    tracing::info!("relay started");

    while !shutdown.is_cancelled() {
        if shards.due(config.rebalance_every) {
            // Rounds in flight land first only when shards are to move
            // (another relay would publish them again), so the check of
            // every second does not stall the records behind them.
            let share = match shards.fair_share().await {
                Ok(share) => share,
                Err(e) => {
                    lose_shards(&mut shards, e, &mut flight, &pool, &mut owed, &metrics).await;
                    pause(&shutdown, Duration::from_secs(1)).await;
                    continue;
                }
            };
            if shards.gives_back(share) {
                let landed = flight.land_all(&mut owed, &metrics).await;
                if let Err(e) = settle(&pool, &mut owed).await {
                    tracing::warn!(error = %e, "relay cannot delete published records; retrying");
                    pause(&shutdown, Duration::from_secs(1)).await;
                    continue;
                }
                if let Err(e) = landed {
                    producer = recover(&config.bus, producer, e, &shutdown).await;
                    continue;
                }
            }
            if let Err(e) = shards.rebalance(share).await {
                lose_shards(&mut shards, e, &mut flight, &pool, &mut owed, &metrics).await;
                pause(&shutdown, Duration::from_secs(1)).await;
                continue;
            }
            metrics.relay_shards_owned.set(shards.count() as i64);
        }
        if shards.count() == 0 {
            pause(&shutdown, config.rebalance_every).await;
            continue;
        }
        let room = flight.has_room(config.depth);
        if read_now && room && Instant::now() >= paced_until {
            let limit = flight.limit(config.batch);
            let owned = shards.list();
            let began = Instant::now();
            match read_and_enqueue(
                &mut held,
                &producer,
                &topics,
                &owned,
                limit,
                &mut owed,
                &mut flight,
            )
            .await
            {
                Ok(round) => {
                    // A full round: more may be waiting, read again at once.
                    read_now = round.read as i64 == limit;
                    (paced_until, hurried_until) =
                        next_read(began, round, limit, config.pace, config.events_pace);
                    idle = if round.read == 0 {
                        (idle * 2).min(config.idle_max)
                    } else {
                        config.idle_wait
                    };
                    poll_at = Instant::now() + idle;
                }
                Err(e) => {
                    flight.abandon(&pool, &mut owed, &metrics).await;
                    producer = recover(&config.bus, producer, e, &shutdown).await;
                    read_now = true;
                }
            }
            continue;
        }
        let wake = rung(config.wake.as_deref().map(|w| &w.events));
        let awaited = rung(config.wake.as_deref().map(|w| &w.awaited));
        // A read due waits for its pace; a poll, for its time; neither
        // while the rounds in flight leave no room (one lands first).
        let timer = async {
            match (room, read_now) {
                (false, _) => std::future::pending().await,
                (true, true) => sleep_until(paced_until).await,
                (true, false) => sleep_until(poll_at).await,
            }
        };
        tokio::select! {
            landed = flight.land_one(&mut owed, &metrics), if flight.len() > 0 => {
                if let Some(Err(e)) = landed {
                    flight.abandon(&pool, &mut owed, &metrics).await;
                    producer = recover(&config.bus, producer, e, &shutdown).await;
                    read_now = true;
                }
            }
            // Only while no read is due: a read waiting for its pace gains
            // nothing from the bell, which each commit of the process rings
            // (at 200 events/s, every 5 ms of a 40 ms pace: the relay's
            // task woken about once an event for nothing). A bell rung
            // meanwhile is kept by the `Notify` and answered when the
            // relay listens again, after its read.
            _ = wake, if !read_now => read_now = true,
            _ = awaited => {
                read_now = true;
                paced_until = paced_until.min(hurried_until);
            }
            _ = timer => read_now = true,
            _ = shutdown.cancelled() => {}
        }
    }
    let _ = flight.land_all(&mut owed, &metrics).await;
    producer.flush(Duration::from_secs(5));
    if let Err(e) = settle(&pool, &mut owed).await {
        tracing::warn!(error = %e, records = owed.ids.len(), "relay stopped with published records undeleted: they will be published again");
    }
    tracing::info!("relay stopped");
    Ok(())
}

/// After a failed round, with nothing in flight: a broker that lost its
/// topics (restart of an in-memory broker) gets them back before the
/// retry, and a fresh producer — the idempotent producer's id and sequence
/// numbers mean nothing to a broker that forgot them, and its records
/// would time out forever. Every report came back, so nothing is lost.
async fn recover(
    bus: &BusConfig,
    producer: Producer,
    error: EngineError,
    shutdown: &CancellationToken,
) -> Producer {
    tracing::warn!(error = %error, "relay round failed; retrying");
    let _ = ensure_topics(bus).await;
    let producer = match Producer::new(bus) {
        Ok(fresh) => fresh,
        Err(e) => {
            tracing::warn!(error = %e, "cannot make a new producer yet");
            producer
        }
    };
    pause(shutdown, Duration::from_millis(500)).await;
    producer
}

/// The lock connection failed: what is in flight lands and what the broker
/// acknowledged is deleted before its locks go (closing it frees them to
/// other relays, which would otherwise publish those records again).
async fn lose_shards(
    shards: &mut Shards,
    error: EngineError,
    flight: &mut InFlight,
    pool: &Pool,
    owed: &mut Owed,
    metrics: &Metrics,
) {
    tracing::warn!(error = %error, "relay lost its shard locks; reconnecting");
    flight.abandon(pool, owed, metrics).await;
    shards.reset();
}

/// One round: delete the records `owed` when they are due, and read the
/// oldest records of the owned shards that are neither in flight nor
/// owed, in one statement; hand them to the producer and add the round to
/// `flight`. Returns what it read.
async fn read_and_enqueue(
    held: &mut Held,
    producer: &Producer,
    topics: &Topics,
    shards: &[i32],
    limit: i64,
    owed: &mut Owed,
    flight: &mut InFlight,
) -> Result<Round> {
    let settling = owed.due(Instant::now());
    let deleted: &[i64];
    let joined: Vec<i64>;
    let left_out: &[i64] = if settling || owed.is_empty() {
        deleted = if settling { &owed.ids } else { &[] };
        flight.ids()
    } else {
        deleted = &[];
        joined = [flight.ids(), &owed.ids[..]].concat();
        &joined
    };
    let read = outbox::fetch_after(held.conn().await?, shards, limit, deleted, left_out).await;
    let records = held.outcome(read)?;
    if settling {
        owed.clear();
    }
    if records.is_empty() {
        return Ok(Round::EMPTY);
    }
    let events = Topic::Events.suffix();
    let round = Round {
        read: records.len(),
        events_only: records.iter().all(|r| r.topic == events),
    };
    let names: Vec<String> = records.iter().map(|r| topics.of_suffix(&r.topic)).collect();
    let batch: Vec<Record<'_>> = records
        .iter()
        .zip(&names)
        .map(|(r, topic)| Record {
            topic,
            key: &r.key,
            payload: &r.payload,
            headers: &r.headers,
        })
        .collect();
    let delivery = producer.enqueue(&batch).await;
    let ids: Vec<i64> = records.iter().map(|r| r.id).collect();
    flight.ids.extend(&ids);
    flight
        .rounds
        .push_back(async move { (ids, delivery.reports().await) }.boxed());
    Ok(round)
}

async fn wait_for_topics(bus: &BusConfig, shutdown: &CancellationToken) {
    let mut wait = Duration::from_millis(200);
    while !shutdown.is_cancelled() {
        match ensure_topics(bus).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, brokers = %bus.brokers, "cannot create topics yet; retrying");
                pause(shutdown, wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Until `bell` is rung; never without one (a relay no writer of its
/// process wakes).
async fn rung(bell: Option<&Notify>) {
    match bell {
        Some(bell) => bell.notified().await,
        None => std::future::pending().await,
    }
}

async fn pause(shutdown: &CancellationToken, wait: Duration) {
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = sleep(wait) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(read: usize, events_only: bool) -> Round {
        Round { read, events_only }
    }

    #[test]
    fn a_round_neither_full_nor_empty_paces_the_next_read() {
        let began = Instant::now();
        let pace = Duration::from_millis(10);
        let events_pace = Duration::from_millis(40);
        let next = |r, limit, pace| next_read(began, r, limit, pace, events_pace);
        let paced = (began + pace, began + pace);
        assert_eq!(next(round(3, false), 2000, pace), paced);
        assert_eq!(next(round(1, false), 2000, pace), paced);
        assert_eq!(
            next(round(2000, false), 2000, pace),
            (began, began),
            "full: more may wait"
        );
        assert_eq!(
            next(round(256, true), 256, pace),
            (began, began),
            "full while rounds overlap, even of events alone"
        );
        assert_eq!(
            next(Round::EMPTY, 2000, pace),
            (began, began),
            "empty: the next is the first of a spell"
        );
        assert_eq!(
            next(round(3, false), 2000, Duration::ZERO),
            (began, began),
            "no pace"
        );
    }

    #[test]
    fn a_round_of_events_alone_waits_the_events_pace_unless_hurried() {
        let began = Instant::now();
        let pace = Duration::from_millis(10);
        assert_eq!(
            next_read(began, round(2, true), 2000, pace, Duration::from_millis(40)),
            (began + Duration::from_millis(40), began + pace),
            "events' pace, the pace once a job or a command is committed"
        );
        assert_eq!(
            next_read(began, round(2, true), 2000, pace, Duration::from_millis(4)),
            (began + pace, began + pace),
            "never shorter than the pace"
        );
    }
}
