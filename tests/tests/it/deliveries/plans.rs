//! The plans of the hot statements (`motor_store::deliveries::hot_statements`)
//! on a large table: no statement may cost more as the backlog grows. A
//! small test never sees a bad plan, so this one builds a backlog of
//! hundreds of thousands of open deliveries (an ordered and an unordered
//! subscription, one parked behind a suspended subscription, some
//! delivered), first with generic plans made while the tables were young
//! and kept as they grew (a fresh Motor's connections), then never
//! analysed (the table the sweeper stalled on), then analysed, then with
//! statistics from before the backlog (every group commit once read all
//! open deliveries so), and reads `EXPLAIN ANALYZE` of every statement,
//! custom and generic plan, each in a transaction that is rolled back.
//!
//! What it asserts is the shape, not the time: no sequential scan of
//! `deliveries`, no locking subquery run more than once, and no plan node
//! that reads or discards more than [`BOUND`] rows (a plan that walks the
//! backlog reads [`OPEN`]).

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use serde_json::Value;
use sqlx::{Connection, Executor, PgConnection, Row};
use uuid::Uuid;

use motor_store::{deliveries::HotStatement, held::Held, statistics::analyze_grown};

use crate::util::{connect, TestDb};

/// Open deliveries of each of the two active subscriptions.
const OPEN: i64 = 200_000;
/// Lanes (instances) they are spread over.
const INSTANCES: i64 = 10;
/// Delivered deliveries at the start of each lane.
const DELIVERED: i64 = 100;
/// Rows any plan node may produce or discard, per statement: the sweeper's
/// batch (1,000) with room to spare, a twentieth of the backlog.
const BOUND: f64 = 10_000.0;

/// Times a locking subquery may run in one statement: once per key it was
/// given (a batch: the sweeper's 1,000 at most), never once per open
/// delivery (the stall ran one 21,000 times).
const LOCKS: f64 = 1_000.0;

/// Records waiting in the outbox beside lane 1's (the broker away, or a
/// burst the statistics counted). With thousands counted, Postgres joined
/// the relay's read to the whole ledger by a hash unless the ledger's
/// LATERAL holds a LIMIT (91,664 events read at every round;
/// docs/BENCHMARKS.md, 2026-12-07 13:10).
const OUTBOX_BACKLOG: i64 = 5_000;

/// Subscriptions of other apps (many tenants, issue 38's shape) for
/// [`per_event_plans_made_before_many_tenants_subscribed_are_made_again_once_the_sweeper_analyses`]:
/// a plan that reads every subscription for each event (the append's
/// fan-out planned while the table was young read 10,013 for each of a
/// batch's 55 events, 550,605 rows a call) reads past [`BOUND`].
const TENANT_SUBSCRIPTIONS: i64 = 12_000;

/// Hot statements that run once a sweeper or retention pass (or a
/// reactivation), not once an event or an attempt: they walk every
/// subscription by design, so many tenants' subscriptions are theirs to
/// read.
const PER_PASS: [&str; 7] = [
    "release",
    "due_lane_heads",
    "requeue",
    "purge_delivered",
    "purge_contract",
    "purge_cancelled",
    "purge_contract_cancelled",
];

/// Deliveries in the table when the second young state's plans are made:
/// about 40 pages.
const YOUNG_ROWS: i64 = 2_000;

/// Open deliveries in the table when the third young state's plans are
/// made: more than one leaf page of `deliveries_open_lane` holds (about
/// 135 entries), fewer than one of the delivery key's (about 156). Its
/// tree is then a level taller than the key's, and with the key led by
/// the subscription a lane probe through the key and a sort looked
/// cheaper to a generic plan: run on the backlog, it read every delivery
/// of the subscription's lane (migration 0013).
const YOUNG_OPEN_ROWS: i64 = 150;

/// Instances of the app with no event yet, for a batch's append across
/// as many lanes (the fan-out of a batch under load). Two statements
/// before read past [`BOUND`] on it: the one before 5206357 searched a list
/// of open lanes again for each candidate (12,610 rows with 65 instances),
/// and the one before 989519b read the instances by app where it joined
/// the events to them, on a generic plan made before `instances` was
/// analysed: the app's instances for each (event, subscription) pair,
/// 144,000 rows for this batch's 900 pairs.
const BATCH_INSTANCES: i64 = 300;

const APP: &str = "00000000-0000-0000-0000-00000000000a";

/// The end of the last slice of a sweeper's round (`due_lane_heads`' `$8`).
const MAX: &str = "ffffffff-ffff-ffff-ffff-ffffffffffff";

/// A sweeper's pass that is a whole round: every subscription.
const WHOLE: &str =
    "'00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff'";

fn instance(i: i64) -> Uuid {
    format!("00000000-0000-0000-0001-{i:012}").parse().unwrap()
}

fn batch_instance(i: i64) -> Uuid {
    format!("00000000-0000-0000-0005-{i:012}").parse().unwrap()
}

/// Subscriptions: 1 ordered, 2 unordered, 3 ordered and suspended.
fn subscription(n: i64) -> Uuid {
    format!("00000000-0000-0000-0002-{n:012}").parse().unwrap()
}

const ORDERED: i64 = 1;
const UNORDERED: i64 = 2;
const SUSPENDED: i64 = 3;

/// Builds the backlog with set-based inserts, `deliveries` never analysed
/// (autovacuum off for it, as a table is before its first auto-analyze).
async fn build(conn: &mut PgConnection) {
    conn.execute(
        "ALTER TABLE deliveries SET (autovacuum_enabled = off);
         ALTER TABLE events SET (autovacuum_enabled = off);",
    )
    .await
    .unwrap();
    let script = format!(
        "INSERT INTO apps (id, nombre) VALUES ('{APP}', 'plans');
         INSERT INTO instances (id, app_id, nombre)
             SELECT ('00000000-0000-0000-0001-' || lpad(i::text, 12, '0'))::uuid, '{APP}', 'i' || i
             FROM generate_series(1, {INSTANCES}) i;
         INSERT INTO instances (id, app_id, nombre)
             SELECT ('00000000-0000-0000-0005-' || lpad(i::text, 12, '0'))::uuid, '{APP}', 'b' || i
             FROM generate_series(1, {BATCH_INSTANCES}) i;
         INSERT INTO subscriptions (id, app_id, nombre, url, ordenado, estado, motivo, suspendido_en)
         VALUES ('{o}', '{APP}', 'ordered', 'http://127.0.0.1/', true, 'activa', NULL, NULL),
                ('{u}', '{APP}', 'unordered', 'http://127.0.0.1/', false, 'activa', NULL, NULL),
                ('{s}', '{APP}', 'suspended', 'http://127.0.0.1/', true, 'suspendida',
                 'rechazo_401', now());
         INSERT INTO events (instance_id, seq, event_id, type, recibido_en, envelope)
             SELECT ('00000000-0000-0000-0001-' || lpad((1 + g % {INSTANCES})::text, 12, '0'))::uuid,
                    1 + g / {INSTANCES}, gen_random_uuid(), 'plans', now(), '{{}}'
             FROM generate_series(0, {events} - 1) g;
         INSERT INTO outbox (shard, topic, key, event_seq)
             SELECT 0, 'events', instance_id::text, seq FROM events
             WHERE instance_id = '{i1}' AND seq <= {DELIVERED} ORDER BY seq;
         INSERT INTO outbox (shard, topic, key, payload) VALUES (0, 'deliveries', '{i1}', '\\x7b7d');
         INSERT INTO outbox (shard, topic, key, event_seq)
             SELECT 0, 'events', instance_id::text, seq FROM events
             WHERE instance_id <> '{i1}' AND seq <= {OUTBOX_BACKLOG} / ({INSTANCES} - 1)
             ORDER BY seq, instance_id;",
        i1 = instance(1),
        o = subscription(ORDERED),
        u = subscription(UNORDERED),
        s = subscription(SUSPENDED),
        events = OPEN + DELIVERED * INSTANCES,
    );
    conn.execute(script.as_str()).await.unwrap();
    // Per lane: the first DELIVERED delivered (the ordered subscription's
    // 40 days ago, due for retention; the unordered one's yesterday), the
    // rest pendiente and due for an hour (stale), the ordered ones parked
    // behind their head. The suspended subscription holds a quarter as
    // many, all parked.
    let deliveries = |sub: i64, delivered_days: i64, parked: bool, up_to: i64| {
        format!(
            "INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq,
                                     estado, proximo_intento, entregado_en, aparcado_en, creado_en)
             SELECT motor_uuid_v7(), '{sub}', '{APP}', e.instance_id, e.event_id, e.seq,
                    CASE WHEN e.seq <= {DELIVERED} THEN 'entregada' ELSE 'pendiente' END,
                    CASE WHEN e.seq > {DELIVERED}
                         THEN now() - interval '1 hour' + e.seq * interval '1 ms' END,
                    CASE WHEN e.seq <= {DELIVERED}
                         THEN now() - make_interval(days => {delivered_days}) END,
                    CASE WHEN {parked} AND e.seq > {DELIVERED} + 1 THEN now() END,
                    now() - make_interval(days => {delivered_days} + 1)
             FROM events e WHERE e.seq <= {up_to}",
            sub = subscription(sub),
        )
    };
    let per_lane = OPEN / INSTANCES + DELIVERED;
    for sql in [
        deliveries(ORDERED, 40, true, per_lane),
        deliveries(UNORDERED, 1, false, per_lane),
        deliveries(SUSPENDED, 40, true, per_lane / 4),
    ] {
        conn.execute(sql.as_str()).await.unwrap();
    }
}

/// [`TENANT_SUBSCRIPTIONS`] subscriptions, six to an app of its own, unless
/// they are there.
async fn add_tenants(conn: &mut PgConnection) {
    let script = format!(
        "INSERT INTO apps (id, nombre)
             SELECT ('00000000-0000-0000-0003-' || lpad(a::text, 12, '0'))::uuid, 'tenant ' || a
             FROM generate_series(1, {apps}) a
         ON CONFLICT DO NOTHING;
         INSERT INTO subscriptions (id, app_id, nombre, url, ordenado)
             SELECT ('00000000-0000-0000-0004-' || lpad(n::text, 12, '0'))::uuid,
                    ('00000000-0000-0000-0003-' || lpad((1 + n / 6)::text, 12, '0'))::uuid,
                    'tenant ' || n, 'http://127.0.0.1/', true
             FROM generate_series(0, {TENANT_SUBSCRIPTIONS} - 1) n
         ON CONFLICT DO NOTHING;",
        apps = TENANT_SUBSCRIPTIONS / 6,
    );
    conn.execute(script.as_str()).await.unwrap();
}

/// `ids` comma-separated, as inside a `uuid[]` literal's braces.
fn listed(ids: &[Uuid]) -> String {
    ids.iter()
        .map(Uuid::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// `record_delivered_many`'s arguments for first attempts of `ids`, each
/// delivered (204, 12 ms, one key).
fn delivered(ids: &[Uuid]) -> String {
    let each = |v: &str| vec![v; ids.len()].join(",");
    format!(
        "'{{{}}}', '{{{}}}', '{{{}}}', ARRAY[{}], '{{{}}}', ARRAY[{}], ARRAY[{}]",
        listed(ids),
        each("1"),
        each("204"),
        each("now()"),
        each("12"),
        each("'whk_1'"),
        each("now()"),
    )
}

/// The delivery of a subscription's lane `i` at `seq`.
async fn at(conn: &mut PgConnection, sub: i64, i: i64, seq: i64) -> Uuid {
    sqlx::query_scalar(
        "SELECT id FROM deliveries WHERE subscription_id = $1 AND instance_id = $2 AND seq = $3",
    )
    .bind(subscription(sub))
    .bind(instance(i))
    .bind(seq)
    .fetch_one(conn)
    .await
    .unwrap()
}

/// `next_after_many`'s arguments for heads `ids` that each claim a next:
/// their ids, then their subscriptions, instances and lanes as the record
/// returns them, then the ids again.
async fn following(conn: &mut PgConnection, ids: &[Uuid]) -> String {
    let rows: Vec<(Uuid, Uuid, String)> = sqlx::query_as(
        "SELECT d.subscription_id, d.instance_id, d.lane
         FROM UNNEST($1::uuid[]) WITH ORDINALITY AS h(id, n)
         JOIN deliveries d ON d.id = h.id ORDER BY h.n",
    )
    .bind(ids)
    .fetch_all(conn)
    .await
    .unwrap();
    assert_eq!(rows.len(), ids.len(), "every head is a delivery");
    let column = |f: &dyn Fn(&(Uuid, Uuid, String)) -> String| {
        rows.iter().map(f).collect::<Vec<_>>().join(",")
    };
    let ids = listed(ids);
    format!(
        "'{{{ids}}}', '{{{}}}', '{{{}}}', '{{{}}}', '{{{ids}}}'",
        column(&|r| r.0.to_string()),
        column(&|r| r.1.to_string()),
        column(&|r| r.2.clone()),
    )
}

/// For each hot statement, the arguments (SQL literals) it runs with: what
/// the engine passes on a backlog like this one.
async fn cases(conn: &mut PgConnection) -> Vec<(&'static str, String)> {
    let head = at(conn, ORDERED, 1, DELIVERED + 1).await;
    let parked = at(conn, ORDERED, 1, DELIVERED + OPEN / INSTANCES / 2).await;
    let suspended_head = at(conn, SUSPENDED, 1, DELIVERED + 1).await;
    // The sweeper's batch, as it would find it, plus lane heads and parked
    // deliveries of the ordered subscription (which requeue must refuse).
    let mut swept: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM deliveries WHERE subscription_id = $1 AND estado = 'pendiente'
         ORDER BY proximo_intento, id LIMIT 1000",
    )
    .bind(subscription(UNORDERED))
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    for i in 1..=INSTANCES {
        swept.push(at(conn, ORDERED, i, DELIVERED + 1).await);
        swept.push(at(conn, ORDERED, i, DELIVERED + 2).await);
    }
    let ids = listed(&swept);
    let (o, u, s, i1) = (
        subscription(ORDERED),
        subscription(UNORDERED),
        subscription(SUSPENDED),
        instance(1),
    );
    // The seq of a new event at the end of lane 1, for the append.
    let next: i64 = sqlx::query_scalar("SELECT max(seq) + 1 FROM events WHERE instance_id = $1")
        .bind(i1)
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    // What an optimistic append of instance 1 expects (its lock's read).
    let (generation, last_seq): (i64, i64) =
        sqlx::query_as("SELECT generation, last_seq FROM instances WHERE id = $1")
            .bind(i1)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
    let heads = INSTANCES as usize;
    let mut lane_head_ids = Vec::new();
    for i in 1..=INSTANCES {
        lane_head_ids.push(at(conn, ORDERED, i, DELIVERED + 1).await);
    }
    let lane_heads = listed(&lane_head_ids);
    // The second delivery of each lane: parked behind its head.
    let mut behind_heads = Vec::new();
    for i in 1..=INSTANCES {
        behind_heads.push(at(conn, ORDERED, i, DELIVERED + 2).await);
    }
    let behind_heads = listed(&behind_heads);
    // A batch of one event for each of BATCH_INSTANCES instances, as the
    // intake's group commit appends under load: each ordered lane free,
    // the unordered subscription's room (64 in this process) filled.
    let batch = {
        let n = BATCH_INSTANCES as usize;
        let instances = listed(
            &(1..=BATCH_INSTANCES)
                .map(batch_instance)
                .collect::<Vec<_>>(),
        );
        let each = |v: &str| vec![v; n].join(",");
        format!(
            "'{{{}}}', now(), \
             '{{{instances}}}', '{{{}}}', ARRAY[{}], '{{{}}}', ARRAY[{}], ARRAY[{}], \
             '{{{instances}}}', '{{{}}}', '30 seconds', '{{{}}}', ARRAY[{}], '{{}}', '{{}}', \
             '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', 64",
            each("1"),
            each("1"),
            each("gen_random_uuid()"),
            each("plans"),
            each("NULL::text"),
            each("'{}'"),
            each("1"),
            each("live"),
            each("NULL::text"),
        )
    };
    // As many of the unordered subscription's oldest open deliveries.
    let unordered_heads = following(conn, &swept[100..100 + heads]).await;
    let after_head = following(conn, &[head]).await;
    let after_lane_heads = following(conn, &lane_head_ids).await;
    // The sweeper's hints: (subscription, instance, lane, seq) arrays.
    let hints_of = |lanes: &[(Uuid, Uuid, i64)]| {
        let list = |f: &dyn Fn(&(Uuid, Uuid, i64)) -> String| {
            lanes.iter().map(f).collect::<Vec<_>>().join(",")
        };
        format!(
            "'{{{}}}', '{{{}}}', '{{{}}}', '{{{}}}'",
            list(&|l| l.0.to_string()),
            list(&|l| l.1.to_string()),
            list(&|_| "live".to_owned()),
            list(&|l| l.2.to_string()),
        )
    };
    let mut lanes = Vec::new();
    for sub in [o, u, s] {
        for i in 1..=INSTANCES {
            lanes.push((sub, instance(i), DELIVERED + 1));
        }
    }
    let hints = hints_of(&lanes);
    let half: Vec<_> = lanes.iter().step_by(2).map(|l| (l.0, l.1, 1)).collect();
    let half_hints = hints_of(&half);
    vec![
        ("claim", format!("'{head}', 1, '30 seconds'")),
        ("claim", format!("'{parked}', 1, '30 seconds'")),
        ("claim", format!("'{suspended_head}', 1, '30 seconds'")),
        ("park_or_why_not", format!("'{parked}', 1")),
        (
            "record_attempt",
            format!("'{head}', 1, 'entregada', 204, NULL, NULL, now()"),
        ),
        (
            "record_attempt",
            format!(
                "'{head}', 1, 'pendiente', 503, 'http_503', now() + interval '5 seconds', now()"
            ),
        ),
        ("record_delivered_many", delivered(&[head])),
        ("record_delivered_many", delivered(&lane_head_ids)),
        // A group commit as large as the recorder's batches (256 at most):
        // the unordered subscription's 200 oldest open deliveries. Each
        // row's attempt is read at its place in the arrays: joined to
        // them, a nested loop over both compared 40,000 pairs.
        ("record_delivered_many", delivered(&swept[..200])),
        (
            "next_after_many",
            format!("{after_head}, '30 seconds', now()"),
        ),
        (
            "next_after_many",
            format!("{after_lane_heads}, '30 seconds', now()"),
        ),
        // An unordered subscription's chains: each claims one of its
        // oldest due deliveries.
        (
            "next_after_many",
            format!("{unordered_heads}, '30 seconds', now()"),
        ),
        // After a commit: first attempts parked behind busy lanes, and
        // ones whose lane is free.
        ("claim_freed", format!("'{{{behind_heads}}}', '30 seconds'")),
        ("claim_freed", format!("'{{{lane_heads}}}', '30 seconds'")),
        ("finishing_lanes", format!("'{{{behind_heads}}}'")),
        // One event (its outbox record, its instance's last_seq) and its
        // fan-out: the ordered lane is busy, the unordered one's delivery
        // is claimed (room for 64), the suspended one's is parked.
        (
            "append",
            format!(
                "'{{1}}', now(), '{{{i1}}}', '{{{next}}}', ARRAY[gen_random_uuid()], '{{plans}}', \
                 ARRAY[NULL::text], ARRAY['{{}}'], '{{{i1}}}', '{{{next}}}', '30 seconds', \
                 '{{live}}', ARRAY[NULL::text], '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', \
                 '{{}}', '{{}}', 64"
            ),
        ),
        // The same as an optimistic append (ledger::Appender): the
        // instance locked and checked by the statement, and its source_id
        // looked up; the unordered subscription has no room left.
        (
            "append",
            format!(
                "'{{1}}', now(), '{{{i1}}}', '{{{next}}}', ARRAY[gen_random_uuid()], '{{plans}}', \
                 ARRAY['plans-source'], ARRAY['{{}}'], '{{{i1}}}', '{{{next}}}', '30 seconds', \
                 '{{live}}', ARRAY[NULL::text], '{{{i1}}}', '{{{last_seq}}}', '{{{generation}}}', \
                 '{{{i1}}}', '{{plans-source}}', '{{{u}}}', '{{0}}', 64"
            ),
        ),
        // A batch's fan-out: each new ordered lane's open delivery probed
        // once, not looked up again in a list of the lanes for each of the
        // 900 candidates; each event's app read by its instance's key.
        ("append", batch),
        // A relay round: lane 1's first events' records, a job's record
        // and the first of the other lanes' backlog, each event's
        // envelope read by the ledger's key.
        ("fetch_after", "'{0}', 1000, '{}', '{}'".into()),
        ("claim_next", format!("'{o}', '{i1}', 'live', '30 seconds'")),
        ("release_next", format!("'{o}', '{i1}', 'live'")),
        ("release", format!("'{o}', NULL")),
        ("release", format!("'{o}', 'live'")),
        ("release", format!("'{s}', NULL")),
        ("release", format!("'{u}', NULL")),
        // A whole round (from the nil uuid to the max one).
        (
            "due_lane_heads",
            format!("'5 seconds', 1000, '{{}}', '{{}}', '{{}}', '{{}}', {WHOLE}"),
        ),
        (
            "due_lane_heads",
            format!("'0 seconds', 1000, '{{}}', '{{}}', '{{}}', '{{}}', {WHOLE}"),
        ),
        // A later pass: every lane known, its head where it was.
        (
            "due_lane_heads",
            format!("'5 seconds', 1000, {hints}, {WHOLE}"),
        ),
        // Half the lanes known, at their first delivered seq: the rest
        // are walked in the ranges between.
        (
            "due_lane_heads",
            format!("'0 seconds', 1000, {half_hints}, {WHOLE}"),
        ),
        // One slice of the subscriptions: from the ordered one to the end.
        (
            "due_lane_heads",
            format!("'0 seconds', 1000, '{{}}', '{{}}', '{{}}', '{{}}', '{o}', '{MAX}'"),
        ),
        ("requeue", format!("'{{{ids}}}'")),
        ("purge_delivered", "30, 1000, '{visito}'".into()),
        ("purge_delivered", "365, 1000, '{}'".into()),
        (
            "purge_contract",
            "'visito', '30 days', '30 days', 1000".into(),
        ),
        ("purge_cancelled", "30, 1000, '{visito}'".into()),
        ("purge_cancelled", "365, 1000, '{}'".into()),
        (
            "purge_contract_cancelled",
            "'visito', '30 days', 1000".into(),
        ),
        // The same statement over subscriptions that hold the backlog (the
        // table's are `motor`'s): each probe reads cancelled rows only.
        (
            "purge_contract_cancelled",
            "'motor', '30 days', 1000".into(),
        ),
    ]
}

/// What is wrong with one plan node and, recursively, its children. A plan
/// without `ANALYZE` is checked only for a locking subquery under a nested
/// loop (the plan that runs for minutes); with it, the nodes that ran.
fn faults(node: &Value, under_nested_loop: bool, out: &mut Vec<String>) {
    let kind = node["Node Type"].as_str().unwrap_or_default();
    let relation = node["Relation Name"].as_str().unwrap_or_default();
    let analysed = node.get("Actual Loops").is_some();
    let loops = node["Actual Loops"].as_f64().unwrap_or(1.0);
    if analysed && loops == 0.0 {
        return;
    }
    let what = format!(
        "{kind}{}{}",
        if relation.is_empty() { "" } else { " on " },
        relation
    );
    if analysed && kind == "Seq Scan" && relation == "deliveries" {
        out.push(format!("{what}: reads the whole table"));
    }
    if kind == "LockRows" && (loops > LOCKS || under_nested_loop) {
        out.push(format!(
            "{what}: a locking subquery under a nested loop (ran {loops} times)"
        ));
    }
    if let Some(rows) = node["Actual Rows"].as_f64() {
        if rows * loops > BOUND {
            out.push(format!("{what}: {} rows", rows * loops));
        }
    }
    for removed in ["Rows Removed by Filter", "Rows Removed by Join Filter"] {
        if let Some(rows) = node[removed].as_f64() {
            if rows * loops > BOUND {
                out.push(format!("{what}: {removed} {}", rows * loops));
            }
        }
    }
    // A nested loop re-runs its inner side once per row of its outer side:
    // a locking subquery there is the stall when the outer side reads
    // `deliveries` (once per open delivery), not when it is the batch's
    // own input (once per subscription of the batch) or the rows the
    // statement was given by key (once per given delivery).
    let children = node["Plans"].as_array().into_iter().flatten();
    let nested = under_nested_loop
        || (kind == "Nested Loop"
            && children
                .clone()
                .any(|c| c["Parent Relationship"] == "Outer" && reads_deliveries(c)));
    for child in children {
        let inner = child["Parent Relationship"] == "Inner";
        faults(child, nested && (inner || under_nested_loop), out);
    }
}

/// Whether a plan node that ran, or one under it, reads `instances` whole.
/// The hot statements probe the key of each instance they are given: the
/// append read a table of a few hundred whole three times at every call
/// (its lock, its update of `last_seq`, its events' join), under a
/// generic plan that takes its arrays for 10 elements (docs/BENCHMARKS.md,
/// 2026-12-06 19:22), as it would this test's 310.
fn reads_every_instance(node: &Value) -> bool {
    let ran = node["Actual Loops"]
        .as_f64()
        .is_none_or(|loops| loops > 0.0);
    (ran && node["Node Type"] == "Seq Scan" && node["Relation Name"] == "instances")
        || node["Plans"]
            .as_array()
            .into_iter()
            .flatten()
            .any(reads_every_instance)
}

/// Whether a plan node or one under it scans `deliveries`, other than by
/// the primary key (the statement's own keys, however many it was given).
fn reads_deliveries(node: &Value) -> bool {
    if node["Index Name"] == "deliveries_pkey" && node.get("Index Cond").is_some() {
        return false;
    }
    node["Relation Name"] == "deliveries"
        || node["Plans"]
            .as_array()
            .into_iter()
            .flatten()
            .any(reads_deliveries)
}

/// What the hot statement `name` sets in its transaction first.
fn setup_of(statements: &[HotStatement], name: &str) -> &'static str {
    statements
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no hot statement {name}"))
        .setup
}

/// Checks every hot statement with every case, custom and generic plan;
/// returns what it found wrong.
async fn check(conn: &mut PgConnection, label: &str) -> Vec<String> {
    let statements = motor_store::deliveries::hot_statements();
    let cases = cases(conn).await;
    let mut problems = Vec::new();
    // Prepared anew for each label: a plan is made with the statistics of
    // its time.
    for s in &statements {
        conn.execute(format!("PREPARE {label}_{} ({}) AS {}", s.name, s.params, s.sql).as_str())
            .await
            .unwrap();
    }
    for (name, args) in &cases {
        let setup = setup_of(&statements, name);
        for mode in ["force_custom_plan", "force_generic_plan"] {
            let at = format!("{label}, {mode}: {name}({args:.80})");
            conn.execute(format!("SET plan_cache_mode = {mode}").as_str())
                .await
                .unwrap();
            // The shape first, without running it: a plan that would run
            // for minutes fails here.
            let execute = format!("EXECUTE {label}_{name}({args})");
            let plan = explain(conn, setup, &format!("EXPLAIN (FORMAT JSON) {execute}")).await;
            let mut problem = report(&at, plan);
            if problem.is_none() {
                let sql = format!("EXPLAIN (ANALYZE, FORMAT JSON) {execute}");
                problem = report(&at, explain(conn, setup, &sql).await);
            }
            problems.extend(problem);
        }
    }
    conn.execute("RESET plan_cache_mode").await.unwrap();
    problems
}

/// Generic plans made while `deliveries` and `events` were young (as a
/// fresh database has them: never vacuumed, so the planner takes their
/// size from their files, ten pages at the least), then run on the
/// backlog. Motor starts on an empty database; each connection makes its
/// generic plan after five runs and keeps it until something invalidates
/// it (autovacuum's first `ANALYZE`, a minute or more later, or never in a
/// short burst), while the table grows under it. Here the backlog is set
/// aside, the tables emptied (`TRUNCATE` leaves them as never vacuumed),
/// and for each young state (`kept`, `kept_first`) in turn its deliveries
/// are put back (with `kept` = 0 the tables are empty and taken for ten
/// pages; with a few thousand they are a few dozen pages, where a
/// sequential scan of an array's ids costs less than its probes: the
/// group commit was planned so at 24 pages) and every case's generic plan
/// made and cached; then the rest of the backlog is put back (inserts
/// invalidate no plan), and every state's cases run on their cached plans.
/// A state's deliveries are the first `kept` by `kept_first` (an `ORDER
/// BY` list), with their events.
///
/// The backlog is moved aside and back once for all the `states` given
/// (it was once per state: most of the test's time on a 2-core machine).
/// A state is reached by inserting what it has more than the one before,
/// so each state's deliveries must include the last one's, and must be
/// what a fresh `TRUNCATE` and an insert of that state alone would make
/// (a `TRUNCATE` between states would invalidate the plans already
/// cached). The empty state then any other is such a sequence; the
/// assertion below checks that the tables hold exactly each state's
/// deliveries and their events.
async fn check_planned_young(conn: &mut PgConnection, states: &[(i64, &str)]) -> Vec<String> {
    let statements = motor_store::deliveries::hot_statements();
    let cases = cases(conn).await;
    conn.execute(
        "CREATE TEMP TABLE young_events AS SELECT * FROM events;
         CREATE TEMP TABLE young_deliveries AS SELECT * FROM deliveries;
         TRUNCATE delivery_attempts, deliveries, events;",
    )
    .await
    .unwrap();
    conn.execute("SET plan_cache_mode = force_generic_plan")
        .await
        .unwrap();
    for &(kept, kept_first) in states {
        // The state's deliveries not in the tables yet: the first `kept`
        // by `kept_first`, less what an earlier state put back.
        conn.execute(
            format!(
                "CREATE TEMP TABLE kept AS
                     SELECT * FROM (SELECT * FROM young_deliveries
                                    UNION ALL SELECT * FROM deliveries) d
                     ORDER BY {kept_first} LIMIT {kept};
                 DELETE FROM kept WHERE id IN (SELECT id FROM deliveries);
                 INSERT INTO events SELECT * FROM young_events
                 WHERE event_id IN (SELECT event_id FROM kept);
                 DELETE FROM young_events WHERE event_id IN (SELECT event_id FROM kept);
                 INSERT INTO deliveries SELECT * FROM kept;
                 DELETE FROM young_deliveries WHERE id IN (SELECT id FROM kept);
                 DROP TABLE kept;"
            )
            .as_str(),
        )
        .await
        .unwrap();
        // The tables hold exactly the state's deliveries (no earlier
        // state's delivery outside it) and their events, and are as a
        // fresh database has them.
        let (deliveries, beyond, events, young): (i64, i64, i64, i64) = sqlx::query_as(&format!(
            "SELECT (SELECT count(*) FROM deliveries),
                    (SELECT count(*) FROM deliveries d
                     WHERE d.id NOT IN (SELECT id FROM (SELECT * FROM young_deliveries
                                                        UNION ALL SELECT * FROM deliveries) a
                                        ORDER BY {kept_first} LIMIT {kept})),
                    (SELECT count(*) FROM events e
                     WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.event_id)),
                    (SELECT count(*) FROM pg_class
                     WHERE relname IN ('deliveries', 'events') AND relpages = 0
                       AND reltuples < 0)"
        ))
        .fetch_one(&mut *conn)
        .await
        .unwrap();
        assert_eq!(
            (deliveries, beyond, events),
            (kept, 0, 0),
            "young state of {kept} by {kept_first}: not its deliveries and their events"
        );
        assert_eq!(
            young, 2,
            "deliveries and events are not as a fresh database has them"
        );
        for s in &statements {
            conn.execute(
                format!("PREPARE young{kept}_{} ({}) AS {}", s.name, s.params, s.sql).as_str(),
            )
            .await
            .unwrap();
        }
        // Making a generic plan caches it in the prepared statement.
        for (name, args) in &cases {
            let sql = format!("EXPLAIN (FORMAT JSON) EXECUTE young{kept}_{name}({args})");
            explain(conn, setup_of(&statements, name), &sql)
                .await
                .unwrap();
        }
    }
    conn.execute(
        "INSERT INTO events SELECT * FROM young_events;
         INSERT INTO deliveries SELECT * FROM young_deliveries;
         DROP TABLE young_events, young_deliveries;",
    )
    .await
    .unwrap();
    let mut problems = Vec::new();
    for &(kept, _) in states {
        for (name, args) in &cases {
            let at = format!("planned young ({kept} rows), run on the backlog: {name}({args:.80})");
            let sql = format!("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE young{kept}_{name}({args})");
            problems.extend(report(
                &at,
                explain(conn, setup_of(&statements, name), &sql).await,
            ));
        }
    }
    conn.execute("RESET plan_cache_mode").await.unwrap();
    problems
}

/// What is wrong with one `EXPLAIN`'s plan (or that it did not finish),
/// with the plan, under `at`; `None` when nothing is.
fn report(at: &str, plan: Result<Value, String>) -> Option<String> {
    let mut found = Vec::new();
    match &plan {
        Ok(plan) => {
            faults(&plan[0]["Plan"], false, &mut found);
            if reads_every_instance(&plan[0]["Plan"]) {
                found.push("Seq Scan on instances: reads every instance".to_owned());
            }
        }
        Err(e) => found.push(e.clone()),
    }
    if found.is_empty() {
        return None;
    }
    let shown = plan
        .map(|p| serde_json::to_string_pretty(&p[0]["Plan"]).unwrap_or_default())
        .unwrap_or_default();
    Some(format!("{at}\n  - {}\n{shown:.6000}", found.join("\n  - ")))
}

/// Runs one `EXPLAIN` after the statement's `setup`, in a transaction that
/// is rolled back, with a statement timeout so a runaway plan fails instead
/// of hanging.
async fn explain(conn: &mut PgConnection, setup: &str, sql: &str) -> Result<Value, String> {
    let mut tx = conn.begin().await.unwrap();
    tx.execute("SET LOCAL statement_timeout = '20s'")
        .await
        .unwrap();
    if !setup.is_empty() {
        tx.execute(setup).await.unwrap();
    }
    let plan = sqlx::query(sql)
        .fetch_one(&mut *tx)
        .await
        .map(|row| row.get::<sqlx::types::Json<Value>, _>(0).0)
        .map_err(|e| format!("did not finish: {e}"));
    tx.rollback().await.unwrap();
    plan
}

#[tokio::test]
async fn hot_statements_keep_bounded_plans_on_a_large_backlog() {
    no_problems_on_a_fresh_database("grow with the backlog", |url| async move {
        let mut conn = connect(&url).await;
        let started = std::time::Instant::now();
        build(&mut conn).await;
        eprintln!("backlog built in {:?}", started.elapsed());
        // The first 2,000 by id on a move of their own, first, while the
        // events are in the order they were made (as when each state had
        // a move); then the empty state, and the first open ones put into
        // those empty tables. Put after the open ones, the 2,000 would be
        // the same rows, but their keys would go into the indexes in
        // another order (the primary key 13 pages instead of 10): not the
        // state a fresh database reaches.
        let mut problems = check_planned_young(&mut conn, &[(YOUNG_ROWS, "id")]).await;
        problems.extend(
            check_planned_young(
                &mut conn,
                &[
                    (0, "id"),
                    (YOUNG_OPEN_ROWS, "estado = 'pendiente' DESC, id"),
                ],
            )
            .await,
        );
        eprintln!("young states at {:?}", started.elapsed());
        problems.extend(check(&mut conn, "never_analysed").await);
        eprintln!("never analysed at {:?}", started.elapsed());
        conn.execute("ANALYZE deliveries; ANALYZE events; ANALYZE subscriptions; ANALYZE outbox")
            .await
            .unwrap();
        problems.extend(check(&mut conn, "analysed").await);
        eprintln!("analysed at {:?}", started.elapsed());
        // Statistics taken while every delivery was delivered, then the
        // backlog: a table in its steady state when receivers go down
        // (autovacuum analyses again only once a tenth of it changed), or
        // one that grew since its last ANALYZE. The planner believes open
        // deliveries are rare here.
        conn.execute(
            "CREATE TEMP TABLE backlog AS SELECT * FROM deliveries WHERE estado <> 'entregada';
             DELETE FROM deliveries WHERE estado <> 'entregada';
             ANALYZE deliveries;
             INSERT INTO deliveries SELECT * FROM backlog;
             DROP TABLE backlog;",
        )
        .await
        .unwrap();
        problems.extend(check(&mut conn, "analysed_before_the_backlog").await);
        eprintln!("analysed before the backlog at {:?}", started.elapsed());
        conn.close().await.unwrap();
        problems
    })
    .await;
}

/// Runs `body` on a fresh database, dropped whatever happens (it holds
/// hundreds of MB), and fails with the plans `body` found wrong: they
/// `what`.
async fn no_problems_on_a_fresh_database<F>(what: &str, body: impl FnOnce(String) -> F)
where
    F: std::future::Future<Output = Vec<String>>,
{
    let db = TestDb::new().await;
    let outcome = AssertUnwindSafe(body(db.url.clone())).catch_unwind().await;
    let problems = db.drop_then(outcome).await;
    assert!(
        problems.is_empty(),
        "{} plan(s) {what}:\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// A connection prepares the statements that run once an event or an
/// attempt while `subscriptions` holds three rows, never analysed, and
/// caches their generic plans; then 2,000 tenants subscribe. Those plans
/// read every subscription (the append hashed them all against each new
/// event, the claim scanned them all for its own) until the table is
/// analysed; the sweeper's `statistics::analyze_grown` analyses it (and
/// `apps`), and the same prepared statements, planned again, read only
/// what is theirs.
#[tokio::test]
async fn per_event_plans_made_before_many_tenants_subscribed_are_made_again_once_the_sweeper_analyses(
) {
    no_problems_on_a_fresh_database("read other tenants' subscriptions", |url| async move {
        let mut conn = connect(&url).await;
        build(&mut conn).await;
        let mut sweeper = connect(&url).await;
        assert_eq!(
            analyze_grown(&mut sweeper).await.unwrap(),
            ["instances"],
            "three subscriptions and one app are under the threshold; the batch's \
             instances are not"
        );
        let statements = motor_store::deliveries::hot_statements();
        let cases: Vec<_> = cases(&mut conn)
            .await
            .into_iter()
            .filter(|(name, _)| !PER_PASS.contains(name))
            .collect();
        conn.execute("SET plan_cache_mode = force_generic_plan")
            .await
            .unwrap();
        for s in statements.iter().filter(|s| !PER_PASS.contains(&s.name)) {
            conn.execute(format!("PREPARE few_{} ({}) AS {}", s.name, s.params, s.sql).as_str())
                .await
                .unwrap();
        }
        // Making a generic plan caches it in the prepared statement.
        for (name, args) in &cases {
            let sql = format!("EXPLAIN (FORMAT JSON) EXECUTE few_{name}({args})");
            explain(&mut conn, setup_of(&statements, name), &sql)
                .await
                .unwrap();
        }
        add_tenants(&mut conn).await;
        // The inserting backend reports its counts to the statistics
        // collector once idle (within seconds).
        conn.execute("SELECT pg_stat_force_next_flush()")
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let analysed = loop {
            let analysed = analyze_grown(&mut sweeper).await.unwrap();
            if !analysed.is_empty() || std::time::Instant::now() > deadline {
                break analysed;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        };
        assert_eq!(analysed, ["apps", "subscriptions"]);
        assert_eq!(
            analyze_grown(&mut sweeper).await.unwrap(),
            Vec::<String>::new(),
            "nothing changed since"
        );
        let mut problems = Vec::new();
        for (name, args) in &cases {
            let at = format!("planned with few subscriptions, run with many: {name}({args:.80})");
            let sql = format!("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE few_{name}({args})");
            problems.extend(report(
                &at,
                explain(&mut conn, setup_of(&statements, name), &sql).await,
            ));
        }
        conn.close().await.unwrap();
        sweeper.close().await.unwrap();
        problems
    })
    .await;
}

/// The append runs for every batch of events, and Motor's connections
/// prepare it once. Postgres plans a prepared statement again at every
/// run when it judges its generic plan dearer than a custom one, and it
/// takes an array parameter for 10 elements: with many tenants' instances
/// (whose index probes cost more) it judged the append's generic plan
/// dearer than a custom one for a single event, and planned it again at
/// every append (13,286 plans in 13,275 appends of the shapes bench's
/// many tenants, 0.62 ms each: docs/BENCHMARKS.md, 2026-12-06 17:10;
/// before that, with the events joined to their instances in a
/// materialized step of their own, 1,829 plans in 2,498 appends). So the
/// intake keeps the generic plan (`Held::with_generic_plans`), and that
/// plan must be sound with many tenants and their instances: run through
/// such a session, 20 single-event appends make no custom plan and no
/// plan problem.
#[tokio::test]
async fn the_append_keeps_a_sound_generic_plan_with_many_tenants() {
    no_problems_on_a_fresh_database("made again for every append", |url| async move {
        let mut conn = connect(&url).await;
        build(&mut conn).await;
        add_tenants(&mut conn).await;
        // Five instances to each tenant's app, as the shapes bench's.
        conn.execute(
            "INSERT INTO instances (id, app_id, nombre)
                 SELECT gen_random_uuid(), a.id, 'tenant ' || n
                 FROM apps a CROSS JOIN generate_series(1, 5) n
                 WHERE a.nombre LIKE 'tenant %';
             ANALYZE apps, instances, subscriptions",
        )
        .await
        .unwrap();
        let (_, single) = cases(&mut conn)
            .await
            .into_iter()
            .find(|(name, _)| *name == "append")
            .unwrap();
        conn.close().await.unwrap();
        // The intake's session: one pool connection, so the statement
        // prepared here stays prepared whenever the worker takes it again.
        let pool = motor_store::connect(&url, 1).await.unwrap();
        let mut held = Held::new(pool.clone()).with_generic_plans();
        let statements = motor_store::deliveries::hot_statements();
        let append = statements.iter().find(|s| s.name == "append").unwrap();
        held.conn()
            .await
            .unwrap()
            .execute(format!("PREPARE hot_append ({}) AS {}", append.params, append.sql).as_str())
            .await
            .unwrap();
        let mut problems = Vec::new();
        for run in 0..20 {
            let sql = format!("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE hot_append({single})");
            let at = format!("the append's run {run} with many tenants");
            problems.extend(report(
                &at,
                explain(held.conn().await.unwrap(), append.setup, &sql).await,
            ));
        }
        let (generic, custom): (i64, i64) = sqlx::query_as(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements
             WHERE name = 'hot_append'",
        )
        .fetch_one(held.conn().await.unwrap())
        .await
        .unwrap();
        drop(held);
        pool.close().await;
        if custom > 0 {
            problems.push(format!(
                "the append: {custom} custom plans and {generic} runs of the generic one \
                 in 20 runs"
            ));
        }
        problems
    })
    .await;
}
