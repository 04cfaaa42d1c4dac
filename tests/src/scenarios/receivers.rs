//! Faults at the receiving end and operator actions during live traffic:
//! receivers answering 5xx, 429/503 with `Retry-After`, resetting,
//! hanging, trickling, with a clock 10 minutes off; a poison head; a
//! replay and a secret rotation mid-run; a subscription suspended by a 401
//! and reactivated, with the dispatcher killed right after.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use reqwest::Method;

use super::{bucket, flaky, front_and_back, produce_all, split_roles, Size};
use crate::{
    check::Report,
    harness::{Behaviour, Incoming, Run, RunConfig},
};

const SETTLE: Duration = Duration::from_secs(120);

/// One ordered subscription whose receiver mixes every kind of failure on
/// first attempts (500, 429 and 503 with `Retry-After: 1`, hang past the
/// 1 s timeout, reset), and an unordered one answering slowly.
pub async fn receivers_mix(size: Size) -> anyhow::Result<Report> {
    let mut config = RunConfig::new("receivers-mix");
    config.timeout_secs = 1;
    let mut run = Run::start(config).await?;
    front_and_back(&mut run).await?;
    run.setup_tenant(4).await?;
    let mix = run.receiver("mix").await;
    mix.script(|i: &Incoming| {
        if i.previous > 0 {
            return Behaviour::Status(204);
        }
        match bucket(&i.delivery_id, 0) {
            0..=9 => Behaviour::Status(500),
            10..=14 => Behaviour::RetryAfter(429, 1),
            15..=19 => Behaviour::RetryAfter(503, 1),
            20..=22 => Behaviour::Hang,
            23..=27 => Behaviour::Reset,
            _ => Behaviour::Status(204),
        }
    });
    run.subscribe(&mix, true, &[]).await?;
    let slow = run.receiver("slow").await;
    slow.script(|_: &Incoming| Behaviour::Delay(150, 204));
    run.subscribe(&slow, false, &[]).await?;
    produce_all(&run, size.pick(60, 250), 50).await??;
    run.finish(SETTLE).await
}

/// One request in ten trickles a 200 answer's body slower than the
/// timeout allows, one in twenty a 503's (twice in a row at most); the
/// rest answer 204. (Motor takes a trickled answer's status once the
/// timeout cuts its body: "the status is what counts".)
pub async fn receivers_trickle(size: Size) -> anyhow::Result<Report> {
    let mut config = RunConfig::new("receivers-trickle");
    config.timeout_secs = 1;
    let mut run = Run::start(config).await?;
    front_and_back(&mut run).await?;
    run.setup_tenant(3).await?;
    let r = run.receiver("trickle").await;
    r.script(|i: &Incoming| {
        let b = bucket(&i.delivery_id, i.previous);
        if i.previous < 2 && b < 10 {
            Behaviour::Trickle(200)
        } else if i.previous < 2 && b < 15 {
            Behaviour::Trickle(503)
        } else {
            Behaviour::Status(204)
        }
    });
    run.subscribe(&r, true, &[]).await?;
    produce_all(&run, size.pick(40, 150), 20).await??;
    run.finish(SETTLE).await
}

/// A receiver whose clock is 10 minutes ahead rejects every signature as
/// stale (408): its deliveries are retried until the (10 s) horizon and
/// end `fallida` with `http_408_agotada`. A healthy subscription on the
/// same instances is not held up.
pub async fn receivers_clock_skew(size: Size) -> anyhow::Result<Report> {
    let mut config = RunConfig::new("receivers-clock-skew");
    config.give_up_secs = Some(10);
    let mut run = Run::start(config).await?;
    front_and_back(&mut run).await?;
    run.setup_tenant(2).await?;
    let skewed = run.receiver("skewed").await;
    skewed.script(|i: &Incoming| {
        let now = crate::history::now_us() / 1_000_000 + 600;
        if (i.timestamp - now).abs() > 300 {
            Behaviour::Status(408)
        } else {
            Behaviour::Status(204)
        }
    });
    run.subscribe(&skewed, false, &[]).await?;
    let healthy = run.receiver("healthy").await;
    run.subscribe(&healthy, true, &[]).await?;
    produce_all(&run, size.pick(10, 40), 10).await??;
    run.finish(SETTLE).await
}

/// One lane's head always hangs past the timeout: it is retried until the
/// horizon, ends `fallida` (`timeout_agotada`) and only then does its lane
/// move; other lanes never wait for it.
pub async fn poison_head(size: Size) -> anyhow::Result<Report> {
    let mut config = RunConfig::new("poison-head");
    config.timeout_secs = 1;
    config.give_up_secs = Some(10);
    let mut run = Run::start(config).await?;
    front_and_back(&mut run).await?;
    run.setup_tenant(3).await?;
    let poisoned = run.tenant().instances[0].clone();
    let r = run.receiver("poison").await;
    r.script(move |i: &Incoming| {
        if i.instance_id == poisoned && i.seq == 1 {
            Behaviour::Hang
        } else {
            Behaviour::Status(204)
        }
    });
    run.subscribe(&r, true, &[]).await?;
    produce_all(&run, size.pick(30, 100), 10).await??;
    run.finish(SETTLE).await
}

/// A replay of the first half of one instance's events while live traffic
/// flows: its own lane, new delivery ids, in order.
pub async fn replay_during_live(size: Size) -> anyhow::Result<Report> {
    let mut run = Run::start(RunConfig::new("replay-during-live")).await?;
    front_and_back(&mut run).await?;
    run.setup_tenant(3).await?;
    let r = run.receiver("replayed").await;
    r.script(flaky(10, 2));
    let sub = run.subscribe(&r, true, &[]).await?;
    let per_instance = size.pick(100, 300);
    let first = run.tenant().instances[0].clone();
    run.producer()
        .produce(&first, per_instance / 2, 50, Duration::from_secs(60))
        .await?;
    let producing = produce_all(&run, per_instance / 2, 25);
    run.replay(&sub, &first, 1, (per_instance / 2) as i64)
        .await?;
    producing.await??;
    run.finish(SETTLE).await
}

/// The subscription's secret rotated mid-run: every request verifies
/// (two signatures during the window, the new one first).
pub async fn secret_rotation(size: Size) -> anyhow::Result<Report> {
    let mut run = Run::start(RunConfig::new("secret-rotation")).await?;
    front_and_back(&mut run).await?;
    run.setup_tenant(3).await?;
    let r = run.receiver("rotated").await;
    r.script(flaky(10, 2));
    let sub = run.subscribe(&r, true, &[]).await?;
    let per_instance = size.pick(100, 300);
    let producing = produce_all(&run, per_instance, 25);
    run.wait_requests(
        &[&r],
        (per_instance as u64 * 3) / 3,
        Duration::from_secs(60),
    )
    .await;
    run.rotate(&r, &sub).await?;
    producing.await??;
    run.finish(SETTLE).await
}

/// Many slow requests to an unordered subscription, two dispatch
/// processes: at most 8 in flight per process.
pub async fn unordered_in_flight(size: Size) -> anyhow::Result<Report> {
    let mut run = Run::start(RunConfig::new("unordered-in-flight")).await?;
    run.spawn("front", "api,relay,sweeper");
    run.spawn("back-1", "dispatch,retry");
    run.spawn("back-2", "dispatch,retry");
    run.wait_api(Duration::from_secs(30)).await?;
    run.setup_tenant(8).await?;
    let r = run.receiver("wide").await;
    r.script(|i: &Incoming| {
        if i.previous == 0 && bucket(&i.delivery_id, 0) < 10 {
            Behaviour::Status(503)
        } else {
            Behaviour::Delay(100, 204)
        }
    });
    run.subscribe(&r, false, &[]).await?;
    produce_all(&run, size.pick(40, 150), 40).await??;
    run.finish(SETTLE).await
}

/// The scenario: split roles, two ordered lanes of 1,000 events
/// (150 in the quick run); the receiver's first answer is a 401, which
/// suspends the subscription; once suspended it is reactivated, the
/// receiver then answers 503 to 20 % of requests (never a 4th time in a
/// row, so heads go through the first three tiers), and the dispatch
/// process is killed with SIGKILL two seconds in and restarted. Tiers of
/// 100 ms, 500 ms, 3 s (a tenth of 1 s, 5 s, 30 s).
pub async fn suspended_reactivated(size: Size) -> anyhow::Result<Report> {
    let mut config = RunConfig::new("suspended-reactivated");
    config.retry_schedule_ms = [100, 500, 3000, 12_000, 60_000, 360_000];
    let mut run = Run::start(config).await?;
    split_roles(&mut run).await?;
    run.setup_tenant(2).await?;
    let r = run.receiver("gate").await;
    let open = Arc::new(AtomicBool::new(false));
    let gate = open.clone();
    let flaky = flaky(20, 3);
    r.script(move |i: &Incoming| {
        if !gate.load(Ordering::SeqCst) {
            Behaviour::Status(401)
        } else {
            flaky(i)
        }
    });
    let sub = run.subscribe(&r, true, &[]).await?;
    produce_all(&run, size.pick(150, 1000), 50).await??;
    // Wait for the suspension the 401 causes.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, s) = run
            .call(
                Method::GET,
                &format!("/v1/subscriptions/{sub}"),
                &run.tenant().token,
                None,
            )
            .await?;
        if s["estado"] == "suspendida" {
            break;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "the 401 did not suspend the subscription: {s}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    open.store(true, Ordering::SeqCst);
    run.set_state(&sub, "activa").await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    run.kill9_and_restart("dispatch", Duration::ZERO).await;
    run.finish(Duration::from_secs(240)).await
}
