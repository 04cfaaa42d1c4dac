//! The relay, as separate `motor serve --roles relay` processes: killed
//! with SIGKILL mid-run, and two at once on one outbox. Every event reaches
//! `{prefix}.events` (duplicates allowed) and, per instance, first
//! occurrences are in seq order. Plus direct consumption: a plain Kafka
//! consumer gets the very bytes the ledger API serves.

use std::{collections::HashMap, time::Duration};

use motor::serve::Role;
use motor_domain::InstanceId;
use motor_store::Pool;
use serde_json::{json, value::RawValue, Value};

use crate::util::{
    append_to_ledger, first_occurrences, key, read_topic, topic_prefix, wait_outbox_empty,
    KafkaRecord, MotorProcess, Tenant, TestDb, TestMotor,
};

fn relay(db: &TestDb, prefix: &str) -> MotorProcess {
    MotorProcess::spawn("relay", db, prefix, &[])
}

/// Appends `total` events over the tenant's instances in batches of 100,
/// through the library call, round-robin so every instance grows together.
async fn produce(pool: Pool, instances: Vec<InstanceId>, total: usize) {
    let batch = 100;
    for round in 0..total / batch {
        let instance = instances[round % instances.len()];
        let events: Vec<Value> = (0..batch)
            .map(|i| json!({"type": "relay.test", "data": {"round": round, "i": i}}))
            .collect();
        append_to_ledger(&pool, instance, &events).await;
    }
}

async fn published(pool: &Pool, produced_so_far: i64) -> i64 {
    produced_so_far - motor_store::outbox::pending(pool).await.unwrap()
}

async fn event_count(pool: &Pool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Every (instance, seq) of the ledger is on the topic and first
/// occurrences are in seq order. Returns (records, duplicates).
async fn assert_topic_complete(
    pool: &Pool,
    prefix: &str,
    instances: &[InstanceId],
) -> (usize, usize) {
    let total = event_count(pool).await as usize;
    let records = read_topic(&format!("{prefix}.events"), total);
    let firsts = first_occurrences(&records);
    let mut unique = 0;
    for instance in instances {
        let last: i64 = sqlx::query_scalar("SELECT last_seq FROM instances WHERE id = $1")
            .bind(uuid::Uuid::from(*instance))
            .fetch_one(pool)
            .await
            .unwrap();
        let seen = firsts
            .get(&instance.to_string())
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            seen.len() as i64,
            last,
            "instance {instance}: every event on the topic"
        );
        let in_order = seen.iter().enumerate().all(|(i, seq)| *seq == i as i64 + 1);
        assert!(
            in_order,
            "instance {instance}: first occurrences out of seq order"
        );
        unique += seen.len();
    }
    // One partition per instance: the key decides.
    let mut partition_of: HashMap<&str, i32> = HashMap::new();
    for r in &records {
        assert_eq!(
            *partition_of.entry(&r.key).or_insert(r.partition),
            r.partition,
            "key {} in two partitions",
            r.key
        );
    }
    (records.len(), records.len() - unique)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn relay_killed_mid_run_loses_nothing_and_keeps_order() {
    const TOTAL: usize = 20_000;
    let db = TestDb::new().await;
    let tenant = Tenant::create(&db.pool, 4).await;
    let prefix = topic_prefix();

    let mut first = relay(&db, &prefix);
    let producer = tokio::spawn(produce(db.pool.clone(), tenant.instances.clone(), TOTAL));

    // Kill once the relay is well into the run: some published, more coming.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let produced = event_count(&db.pool).await;
        if produced >= 4_000 && published(&db.pool, produced).await >= 2_000 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "relay made no progress"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill9();
    let produced_at_kill = event_count(&db.pool).await;
    let published_at_kill = published(&db.pool, produced_at_kill).await;

    producer.await.unwrap();
    let pending = motor_store::outbox::pending(&db.pool).await.unwrap();
    assert!(
        pending > 0,
        "the kill must leave work behind (published {published_at_kill} of {produced_at_kill})"
    );

    let _relay = relay(&db, &prefix);
    wait_outbox_empty(&db.pool, Duration::from_secs(120)).await;
    let (records, duplicates) = assert_topic_complete(&db.pool, &prefix, &tenant.instances).await;
    assert!(records >= TOTAL);
    eprintln!("relay crash: {records} records, {duplicates} duplicates, killed after {published_at_kill} published");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_relays_share_the_outbox_and_keep_order() {
    const TOTAL: usize = 20_000;
    let db = TestDb::new().await;
    let tenant = Tenant::create(&db.pool, 8).await;
    let prefix = topic_prefix();

    let _a = relay(&db, &prefix);
    let _b = relay(&db, &prefix);
    produce(db.pool.clone(), tenant.instances.clone(), TOTAL).await;
    wait_outbox_empty(&db.pool, Duration::from_secs(120)).await;

    // Both relays hold shards: the advisory locks are split between two
    // sessions, and together they cover every shard. A rebalance frees a
    // relay's excess shards before the other takes them at its own next
    // one, so the split is read until it is whole (or the deadline).
    let all: Vec<i64> = (0..motor_domain::OUTBOX_SHARDS as i64).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let holders: Vec<(i32, Vec<i64>)> = sqlx::query_as(
            "SELECT l.pid, array_agg(l.objid::bigint ORDER BY l.objid) FROM pg_locks l
             JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'advisory' AND a.datname = current_database()
             GROUP BY l.pid",
        )
        .fetch_all(&db.pool)
        .await
        .unwrap();
        let mut shards: Vec<i64> = holders.iter().flat_map(|(_, s)| s.clone()).collect();
        shards.sort();
        if holders.len() == 2 && shards == all {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "two relays never held every shard once between them: {holders:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let (records, _) = assert_topic_complete(&db.pool, &prefix, &tenant.instances).await;
    assert!(records >= TOTAL);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plain_consumer_gets_the_ledger_bytes() {
    let m = TestMotor::start(&[Role::Api, Role::Relay]).await;
    let t = m.tenant(2).await;
    for (n, instance) in t.instances.iter().enumerate() {
        for i in 0..3 {
            let body = json!([{"type": "message.sent", "data": {"texto": "hola ñandú", "i": i, "n": n}},
                              {"type": "message.updated", "data": {"estado": "leido"}, "command_id": "c-9"}]);
            let res = m
                .http
                .post(m.url(&format!("/v1/instances/{instance}/events")))
                .bearer_auth(&t.token)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 201);
        }
    }
    wait_outbox_empty(&m.db.pool, Duration::from_secs(30)).await;
    let records = read_topic(&format!("{}.events", m.prefix), 12);

    #[derive(serde::Deserialize)]
    struct Page<'a> {
        #[serde(borrow)]
        events: Vec<&'a RawValue>,
    }
    let mut compared = 0;
    for instance in &t.instances {
        let text = m
            .http
            .get(m.url(&format!("/v1/instances/{instance}/events?limit=500")))
            .bearer_auth(&t.token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let page: Page<'_> = serde_json::from_str(&text).unwrap();
        let on_topic: Vec<&crate::util::KafkaRecord> = records
            .iter()
            .filter(|r| r.key == instance.to_string())
            .collect();
        assert_eq!(on_topic.len(), page.events.len());
        for (record, api) in on_topic.iter().zip(&page.events) {
            assert_eq!(
                std::str::from_utf8(&record.payload).unwrap(),
                api.get(),
                "Kafka value and ledger API must be byte-identical"
            );
            let envelope: Value = serde_json::from_str(api.get()).unwrap();
            assert_eq!(
                record.headers["event_id"],
                envelope["event_id"].as_str().unwrap()
            );
            assert_eq!(record.headers["seq"], envelope["seq"].to_string());
            assert_eq!(record.headers["instance_id"], instance.to_string());
            assert_eq!(record.headers["type"], envelope["type"].as_str().unwrap());
            assert_eq!(record.headers.len(), 4, "{:?}", record.headers);
            compared += 1;
        }
    }
    assert_eq!(compared, 12);
    m.stop().await;
}

/// A relay's read deletes what the broker acknowledged and leaves out what
/// is still in flight (rounds overlap: the next read comes before the
/// last round's acknowledgements), in one statement.
#[tokio::test]
async fn a_read_leaves_out_records_in_flight_and_deletes_the_acknowledged() {
    let db = TestDb::new().await;
    let tenant = Tenant::create(&db.pool, 1).await;
    let events: Vec<Value> = (0..4)
        .map(|i| json!({"type": "relay.test", "data": {"i": i}}))
        .collect();
    append_to_ledger(&db.pool, tenant.instances[0], &events).await;
    let shards: Vec<i32> = (0..motor_domain::OUTBOX_SHARDS).collect();
    let ids = |records: &[motor_store::outbox::PendingRecord]| -> Vec<i64> {
        records.iter().map(|r| r.id).collect()
    };
    use motor_store::outbox::fetch_after;

    let all = ids(&fetch_after(&db.pool, &shards, 10, &[], &[]).await.unwrap());
    assert_eq!(all.len(), 4);
    assert!(all.windows(2).all(|w| w[0] < w[1]), "id order: {all:?}");

    // Two in flight: the read gets the other two, in order.
    let read = fetch_after(&db.pool, &shards, 10, &[], &all[..2])
        .await
        .unwrap();
    assert_eq!(ids(&read), all[2..]);
    // The first two acknowledged, the third in flight: only the fourth,
    // and the first two are gone.
    let read = fetch_after(&db.pool, &shards, 10, &all[..2], &all[2..3])
        .await
        .unwrap();
    assert_eq!(ids(&read), all[3..]);
    assert_eq!(motor_store::outbox::pending(&db.pool).await.unwrap(), 2);
    // The limit counts only what is read.
    let read = fetch_after(&db.pool, &shards, 1, &[], &[]).await.unwrap();
    assert_eq!(ids(&read), all[2..3]);
}

/// After a round that published records but not a whole batch, the relay
/// reads again no sooner than `MOTOR_RELAY_PACE_MS` after that round
/// began: what is committed meanwhile waits, and leaves together. (The
/// record timestamps are the relay producer's clock when a round handed
/// it the records.)
#[tokio::test]
async fn a_relay_waits_its_pace_after_a_round_before_reading_again() {
    const PACE_MS: i64 = 5_000;
    let db = TestDb::new().await;
    let prefix = topic_prefix();
    let tenant = Tenant::create(&db.pool, 1).await;
    let topic = format!("{prefix}.events");
    let pace = PACE_MS.to_string();
    topics_first(&prefix).await;
    let _relay = MotorProcess::spawn("relay", &db, &prefix, &[("MOTOR_RELAY_PACE_MS", &pace)]);
    let event = |i: i32| vec![json!({"type": "relay.test", "data": {"i": i}})];
    let instance = tenant.instances[0];

    append_to_ledger(&db.pool, instance, &event(0)).await;
    let first_at = left_at(&read_topic(&topic, 1)[0]);
    // Two more, each in a transaction of its own, while the pace runs.
    let appended_at = chrono::Utc::now().timestamp_millis();
    append_to_ledger(&db.pool, instance, &event(1)).await;
    append_to_ledger(&db.pool, instance, &event(2)).await;

    let records = read_topic(&topic, 3);
    assert_eq!(records.len(), 3, "each event once");
    assert_held_for_pace(first_at, appended_at, PACE_MS, 1_000, &records[1..]);
}

/// Makes `prefix`'s topics as a relay would (4 partitions, as the tests'
/// Motor): a reader that asks for a topic before the relay made it is
/// assigned no partition, and reads nothing.
async fn topics_first(prefix: &str) {
    motor_bus::topics::ensure_topics(&motor_bus::BusConfig {
        brokers: motor_system_tests::harness::shared_brokers(),
        prefix: prefix.to_owned(),
        partitions: 4,
        replication: 1,
    })
    .await
    .unwrap();
}

/// When the relay's producer took a record (its timestamp, in ms).
fn left_at(record: &KafkaRecord) -> i64 {
    record.timestamp_ms.expect("records carry their timestamp")
}

/// Asserts that the records `later`, committed at `committed_at` while a
/// pace of `pace_ms` ran from the round that left at `first_at`, left no
/// sooner than the pace's end (half a second of clocks aside); and first
/// that they were committed `headroom_ms` before it at least, or the
/// test could not tell.
fn assert_held_for_pace(
    first_at: i64,
    committed_at: i64,
    pace_ms: i64,
    headroom_ms: i64,
    later: &[KafkaRecord],
) {
    assert!(
        committed_at < first_at + pace_ms - headroom_ms,
        "the first record took too long to read back to test the pace \
         (committed {} ms after it left)",
        committed_at - first_at
    );
    for record in later {
        let at = left_at(record);
        assert!(
            at >= first_at + pace_ms - 500,
            "a record committed {} ms after a round left {} ms after it, \
             before the pace of {pace_ms} ms",
            committed_at - first_at,
            at - first_at
        );
    }
}

/// After a round of events alone (read by users' Kafka consumers, by
/// nothing in Motor), the relay reads again no sooner than
/// `MOTOR_RELAY_EVENTS_PACE_MS` after that round began; a command its own
/// process commits meanwhile is a record an executor waits for, and ends
/// that wait: it leaves after `MOTOR_RELAY_PACE_MS`, long before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_round_of_events_alone_waits_longer_unless_a_command_is_committed() {
    const EVENTS_PACE_MS: i64 = 6_000;
    let m = TestMotor::start_configured(TestDb::new().await, &[Role::Api, Role::Relay], |c| {
        c.relay_events_pace_ms = EVENTS_PACE_MS as u64;
    })
    .await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let token = key(&m.db.pool, t.app, &["events:write", "commands:write"], &[]).await;
    let post = |path: String, body: Value| {
        let req = m.http.post(m.url(&path)).bearer_auth(&token).json(&body);
        async move {
            let res = req.send().await.unwrap();
            let status = res.status();
            assert!(
                status.is_success(),
                "{path}: {status} {}",
                res.text().await.unwrap()
            );
        }
    };
    let event = |i: i32| {
        post(
            format!("/v1/instances/{instance}/events"),
            json!({"type": "t", "data": {"i": i}}),
        )
    };
    let events_topic = format!("{}.events", m.prefix);
    topics_first(&m.prefix).await;

    // Events alone: the second, committed while the first round's pace
    // runs, waits for the events' pace.
    event(0).await;
    let first_at = left_at(&read_topic(&events_topic, 1)[0]);
    let committed_at = chrono::Utc::now().timestamp_millis();
    event(1).await;
    let events = read_topic(&events_topic, 2);
    assert_eq!(events.len(), 2, "each event once");
    assert_held_for_pace(first_at, committed_at, EVENTS_PACE_MS, 2_000, &events[1..]);
    let second_at = left_at(&events[1]);

    // That round was of events alone too; a command committed while its
    // pace runs leaves at once (the relay's pace is 10 ms here).
    let committed_at = chrono::Utc::now().timestamp_millis();
    post(
        format!("/v1/instances/{instance}/commands"),
        json!({"tipo": "reconectar"}),
    )
    .await;
    let commands = read_topic(&format!("{}.commands", m.prefix), 1);
    assert_eq!(commands.len(), 1);
    let command_at = left_at(&commands[0]);
    assert!(
        committed_at < second_at + EVENTS_PACE_MS - 3_000,
        "the second event took too long to read back to test the hurry"
    );
    assert!(
        command_at < committed_at + 2_000,
        "a command committed {} ms after a round of events alone left {} ms \
         after it: it waited for the events' pace",
        committed_at - second_at,
        command_at - second_at
    );
}

/// A commit of the relay's own process rings its bell, and an idle relay
/// reads at once rather than at its next poll; one rung while a read is
/// already due for the end of its pace is kept for after that read, not
/// lost (the relay does not listen to the bell while it waits out its
/// pace: at a steady rate every commit rang it for nothing). The relay
/// runs in this process with polls 20 s apart, so only the bell can make
/// a record leave sooner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bell_wakes_an_idle_relay_at_once_and_a_pacing_one_at_its_pace() {
    const EVENTS_PACE_MS: i64 = 6_000;
    let db = TestDb::new().await;
    let tenant = Tenant::create(&db.pool, 1).await;
    let instance = tenant.instances[0];
    let prefix = topic_prefix();
    topics_first(&prefix).await;
    let bus = motor_bus::BusConfig {
        brokers: motor_system_tests::harness::shared_brokers(),
        prefix: prefix.clone(),
        partitions: 4,
        replication: 1,
    };
    let wake = std::sync::Arc::new(motor_engine::RelayWake::default());
    let mut config = motor_engine::RelayConfig::new(bus);
    config.wake = Some(wake.clone());
    config.idle_wait = Duration::from_secs(20);
    config.idle_max = Duration::from_secs(20);
    config.events_pace = Duration::from_millis(EVENTS_PACE_MS as u64);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let metrics = std::sync::Arc::new(motor_metrics::Metrics::default());
    let relay = tokio::spawn(motor_engine::run_relay(
        config,
        db.pool.clone(),
        metrics.clone(),
        shutdown.clone(),
    ));
    // Once it owns its shards it reads at once (nothing there) and then
    // not again for 20 s: a second for that first read.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while metrics.relay_shards_owned.get() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the relay never took its shards"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let events_topic = format!("{prefix}.events");
    let now = || chrono::Utc::now().timestamp_millis();
    // An event committed in this process, which rings the relay's bell.
    let commit = |i: i32| {
        let (pool, wake) = (db.pool.clone(), wake.clone());
        async move {
            append_to_ledger(&pool, instance, &[json!({"type": "t", "data": {"i": i}})]).await;
            wake.events();
        }
    };

    let committed_at = now();
    commit(0).await;
    let first_at = left_at(&read_topic(&events_topic, 1)[0]);
    assert!(
        first_at < committed_at + 4_000,
        "an idle relay rung by a commit read {} ms after it: it waited for its poll",
        first_at - committed_at
    );

    // A round of events alone: the next read waits for the events' pace,
    // and a bell rung meanwhile brings the record then, not at the poll.
    let committed_at = now();
    commit(1).await;
    commit(2).await;
    let events = read_topic(&events_topic, 3);
    assert_eq!(events.len(), 3, "each event once");
    assert_held_for_pace(first_at, committed_at, EVENTS_PACE_MS, 2_000, &events[1..]);
    for later in &events[1..] {
        assert!(
            left_at(later) < first_at + EVENTS_PACE_MS + 4_000,
            "a record committed during the events' pace left {} ms after the round \
             before it: it waited for the poll",
            left_at(later) - first_at
        );
    }
    shutdown.cancel();
    relay.await.unwrap().unwrap();
}
