//! Faults of Motor's own processes and of the services under it: kill -9
//! of each role and of all at once, a broker restart that forgets every
//! topic, a Postgres crash, a rebalance storm, network cuts to Postgres
//! and to the broker (reset, and black-holed).

use std::time::Duration;

use super::{front_and_back, produce_all_paced, split_roles, standard_subscriptions, Size};
use crate::{
    check::Report,
    harness::{
        proxy::Proxy,
        services::{free_port, PostgresPair, PrivateBroker, PrivatePostgres},
        Run, RunConfig,
    },
    history::now_us,
};

const SETTLE: Duration = Duration::from_secs(120);

/// Standard workload on `run` (its processes already up): subscriptions,
/// producers in the background; `fault` runs once a third of the expected
/// requests arrived; then the producers finish and the run settles.
async fn with_fault<F, Fut>(
    run: Run,
    instances: usize,
    per_instance: usize,
    fault: F,
) -> anyhow::Result<Report>
where
    F: FnOnce(Run) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Run>>,
{
    with_fault_paced(run, instances, per_instance, (50, Duration::ZERO), fault).await
}

/// [`with_fault`] with producers posting `batch` events at a time and
/// pausing `pause` after each: production still going when the fault
/// comes.
async fn with_fault_paced<F, Fut>(
    mut run: Run,
    instances: usize,
    per_instance: usize,
    (batch, pause): (usize, Duration),
    fault: F,
) -> anyhow::Result<Report>
where
    F: FnOnce(Run) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Run>>,
{
    run.setup_tenant(instances).await?;
    let (ordered, unordered) = standard_subscriptions(&run).await?;
    let producing = produce_all_paced(&run, per_instance, batch, pause);
    if pause.is_zero() {
        let expected = (2 * instances * per_instance) as u64;
        run.wait_requests(
            &[&ordered, &unordered],
            expected / 3,
            Duration::from_secs(120),
        )
        .await;
    } else {
        // Paced: a third of the events in the ledger, so producers are
        // still going when the fault comes.
        run.wait_events(
            (instances * per_instance / 3) as i64,
            Duration::from_secs(120),
        )
        .await;
    }
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

/// A primary and a standby of the scenario's own (`scripts/pg-pair`),
/// Motor given both hosts (`target_session_attrs=read-write`): a third of
/// the way (by events in the ledger, so producers are still posting) the
/// primary's WAL sender is stopped for 2 s (the standby falls behind, as
/// over a slow link: a synchronous primary's commits wait, an
/// asynchronous one's do not), then the primary is SIGKILLed with every
/// process under it (its machine is lost), the standby promoted (`pg_ctl promote`) 2 s later, and the run goes on
/// against it without restarting Motor. The
/// dump is read from the promoted primary, so `durable` is "every event
/// answered 201 is in the promoted primary's ledger". With `synchronous`
/// false the standby is asynchronous: the scenario shows what is lost
/// (`durable` names each missing event) and is reported, not judged.
pub async fn postgres_failover(synchronous: bool, size: Size) -> anyhow::Result<Report> {
    let pair = PostgresPair::start_new(synchronous);
    let scenario = if synchronous {
        "postgres-failover"
    } else {
        "postgres-failover-async"
    };
    let mut config = RunConfig::new(scenario);
    config.pg_server = pair.primary_server();
    let mut run = Run::start_with_url(config, |db| pair.url(db)).await?;
    front_and_back(&mut run).await?;
    let pair_ref = &pair;
    // Batches of 10 every 400 ms or so: producers are still posting when
    // the primary goes (a third in), so the gap meets them.
    let pacing = (10, Duration::from_millis(400));
    with_fault_paced(run, 4, size.pick(150, 400), pacing, |mut run| async move {
        let start = now_us();
        pair_ref.stall_wal_sender();
        tokio::time::sleep(Duration::from_secs(2)).await;
        pair_ref.kill_primary();
        tokio::time::sleep(Duration::from_secs(2)).await;
        pair_ref.promote();
        run.fault("postgres-failover", "postgres-primary", start, now_us());
        run.repoint(&pair_ref.standby_server()).await?;
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
