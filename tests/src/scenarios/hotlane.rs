//! One hot instance (issue 40): a single ordered lane fed as fast as a
//! producer can while the process that takes its events and runs its
//! chain (`api,relay,dispatch` in one process: first attempts handed over
//! by the ingest commit, parked deliveries handed to the lane's running
//! chain) is killed with -9 and restarted. The checker's `lane_order`
//! and at-least-once invariants judge it as every other scenario.

use std::time::Duration;

use super::{flaky, produce_all_paced, Size};
use crate::{
    check::Report,
    harness::{Run, RunConfig},
};

/// kill -9 of the process running the hot lane a third into the run.
pub async fn hotlane_kill9_dispatch(size: Size) -> anyhow::Result<Report> {
    let mut run = Run::start(RunConfig::new("hotlane-kill9-dispatch")).await?;
    run.spawn("hot", "api,relay,dispatch");
    run.spawn("back", "retry,sweeper");
    run.wait_api(Duration::from_secs(30)).await?;
    run.setup_tenant(1).await?;
    let ordered = run.receiver("ordered").await;
    // A fast receiver, with a few 503s so retries pass through the lane.
    ordered.script(flaky(2, 1));
    run.subscribe(&ordered, true, &[]).await?;
    let per_instance = size.pick(1_500, 6_000);
    let producing = produce_all_paced(&run, per_instance, 5, Duration::from_millis(2));
    run.wait_requests(
        &[&ordered],
        (per_instance / 3) as u64,
        Duration::from_secs(120),
    )
    .await;
    run.kill9_and_restart("hot", Duration::from_secs(1)).await;
    run.wait_api(Duration::from_secs(30)).await?;
    producing.await??;
    run.finish(Duration::from_secs(120)).await
}
