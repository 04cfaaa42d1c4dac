//! Broker destinations under faults: an ordered subscription into a
//! RabbitMQ queue and an unordered one into a JetStream stream, beside the
//! standard webhook pair, while the dispatching process is killed with
//! SIGKILL and restarted.

use std::time::{Duration, Instant};

use super::{front_and_back, produce_all, standard_subscriptions, Size};
use crate::{
    check::Report,
    harness::{brokers::BrokerReceiver, Run, RunConfig},
};

/// kill -9 of the `back` process (dispatch, retry) a third into the run.
pub async fn brokers_kill9_dispatch(size: Size) -> anyhow::Result<Report> {
    let mut run = Run::start(RunConfig::new("brokers-kill9-dispatch")).await?;
    front_and_back(&mut run).await?;
    run.setup_tenant(4).await?;
    let (ordered, unordered) = standard_subscriptions(&run).await?;
    let rabbit =
        BrokerReceiver::rabbit(&format!("{}-rabbit", run.prefix), run.recorder.clone()).await?;
    run.subscribe_broker(&rabbit, true).await?;
    let nats = BrokerReceiver::nats(&format!("{}-nats", run.prefix), run.recorder.clone()).await?;
    run.subscribe_broker(&nats, false).await?;

    let per_instance = size.pick(150, 400);
    let producing = produce_all(&run, per_instance, 50);
    let expected = (4 * 4 * per_instance) as u64;
    let deadline = Instant::now() + Duration::from_secs(120);
    let seen = || ordered.requests() + unordered.requests() + rabbit.requests() + nats.requests();
    while seen() < expected / 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run.kill9_and_restart("back", Duration::from_secs(1)).await;
    producing.await??;
    let report = run.finish(Duration::from_secs(120)).await;
    rabbit.close().await;
    nats.close().await;
    report
}
