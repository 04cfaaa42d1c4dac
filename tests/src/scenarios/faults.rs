//! Faults of Motor's own processes and of the services under it: kill -9
//! of each role and of all at once, a broker restart that forgets every
//! topic, a Postgres crash, a rebalance storm, network cuts to Postgres
//! and to the broker (reset, and black-holed).

use std::time::Duration;

use super::{front_and_back, produce_all, split_roles, standard_subscriptions, Size};
use crate::{
    check::Report,
    harness::{
        proxy::Proxy,
        services::{free_port, PrivateBroker, PrivatePostgres},
        Run, RunConfig,
    },
    history::now_us,
};

const SETTLE: Duration = Duration::from_secs(120);

/// Standard workload on `run` (its processes already up): subscriptions,
/// producers in the background; `fault` runs once a third of the expected
/// requests arrived; then the producers finish and the run settles.
async fn with_fault<F, Fut>(
    mut run: Run,
    instances: usize,
    per_instance: usize,
    fault: F,
) -> anyhow::Result<Report>
where
    F: FnOnce(Run) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Run>>,
{
    run.setup_tenant(instances).await?;
    let (ordered, unordered) = standard_subscriptions(&run).await?;
    let producing = produce_all(&run, per_instance, 50);
    let expected = (2 * instances * per_instance) as u64;
    run.wait_requests(
        &[&ordered, &unordered],
        expected / 3,
        Duration::from_secs(120),
    )
    .await;
    let run = fault(run).await?;
    producing.await??;
    run.finish(SETTLE).await
}

/// kill -9 of one role's process (`all`: every process) a third into the
/// run; restarted a second later.
pub async fn kill9(target: &str, size: Size) -> anyhow::Result<Report> {
    let mut run = Run::start(RunConfig::new(&format!("kill9-{target}"))).await?;
    split_roles(&mut run).await?;
    let target = target.to_owned();
    with_fault(run, 4, size.pick(150, 400), |mut run| async move {
        if target == "all" {
            let start = now_us();
            for p in &mut run.processes {
                p.kill9();
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            for p in &mut run.processes {
                p.restart();
            }
            run.fault("kill9", "all", start, now_us());
        } else {
            run.kill9_and_restart(&target, Duration::from_secs(1)).await;
        }
        if target == "api" || target == "all" {
            run.wait_api(Duration::from_secs(30)).await?;
        }
        Ok(run)
    })
    .await
}

/// A broker of the scenario's own restarted mid-run (memory storage: all
/// topics, records, groups and offsets gone).
pub async fn broker_restart(size: Size) -> anyhow::Result<Report> {
    let addr = format!("127.0.0.1:{}", free_port());
    let broker = PrivateBroker::start(&addr, &addr);
    let mut config = RunConfig::new("broker-restart");
    config.brokers = addr;
    let mut run = Run::start(config).await?;
    front_and_back(&mut run).await?;
    let mut broker = broker;
    let broker_ref = &mut broker;
    with_fault(run, 4, size.pick(150, 400), |run| async move {
        let start = now_us();
        broker_ref.restart();
        run.fault("broker-restart", "broker", start, now_us());
        Ok(run)
    })
    .await
}

/// A Postgres of the scenario's own crashed (immediate stop) mid-run and
/// started again from its WAL a second later.
pub async fn postgres_crash(size: Size) -> anyhow::Result<Report> {
    let pg = PrivatePostgres::start_new();
    let mut config = RunConfig::new("postgres-crash");
    config.pg_server = pg.url();
    let mut run = Run::start(config).await?;
    front_and_back(&mut run).await?;
    let pg_ref = &pg;
    with_fault(run, 4, size.pick(150, 400), |run| async move {
        let start = now_us();
        pg_ref.crash();
        tokio::time::sleep(Duration::from_secs(1)).await;
        pg_ref.start();
        run.fault("postgres-crash", "postgres", start, now_us());
        Ok(run)
    })
    .await
}

/// Three dispatch processes; every 3 s one is stopped (alternately
/// SIGTERM and SIGKILL) and a new one started, for the whole run.
pub async fn rebalance_storm(size: Size) -> anyhow::Result<Report> {
    let mut run = Run::start(RunConfig::new("rebalance-storm")).await?;
    run.spawn("front", "api,relay,sweeper");
    run.spawn("retry", "retry");
    for i in 0..3 {
        run.spawn(&format!("dispatch-{i}"), "dispatch");
    }
    run.wait_api(Duration::from_secs(30)).await?;
    let rounds = size.pick(5, 12);
    with_fault(run, 4, size.pick(200, 500), |mut run| async move {
        for round in 0..rounds {
            let name = format!("dispatch-{}", round % 3);
            let start = now_us();
            if round % 2 == 0 {
                run.process(&name).stop();
            } else {
                run.process(&name).kill9();
            }
            run.process(&name).restart();
            tokio::time::sleep(Duration::from_secs(3)).await;
            run.fault("rebalance", &name, start, now_us());
        }
        Ok(run)
    })
    .await
}

/// Every connection between Motor and Postgres black-holed for 5 s (no
/// byte moves, nothing is closed), then healed.
pub async fn netcut_postgres(size: Size) -> anyhow::Result<Report> {
    let proxy = Proxy::start("127.0.0.1:0", "127.0.0.1:5432".parse()?).await;
    let config = RunConfig::new("netcut-postgres");
    let via = format!("postgres://postgres@{}", proxy.addr);
    let mut run = Run::start_via(config, &via).await?;
    front_and_back(&mut run).await?;
    let proxy_ref = &proxy;
    with_fault(run, 4, size.pick(150, 400), |run| async move {
        let start = now_us();
        proxy_ref.blackhole();
        tokio::time::sleep(Duration::from_secs(5)).await;
        proxy_ref.heal();
        run.fault("netcut", "postgres", start, now_us());
        Ok(run)
    })
    .await
}

/// Every connection between Motor and a broker of the scenario's own cut
/// for 5 s (reset, and new ones refused), then healed.
pub async fn netcut_broker(size: Size) -> anyhow::Result<Report> {
    broker_cut("netcut-broker", size, |proxy| proxy.reset(), 5).await
}

/// Every connection between Motor and a broker of the scenario's own
/// black-holed for 10 s (no byte moves, nothing is closed: the clients only
/// notice by their own timeouts), then healed.
pub async fn netcut_broker_blackhole(size: Size) -> anyhow::Result<Report> {
    broker_cut(
        "netcut-broker-blackhole",
        size,
        |proxy| proxy.blackhole(),
        10,
    )
    .await
}

async fn broker_cut(
    scenario: &str,
    size: Size,
    cut: fn(&Proxy),
    seconds: u64,
) -> anyhow::Result<Report> {
    let listen = format!("127.0.0.1:{}", free_port());
    let proxy = Proxy::start("127.0.0.1:0", listen.parse()?).await;
    let advertised = proxy.addr.to_string();
    let _broker = PrivateBroker::start(&listen, &advertised);
    let mut config = RunConfig::new(scenario);
    config.brokers = advertised;
    let mut run = Run::start(config).await?;
    front_and_back(&mut run).await?;
    let proxy_ref = &proxy;
    with_fault(run, 4, size.pick(150, 400), |run| async move {
        let start = now_us();
        cut(proxy_ref);
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        proxy_ref.heal();
        run.fault("netcut", "broker", start, now_us());
        Ok(run)
    })
    .await
}
