//! Issue 33's scenario: a `visito` and an `asixto` subscription, each to
//! a receiver written from its product's document
//! (`harness::contracts`), under the standard workload with the
//! dispatcher killed (-9) a third of the way in; then a manual retry of
//! Visito deliveries that ended `fallida` and an Asixto replay, so both
//! replay identities are exercised. The checker resolves each request's
//! delivery and judges the contracts' identity rules besides every
//! other invariant (`check::contracts`).

use std::time::Duration;

use super::{bucket, flaky, produce_all, split_roles, Size};
use crate::{
    check::Report,
    harness::{contracts::Product, Behaviour, Incoming, Run, RunConfig},
};

const SETTLE: Duration = Duration::from_secs(120);

/// `MOTOR_TEST_LADDERS` for a run: Visito's and Asixto's ladders stand in
/// with the run's own `motor@1` schedule (±20 %, the give-up age), so the
/// checker's retry timing (which knows one schedule) judges them too.
fn stand_in_ladders(config: &RunConfig) -> String {
    let delays = config
        .retry_schedule_ms
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let age_ms = config.give_up_secs.unwrap_or(72 * 3600) * 1000;
    ["visito@1", "asixto@1"]
        .map(|id| format!("{id}={delays};simetrica=20;edad_ms={age_ms}"))
        .join(" ")
}

pub async fn contracts_kill9_dispatch(size: Size) -> anyhow::Result<Report> {
    let mut run = Run::start(RunConfig::new("contracts-kill9-dispatch")).await?;
    let ladders = stand_in_ladders(&run.config);
    run.env.vars.push(("MOTOR_TEST_LADDERS".into(), ladders));
    split_roles(&mut run).await?;
    let (instances, per_instance) = (4, size.pick(150, 400));
    run.setup_tenant(instances).await?;

    // Asixto takes the ordered role: its contract's ordering is per key,
    // and with no `orden_clave` on any event a key's lane is the
    // instance's (`instancia`, `ordenado: true`).
    let asixto = run.receiver("asixto").await;
    asixto.script(flaky(20, 2));
    let asixto_sub = run
        .subscribe_contract(&asixto, Product::Asixto, true)
        .await?;
    // Visito takes the unordered role (it promises no order). About 3 %
    // of first requests are refused 422, so those deliveries end
    // `fallida` at once and are retried by hand at the end.
    let visito = run.receiver("visito").await;
    visito.script(|i: &Incoming| {
        if i.previous == 0 && bucket(&i.delivery_id, 77) < 3 {
            Behaviour::Status(422)
        } else if i.previous == 0 && bucket(&i.delivery_id, 0) < 10 {
            Behaviour::Status(503)
        } else {
            Behaviour::Delay(30, 204)
        }
    });
    let visito_sub = run
        .subscribe_contract(&visito, Product::Visito, false)
        .await?;

    let producing = produce_all(&run, per_instance, 50);
    let expected = (2 * instances * per_instance) as u64;
    run.wait_requests(&[&asixto, &visito], expected / 3, Duration::from_secs(120))
        .await;
    run.kill9_and_restart("dispatch", Duration::from_secs(1))
        .await;
    producing.await??;
    run.settle(SETTLE).await;

    // A manual retry of up to 10 of Visito's failed deliveries (each
    // arrives with the event's eventId again), and an Asixto replay of
    // the first instance's first 40 events (new ids, `replay_of`).
    let failed: Vec<String> = sqlx::query_scalar(
        "SELECT id::text FROM deliveries WHERE subscription_id = $1::uuid \
         AND estado = 'fallida' ORDER BY id LIMIT 10",
    )
    .bind(&visito_sub)
    .fetch_all(&run.pool)
    .await?;
    anyhow::ensure!(
        !failed.is_empty(),
        "no Visito delivery ended fallida: the manual retry would not be exercised"
    );
    for delivery in &failed {
        run.retry_delivery(&visito_sub, delivery).await?;
    }
    let first = run.tenant().instances[0].clone();
    run.replay(&asixto_sub, &first, 1, 40).await?;
    run.finish(SETTLE).await
}
