//! The sweeper's lane hints (`LaneHints`): a pass that probes each known
//! lane from where its head was finds exactly what a walk of every lane
//! finds, while lanes drain, fill, empty and refill, and new lanes,
//! instances and subscriptions appear; and it does not read the index
//! entries of what the known lanes finished before the last pass (dead
//! until a vacuum; autovacuum is off for the table here, as on a machine
//! whose autovacuum is off). With more known lanes than a pass's share, a
//! pass walks one slice of the subscriptions and finds exactly what the
//! walk finds there, and a round of passes finds everything.

use std::{collections::HashSet, panic::AssertUnwindSafe, time::Duration};

use futures::FutureExt;
use motor_domain::delivery::DeliveryId;
use motor_store::deliveries::{due_lane_heads, LaneHints, FORGET_AFTER};
use sqlx::{Connection, Executor, PgConnection};
use uuid::Uuid;

use crate::util::{connect, TestDb};

const APP: &str = "00000000-0000-0000-0000-00000000000b";

fn instance(n: u64) -> Uuid {
    format!("00000000-0000-0000-0001-{n:012}").parse().unwrap()
}

fn subscription(n: u64) -> Uuid {
    format!("00000000-0000-0000-0002-{n:012}").parse().unwrap()
}

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Runs `body` on a fresh database with autovacuum off for `deliveries`,
/// then drops the database whatever happened.
async fn on_fresh_database<F>(body: impl FnOnce(String) -> F)
where
    F: std::future::Future<Output = ()>,
{
    let db = TestDb::new().await;
    sqlx::raw_sql(&format!(
        "ALTER TABLE deliveries SET (autovacuum_enabled = off);
         INSERT INTO apps (id, nombre) VALUES ('{APP}', 'hints');"
    ))
    .execute(&db.pool)
    .await
    .unwrap();
    let outcome = AssertUnwindSafe(body(db.url.clone())).catch_unwind().await;
    db.drop_then(outcome).await;
}

async fn add_subscription(conn: &mut PgConnection, n: u64, ordered: bool) {
    sqlx::query(
        "INSERT INTO subscriptions (id, app_id, nombre, url, ordenado)
         VALUES ($1, $2::uuid, 's' || $1, 'http://127.0.0.1/', $3)",
    )
    .bind(subscription(n))
    .bind(APP)
    .bind(ordered)
    .execute(conn)
    .await
    .unwrap();
}

async fn add_instance(conn: &mut PgConnection, n: u64) {
    sqlx::query("INSERT INTO instances (id, app_id, nombre) VALUES ($1, $2::uuid, 'i' || $1)")
        .bind(instance(n))
        .bind(APP)
        .execute(conn)
        .await
        .unwrap();
}

/// Appends `count` events to instance `i`, each delivered (open, due now)
/// to every subscription of `subscriptions`, in the live lane, as the
/// ingest does: in one transaction that moves `last_seq`.
async fn append(conn: &mut PgConnection, i: u64, count: i64, subscriptions: &[u64]) {
    let subs: Vec<Uuid> = subscriptions.iter().map(|&s| subscription(s)).collect();
    sqlx::raw_sql("BEGIN").execute(&mut *conn).await.unwrap();
    sqlx::query(
        "WITH moved AS (
             UPDATE instances SET last_seq = last_seq + $2 WHERE id = $1
             RETURNING last_seq - $2 AS after
         ), new AS (
             INSERT INTO events (instance_id, seq, event_id, type, recibido_en, envelope)
             SELECT $1, moved.after + g, gen_random_uuid(), 'hints', now(), '{}'
             FROM moved, generate_series(1, $2) g
             RETURNING instance_id, seq, event_id
         )
         INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq)
         SELECT motor_uuid_v7(), s, $3::uuid, new.instance_id, new.event_id, new.seq
         FROM new, UNNEST($4::uuid[]) s",
    )
    .bind(instance(i))
    .bind(count)
    .bind(APP)
    .bind(&subs)
    .execute(&mut *conn)
    .await
    .unwrap();
    sqlx::raw_sql("COMMIT").execute(&mut *conn).await.unwrap();
}

/// A replay of instance `i`'s first `count` events to subscription `s`:
/// a lane of its own, made in one transaction.
async fn replay(conn: &mut PgConnection, s: u64, i: u64, count: i64, lane: Uuid) {
    sqlx::query(
        "INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq, lane)
         SELECT motor_uuid_v7(), $1, $2::uuid, e.instance_id, e.event_id, e.seq, $5
         FROM events e WHERE e.instance_id = $3 AND e.seq <= $4",
    )
    .bind(subscription(s))
    .bind(APP)
    .bind(instance(i))
    .bind(count)
    .bind(lane.to_string())
    .execute(conn)
    .await
    .unwrap();
}

/// Delivers the `count` lowest open deliveries of subscription `s` and
/// instance `i`, lane by lane, after skipping `skip` of them (an unordered
/// subscription finishes out of order).
async fn finish(conn: &mut PgConnection, s: u64, i: u64, count: i64, skip: i64) {
    sqlx::query(
        "UPDATE deliveries SET estado = 'entregada', proximo_intento = NULL,
                               entregado_en = now()
         WHERE id IN (SELECT id FROM deliveries
                      WHERE subscription_id = $1 AND instance_id = $2 AND estado = 'pendiente'
                      ORDER BY lane, seq OFFSET $4 LIMIT $3)",
    )
    .bind(subscription(s))
    .bind(instance(i))
    .bind(count)
    .bind(skip)
    .execute(conn)
    .await
    .unwrap();
}

#[tokio::test]
async fn hinted_passes_find_what_a_walk_of_every_lane_finds() {
    on_fresh_database(|url| async move {
        let mut conn = connect(&url).await;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        // Subscriptions 10 and 20 ordered, 30 unordered, instances 10 to
        // 40; more of each come later, before, between and after these.
        let mut subscriptions: Vec<(u64, bool)> = vec![(10, true), (20, true), (30, false)];
        for &(s, ordered) in &subscriptions {
            add_subscription(&mut conn, s, ordered).await;
        }
        let mut instances: Vec<u64> = vec![10, 20, 30, 40];
        for &i in &instances {
            add_instance(&mut conn, i).await;
            append(&mut conn, i, 5, &[10, 20, 30]).await;
        }
        let mut hints = LaneHints::default();
        // The same passes in slices of about 3 lanes.
        let mut sliced = LaneHints::with_lanes_per_pass(3);
        let mut next = Uuid::nil();
        let all = Duration::ZERO;
        for round in 0..80u64 {
            let subs: Vec<u64> = subscriptions.iter().map(|&(s, _)| s).collect();
            match rng.below(10) {
                // Events: every subscription's live lane of an instance fills.
                0..=2 => {
                    let i = instances[rng.below(instances.len() as u64) as usize];
                    append(&mut conn, i, 1 + rng.below(4) as i64, &subs).await;
                }
                // A replay: a new lane (a uuid: before `live` in the index).
                3 => {
                    let s = subs[rng.below(subs.len() as u64) as usize];
                    let i = instances[rng.below(instances.len() as u64) as usize];
                    let lane =
                        Uuid::from_u128(u128::from(rng.below(u64::MAX)) << 64 | u128::from(round));
                    replay(&mut conn, s, i, 3, lane).await;
                }
                // A new instance.
                4 if instances.len() < 9 => {
                    let i = 1 + rng.below(50);
                    if !instances.contains(&i) {
                        add_instance(&mut conn, i).await;
                        instances.push(i);
                        append(&mut conn, i, 2, &subs).await;
                    }
                }
                // A new subscription, ordered or not.
                5 if subscriptions.len() < 6 => {
                    let s = 1 + rng.below(40);
                    if !subs.contains(&s) {
                        let ordered = rng.below(2) == 0;
                        add_subscription(&mut conn, s, ordered).await;
                        subscriptions.push((s, ordered));
                    }
                }
                // Lanes drain: the lowest open deliveries (the heads), or
                // for the unordered subscription some behind its head.
                _ => {
                    for _ in 0..3 {
                        let (s, ordered) =
                            subscriptions[rng.below(subscriptions.len() as u64) as usize];
                        let i = instances[rng.below(instances.len() as u64) as usize];
                        let skip = if ordered { 0 } else { rng.below(3) as i64 };
                        finish(&mut conn, s, i, 1 + rng.below(6) as i64, skip).await;
                    }
                }
            }
            let hinted = hints.due_lane_heads(&mut conn, all, 10_000).await.unwrap();
            let walked = due_lane_heads(&mut conn, all, 10_000).await.unwrap();
            assert_eq!(hinted, walked, "round {round}");
            assert!(
                round == 0 || !hints.is_empty(),
                "round {round}: no hints kept"
            );
            let found = sliced.due_lane_heads(&mut conn, all, 10_000).await.unwrap();
            let (from, to) = sliced.last_slice();
            assert_eq!(
                from, next,
                "round {round}: a pass starts where the last one stopped"
            );
            next = to.unwrap_or(Uuid::nil());
            assert_eq!(
                found,
                in_slice(&mut conn, &walked, from, to).await,
                "round {round}: the sliced pass from {from} to {to:?}"
            );
        }
        // The lanes drained to nothing are kept (their next head is past
        // their instance's last seq) and still found when they refill.
        for &i in &instances {
            for &(s, _) in &subscriptions {
                finish(&mut conn, s, i, 1_000, 0).await;
            }
        }
        let known = hints.len();
        assert!(hints
            .due_lane_heads(&mut conn, all, 10_000)
            .await
            .unwrap()
            .is_empty());
        assert_eq!(hints.len(), known, "emptied lanes are remembered");
        let subs: Vec<u64> = subscriptions.iter().map(|&(s, _)| s).collect();
        append(&mut conn, instances[0], 2, &subs).await;
        let hinted = hints.due_lane_heads(&mut conn, all, 10_000).await.unwrap();
        let walked = due_lane_heads(&mut conn, all, 10_000).await.unwrap();
        assert_eq!(hinted, walked);
        assert!(!hinted.is_empty());
        conn.close().await.unwrap();
    })
    .await;
}

/// Of `ids` (in their order), those of the subscriptions from `from`
/// (included) to `to` (excluded; `None`: to the end).
async fn in_slice(
    conn: &mut PgConnection,
    ids: &[DeliveryId],
    from: Uuid,
    to: Option<Uuid>,
) -> Vec<DeliveryId> {
    let uuids: Vec<Uuid> = ids.iter().map(|id| *id.as_uuid()).collect();
    let inside: HashSet<Uuid> = sqlx::query_scalar(
        "SELECT id FROM deliveries
         WHERE id = ANY($1) AND subscription_id >= $2 AND ($3::uuid IS NULL OR subscription_id < $3)",
    )
    .bind(&uuids)
    .bind(from)
    .bind(to)
    .fetch_all(conn)
    .await
    .unwrap()
    .into_iter()
    .collect();
    ids.iter()
        .filter(|id| inside.contains(id.as_uuid()))
        .copied()
        .collect()
}

/// The subscriptions of `ids`.
async fn subscriptions_of(conn: &mut PgConnection, ids: &[DeliveryId]) -> HashSet<Uuid> {
    let uuids: Vec<Uuid> = ids.iter().map(|id| *id.as_uuid()).collect();
    sqlx::query_scalar("SELECT DISTINCT subscription_id FROM deliveries WHERE id = ANY($1)")
        .bind(&uuids)
        .fetch_all(conn)
        .await
        .unwrap()
        .into_iter()
        .collect()
}

/// Many tenants: with more known lanes than a pass's share, each pass
/// probes one slice of the subscriptions (whole ones, until their lanes
/// reach the share) and reads a fraction of what a pass over every lane
/// reads, and a round of passes finds every lost head. A pass that
/// probed every known lane grew with the tenants: 130–191 ms at 10,000
/// lanes.
#[tokio::test]
async fn with_many_lanes_a_pass_walks_its_share_and_a_round_finds_every_head() {
    const ORDERED: u64 = 20;
    const UNORDERED: u64 = 4;
    const INSTANCES: u64 = 10;
    const SHARE: usize = 25;
    on_fresh_database(|url| async move {
        let mut conn = connect(&url).await;
        let mut other = connect(&url).await;
        let mut subs = Vec::new();
        for s in 1..=ORDERED + UNORDERED {
            add_subscription(&mut conn, s, s <= ORDERED).await;
            subs.push(s);
        }
        for i in 1..=INSTANCES {
            add_instance(&mut conn, i).await;
            append(&mut conn, i, 3, &subs).await;
        }
        let all = Duration::ZERO;
        let mut whole = LaneHints::default();
        let mut sliced = LaneHints::with_lanes_per_pass(SHARE);
        // The first pass knows nothing: it walks everything.
        let walked = due_lane_heads(&mut conn, all, 10_000).await.unwrap();
        assert_eq!(
            walked.len() as u64,
            ORDERED * INSTANCES + UNORDERED * INSTANCES * 3,
            "every ordered lane's head and every unordered delivery"
        );
        assert_eq!(
            whole.due_lane_heads(&mut conn, all, 10_000).await.unwrap(),
            walked
        );
        assert_eq!(
            sliced.due_lane_heads(&mut conn, all, 10_000).await.unwrap(),
            walked
        );
        assert_eq!(sliced.last_slice(), (Uuid::nil(), None));
        // A lane per subscription and instance, the unordered ones' too.
        assert_eq!(sliced.len() as u64, (ORDERED + UNORDERED) * INSTANCES);

        // A round of slices: each finds what the walk finds in it, the
        // slices tile the subscriptions, and together they find it all.
        let mut found = Vec::new();
        let mut passes = 0;
        let mut next = Uuid::nil();
        loop {
            let start = deliveries_blocks(&mut conn, &mut other).await;
            let pass = sliced.due_lane_heads(&mut conn, all, 10_000).await.unwrap();
            let sliced_blocks = deliveries_blocks(&mut conn, &mut other).await - start;
            let (from, to) = sliced.last_slice();
            assert_eq!(from, next);
            assert_eq!(pass, in_slice(&mut conn, &walked, from, to).await);
            // Whole subscriptions until 25 lanes: 3 of 10 lanes (an
            // unordered one counts one more).
            let touched = subscriptions_of(&mut conn, &pass).await;
            assert!(
                (1..=3).contains(&touched.len()),
                "pass {passes} found heads of {} subscriptions",
                touched.len()
            );
            // Against a pass over every known lane, from the same hints.
            let start = deliveries_blocks(&mut conn, &mut other).await;
            assert_eq!(
                whole.due_lane_heads(&mut conn, all, 10_000).await.unwrap(),
                walked
            );
            let whole_blocks = deliveries_blocks(&mut conn, &mut other).await - start;
            assert!(
                sliced_blocks * 3 < whole_blocks,
                "pass {passes}: a slice read {sliced_blocks} blocks, a whole pass {whole_blocks}"
            );
            found.extend(pass);
            passes += 1;
            match to {
                Some(to) => next = to,
                None => break,
            }
            assert!(passes < 20, "the round never ended");
        }
        assert_eq!(passes, 8, "24 subscriptions in slices of 3");
        let mut expected = walked.clone();
        expected.sort();
        found.sort();
        assert_eq!(found, expected, "a round finds every head");
        conn.close().await.unwrap();
        other.close().await.unwrap();
    })
    .await;
}

/// A finished replay's lane is forgotten once no pass has found anything
/// open in it for [`FORGET_AFTER`] passes, though its hint moved every
/// pass (an empty lane's hint follows its instance's `last_seq`, and the
/// live lane beside it goes on). Such lanes were kept for good: in the
/// hour-long soak, one replay a minute, the sweeper knew 42 lanes after 45
/// minutes and probed each one every pass.
#[tokio::test]
async fn a_finished_replays_lane_is_forgotten_while_its_instance_goes_on() {
    on_fresh_database(|url| async move {
        let mut conn = connect(&url).await;
        add_subscription(&mut conn, 10, true).await;
        add_instance(&mut conn, 10).await;
        append(&mut conn, 10, 5, &[10]).await;
        replay(&mut conn, 10, 10, 3, Uuid::from_u128(7)).await;
        let mut hints = LaneHints::default();
        let all = Duration::ZERO;
        hints.due_lane_heads(&mut conn, all, 100).await.unwrap();
        assert_eq!(hints.len(), 2, "the live lane and the replay's");
        finish(&mut conn, 10, 10, 1_000, 0).await;
        // Each pass finds the live lane with one open delivery and the
        // replay's with none.
        for pass in 0..FORGET_AFTER + 2 {
            append(&mut conn, 10, 1, &[10]).await;
            let hinted = hints.due_lane_heads(&mut conn, all, 100).await.unwrap();
            if pass % 50 == 0 {
                let walked = due_lane_heads(&mut conn, all, 100).await.unwrap();
                assert_eq!(hinted, walked, "pass {pass}");
                assert_eq!(hinted.len(), 1, "pass {pass}: the live lane's head");
            }
            finish(&mut conn, 10, 10, 1, 0).await;
        }
        assert_eq!(
            hints.len(),
            1,
            "the replay's lane is forgotten, the live one kept"
        );
        conn.close().await.unwrap();
    })
    .await;
}

/// Blocks of `deliveries` (its heap and every index) read so far, by the
/// server's per-table counters, after `conn` flushed its own.
async fn deliveries_blocks(conn: &mut PgConnection, other: &mut PgConnection) -> i64 {
    conn.execute("SELECT pg_stat_force_next_flush()")
        .await
        .unwrap();
    sqlx::query_scalar(
        "SELECT heap_blks_hit + heap_blks_read + idx_blks_hit + idx_blks_read
         FROM pg_statio_user_tables WHERE relname = 'deliveries'",
    )
    .fetch_one(other)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_hinted_pass_does_not_read_what_known_lanes_finished_before() {
    const LANES: u64 = 10;
    const PER_LANE: i64 = 20_000;
    on_fresh_database(|url| async move {
        let mut conn = connect(&url).await;
        let mut other = connect(&url).await;
        add_subscription(&mut conn, 1, true).await;
        for i in 1..=LANES {
            add_instance(&mut conn, i).await;
            append(&mut conn, i, PER_LANE, &[1]).await;
        }
        let all = Duration::ZERO;
        let mut hints = LaneHints::default();
        assert_eq!(
            hints
                .due_lane_heads(&mut conn, all, 1_000)
                .await
                .unwrap()
                .len(),
            LANES as usize
        );
        // Most of every lane delivered, then a pass (it reads those once),
        // then a few more delivered: what a draining lane looks like from
        // one pass to the next.
        for i in 1..=LANES {
            finish(&mut conn, 1, i, PER_LANE - 1_000, 0).await;
        }
        hints.due_lane_heads(&mut conn, all, 1_000).await.unwrap();
        for i in 1..=LANES {
            finish(&mut conn, 1, i, 50, 0).await;
        }
        let start = deliveries_blocks(&mut conn, &mut other).await;
        let hinted = hints.due_lane_heads(&mut conn, all, 1_000).await.unwrap();
        let between = deliveries_blocks(&mut conn, &mut other).await;
        let walked = due_lane_heads(&mut conn, all, 1_000).await.unwrap();
        let end = deliveries_blocks(&mut conn, &mut other).await;
        let (hinted_blocks, walked_blocks) = (between - start, end - between);
        assert_eq!(hinted, walked);
        assert_eq!(hinted.len(), LANES as usize);
        eprintln!("blocks: hinted {hinted_blocks}, walked {walked_blocks}");
        // A walk from each lane's start reads its 18,950 dead entries (some
        // 130 leaf pages a lane); a hinted pass a few probes a lane, on
        // `deliveries_open_lane` (the table was never analysed: a plan
        // that probed `deliveries_lane_event_key` and sorted read every
        // delivery of the lane's subscription, 20,000 a probe).
        assert!(
            walked_blocks > 100 * LANES as i64,
            "the walk read {walked_blocks} blocks: the dead entries are not there"
        );
        assert!(
            hinted_blocks < 30 * LANES as i64,
            "a hinted pass read {hinted_blocks} blocks of deliveries for {LANES} lanes \
             (a walk read {walked_blocks})"
        );
        conn.close().await.unwrap();
        other.close().await.unwrap();
    })
    .await;
}

/// The `postgres-failover-async` bug: a failover to a standby that missed
/// the last commits rolls history back, and a lane's head moves back with
/// it — deliveries the old primary finished are `pendiente` again below
/// the hint. A pass probing from its hints never finds them (those lanes
/// stood still until a restart); one without hints does. A pass forgets
/// its hints when the server changed (`pg_postmaster_start_time()`), or
/// when told to (`LaneHints::forget`); this runs the rollback on one
/// server, so it tells it.
#[tokio::test]
async fn a_rolled_back_history_is_found_once_the_hints_are_forgotten() {
    on_fresh_database(|url| async move {
        let mut conn = connect(&url).await;
        add_subscription(&mut conn, 1, true).await;
        add_instance(&mut conn, 1).await;
        append(&mut conn, 1, 10, &[1]).await;
        let mut hints = LaneHints::default();
        let all = Duration::ZERO;
        hints.due_lane_heads(&mut conn, all, 100).await.unwrap();
        finish(&mut conn, 1, 1, 6, 0).await;
        let found = hints.due_lane_heads(&mut conn, all, 100).await.unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(*found[0].as_uuid(), delivery_at(&mut conn, 1, 7).await);

        // The rollback: the finishes of seqs 3 to 6 never reached the
        // standby that became the primary.
        sqlx::query(
            "UPDATE deliveries SET estado = 'pendiente', entregado_en = NULL,
                                   proximo_intento = now() - interval '1 minute'
             WHERE subscription_id = $1 AND seq BETWEEN 3 AND 6",
        )
        .bind(subscription(1))
        .execute(&mut conn)
        .await
        .unwrap();
        let walked = due_lane_heads(&mut conn, all, 100).await.unwrap();
        assert_eq!(walked.len(), 1);
        assert_eq!(*walked[0].as_uuid(), delivery_at(&mut conn, 1, 3).await);
        let hinted = hints.due_lane_heads(&mut conn, all, 100).await.unwrap();
        assert_ne!(hinted, walked, "the hint stands past the rolled-back head");

        hints.forget();
        let hinted = hints.due_lane_heads(&mut conn, all, 100).await.unwrap();
        assert_eq!(hinted, walked);
        // And the hint now follows the head of this history.
        let hinted = hints.due_lane_heads(&mut conn, all, 100).await.unwrap();
        assert_eq!(hinted, walked);
        conn.close().await.unwrap();
    })
    .await;
}

/// The id of subscription `s`'s delivery of seq `seq`.
async fn delivery_at(conn: &mut PgConnection, s: u64, seq: i64) -> Uuid {
    sqlx::query_scalar("SELECT id FROM deliveries WHERE subscription_id = $1 AND seq = $2")
        .bind(subscription(s))
        .bind(seq)
        .fetch_one(conn)
        .await
        .unwrap()
}
