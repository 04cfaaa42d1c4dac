//! Faults: the dispatcher killed with SIGKILL in the middle of a run, the
//! broker restarted (losing every topic and offset: memory storage) in the
//! middle of another, and Postgres crashed (stopped in immediate mode, then
//! started from its WAL) in the middle of a third. Afterwards every delivery
//! is terminal, each lane arrived in order, and every copy the receiver saw
//! twice carried the same X-MW-Delivery-Id.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use motor::serve::Role;
use motor_domain::{subscription::SubscriptionId, InstanceId};
use reqwest::Method;
use serde_json::json;

use super::{post_many, receiver::Receiver, receiver::Reply, subscribe};
use motor_system_tests::harness::services::{free_port, PrivateBroker, PrivatePostgres};

use crate::{
    subscriptions::call,
    util::{MotorProcess, Tenant, TestDb, TestMotor, ADMIN_TOKEN},
};

const SCHEDULE: &str = "200,400,600,800,1000,1200";

/// `motor serve --roles dispatch,retry` as its own process.
fn dispatcher(m: &TestMotor) -> MotorProcess {
    MotorProcess::spawn(
        "dispatch,retry",
        &m.db,
        &m.prefix,
        &[("MOTOR_RETRY_SCHEDULE_MS", SCHEDULE)],
    )
}

/// One in five first attempts is a 503 (decided by the delivery id, so it is
/// the same decision whichever process sends it).
fn flaky() -> impl Fn(&super::receiver::Seen) -> Reply {
    |s| {
        let bucket = s
            .delivery_id
            .bytes()
            .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
        if s.previous == 0 && bucket % 5 == 0 {
            Reply::status(503)
        } else {
            Reply::status(204)
        }
    }
}

async fn wait_all_terminal(m: &TestMotor, sub: SubscriptionId, total: i64, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let done: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM deliveries WHERE subscription_id = $1 AND estado <> 'pendiente'",
        )
        .bind(sub.as_uuid())
        .fetch_one(&m.db.pool)
        .await
        .unwrap();
        if done == total {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{done} of {total} deliveries terminal"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Per lane, 2xx arrivals in seq order; every copy of an event carried one
/// delivery id; everything ended `entregada`.
async fn assert_delivered_in_order(
    m: &TestMotor,
    sub: SubscriptionId,
    r: &Receiver,
    instances: &[InstanceId],
    per_instance: i64,
) {
    let seen = r.seen();
    let mut ids: HashMap<(String, i64), String> = HashMap::new();
    let mut duplicates = 0;
    for s in &seen {
        let first = ids
            .entry((s.instance_id.clone(), s.seq))
            .or_insert_with(|| s.delivery_id.clone());
        assert_eq!(
            *first, s.delivery_id,
            "a copy of {}#{} with another delivery id",
            s.instance_id, s.seq
        );
        if s.previous > 0 {
            duplicates += 1;
        }
    }
    for instance in instances {
        let delivered: Vec<i64> = seen
            .iter()
            .filter(|s| s.instance_id == instance.to_string() && flaky()(s).status == 204)
            .map(|s| s.seq)
            .collect();
        let mut firsts = Vec::new();
        for seq in delivered {
            if !firsts.contains(&seq) {
                firsts.push(seq);
            }
        }
        let in_order = firsts
            .iter()
            .enumerate()
            .all(|(i, seq)| *seq == i as i64 + 1);
        assert!(
            in_order && firsts.len() as i64 == per_instance,
            "instance {instance}: lane order broken or incomplete ({} delivered)",
            firsts.len()
        );
    }
    let entregadas: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM deliveries WHERE subscription_id = $1 AND estado = 'entregada'",
    )
    .bind(sub.as_uuid())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert_eq!(entregadas, per_instance * instances.len() as i64);
    eprintln!("{} requests, {duplicates} repeated copies", seen.len());
}

async fn setup(m: &TestMotor) -> (Tenant, Receiver, SubscriptionId) {
    let (status, body) = call(
        m,
        Method::PATCH,
        "/v1/admin/settings",
        ADMIN_TOKEN,
        Some(json!({"webhooks.timeout_segundos": 2})),
    )
    .await;
    assert!(status.is_success(), "{body}");
    let t = m.tenant(10).await;
    let r = Receiver::start().await;
    r.script(flaky());
    let sub = subscribe(m, &t, &r, json!({})).await;
    (t, r, sub)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dispatcher_killed_mid_run_loses_nothing_and_keeps_lane_order() {
    const PER_INSTANCE: usize = 500;
    let m = TestMotor::start_configured(
        TestDb::new().await,
        &[Role::Api, Role::Relay, Role::Sweeper],
        |_| {},
    )
    .await;
    let (t, r, sub) = setup(&m).await;
    let mut first = dispatcher(&m);
    for instance in &t.instances {
        post_many(&m, &t, *instance, PER_INSTANCE, "fault").await;
    }
    let total = (PER_INSTANCE * t.instances.len()) as i64;
    r.wait_for("a third of the run", Duration::from_secs(120), |seen| {
        seen.len() as i64 >= total / 3
    })
    .await;
    first.kill9();
    let at_kill = r.seen().len();
    assert!((at_kill as i64) < total, "the kill must come mid-run");

    let _dispatcher = dispatcher(&m);
    wait_all_terminal(&m, sub, total, Duration::from_secs(240)).await;
    assert_delivered_in_order(&m, sub, &r, &t.instances, PER_INSTANCE as i64).await;
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn broker_restarted_mid_run_loses_nothing_and_keeps_lane_order() {
    const PER_INSTANCE: usize = 300;
    let addr = format!("127.0.0.1:{}", free_port());
    let mut broker = PrivateBroker::start(&addr, &addr);
    let brokers = broker.listen.clone();
    let m = TestMotor::start_configured(
        TestDb::new().await,
        &[
            Role::Api,
            Role::Relay,
            Role::Dispatch,
            Role::Retry,
            Role::Sweeper,
        ],
        |c| {
            c.kafka_brokers = brokers;
            c.retry_schedule_ms = Some(vec![200, 400, 600, 800, 1000, 1200]);
        },
    )
    .await;
    let (t, r, sub) = setup(&m).await;
    for instance in &t.instances {
        post_many(&m, &t, *instance, PER_INSTANCE, "restart").await;
    }
    let total = (PER_INSTANCE * t.instances.len()) as i64;
    r.wait_for("a third of the run", Duration::from_secs(120), |seen| {
        seen.len() as i64 >= total / 3
    })
    .await;
    // Memory storage: every topic, record, group and offset is gone.
    broker.restart();
    assert!(
        (r.seen().len() as i64) < total,
        "the restart must come mid-run"
    );

    wait_all_terminal(&m, sub, total, Duration::from_secs(240)).await;
    assert_delivered_in_order(&m, sub, &r, &t.instances, PER_INSTANCE as i64).await;
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_crashed_mid_run_loses_nothing_and_keeps_lane_order() {
    const PER_INSTANCE: usize = 300;
    let pg = PrivatePostgres::start_new();
    let m = TestMotor::start_configured(
        TestDb::on(&pg.url()).await,
        &[
            Role::Api,
            Role::Relay,
            Role::Dispatch,
            Role::Retry,
            Role::Sweeper,
        ],
        |c| c.retry_schedule_ms = Some(vec![200, 400, 600, 800, 1000, 1200]),
    )
    .await;
    let (t, r, sub) = setup(&m).await;
    for instance in &t.instances {
        post_many(&m, &t, *instance, PER_INSTANCE, "pg-crash").await;
    }
    let total = (PER_INSTANCE * t.instances.len()) as i64;
    r.wait_for("a third of the run", Duration::from_secs(120), |seen| {
        seen.len() as i64 >= total / 3
    })
    .await;
    // Every connection of every role breaks; claims and records in flight
    // fail. Postgres comes back a second later from its WAL.
    pg.crash();
    assert!(
        (r.seen().len() as i64) < total,
        "the crash must come mid-run"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    pg.start();

    wait_all_terminal(&m, sub, total, Duration::from_secs(240)).await;
    assert_delivered_in_order(&m, sub, &r, &t.instances, PER_INSTANCE as i64).await;
    m.stop().await;
}
