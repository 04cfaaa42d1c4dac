//! Commands under faults (issue 32, item 5): producers send commands —
//! sends and remote operations, each under an `Idempotency-Key`, a few
//! with a short `expires_at`, a few cancelled at once — at a steady rate
//! to several instances; two executors (the example executor as
//! processes: one on the long-poll, the primary path, one on the
//! `{prefix}.commands` topic) run them against a fake provider on
//! loopback in the harness, which acts, refuses, asks to wait, answers
//! slowly (the executors' heartbeats keep their leases), late or never.
//! Meanwhile the API process and the executors are killed with SIGKILL at
//! random moments and started again a second later. Once every command is
//! terminal, a person resends some of the `ambiguo` ones (new commands of
//! the same message) and those run too. `motor-check` judges the history:
//! see `check::commands`.

use std::time::Duration;

use anyhow::Context;
use rand::{rngs::StdRng, Rng, SeedableRng};

use super::{bucket, Size};
use crate::{
    check::Report,
    harness::{
        commands::Ask,
        process::{executor_bin, MotorProcess},
        provider::{Provider, ProviderScript},
        Run, RunConfig,
    },
    history::now_us,
};

/// The lease an executor gets (s): short, so a lease left behind by a
/// kill ends within the run.
const LEASE_SECS: u64 = 3;

pub async fn commands(size: Size) -> anyhow::Result<Report> {
    let mut config = RunConfig::new("commands");
    config.command_lease_secs = Some(LEASE_SECS);
    let mut run = Run::start(config).await?;
    run.spawn("api", "api");
    run.spawn("back", "relay,sweeper");
    run.wait_api(Duration::from_secs(30)).await?;
    let instances = size.pick(3, 4);
    let per_instance = size.pick(30, 150);
    run.setup_tenant(instances).await?;
    let token = run.command_key().await?;
    let provider = Provider::start(
        ProviderScript {
            slow: 3,
            late: 2,
            refuse: 5,
            busy: 10,
            timeout: 2,
            slow_ms: 3_500,
            late_ms: 8_000,
            most_busy: 2,
        },
        run.recorder.clone(),
    )
    .await;

    // The executors: every instance, both paths (a claim decides who runs
    // a command both see).
    let all = run.tenant().instances.join(",");
    let base_args = vec![
        "--url".to_owned(),
        format!("http://{}", run.api),
        "--token".into(),
        token.clone(),
        "--instance".into(),
        all,
        "--provider".into(),
        provider.url(),
        "--provider-timeout-ms".into(),
        "5000".into(),
    ];
    let program = executor_bin();
    run.processes.push(MotorProcess::spawn_program(
        &run.env,
        "exec-poll",
        "executor",
        program.clone(),
        base_args.clone(),
        &[],
    ));
    let mut topic_args = base_args;
    topic_args.extend([
        "--topic".to_owned(),
        "--group".into(),
        format!("{}-executors", run.prefix),
    ]);
    run.processes.push(MotorProcess::spawn_program(
        &run.env,
        "exec-topic",
        "executor",
        program,
        topic_args,
        &[],
    ));

    // Producers: one task per instance, a command every 100 ms or so.
    let producer = run.command_producer(&token);
    let mut producing = tokio::task::JoinSet::new();
    for (i, instance) in run.tenant().instances.clone().into_iter().enumerate() {
        let producer = producer.clone();
        producing.spawn(async move {
            for n in 0..per_instance {
                let message = format!("i{i}-m{n}");
                let roll = bucket(&message, 0);
                let ask = Ask {
                    instance: instance.clone(),
                    kind: if roll < 15 { "grupos" } else { "mensaje" }.into(),
                    message,
                    expires_in: (bucket(&instance, n) < 10).then_some(4),
                    resend_of: None,
                };
                let id = producer.ask(&ask, Duration::from_secs(90)).await?;
                if bucket(&id, 1) < 5 {
                    producer.cancel(&id, Duration::from_secs(90)).await?;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            anyhow::Ok(())
        });
    }

    // Kills at random moments while they produce: the API and each
    // executor at least once, then any of them.
    let mut rng = StdRng::seed_from_u64(now_us() as u64);
    let mut targets = vec!["api", "exec-poll", "exec-topic"];
    let mut kills = 0;
    while !producing.is_empty() {
        let pause = Duration::from_millis(rng.gen_range(1_500..4_500));
        let wait = tokio::time::sleep(pause);
        tokio::pin!(wait);
        tokio::select! {
            done = producing.join_next() => {
                if let Some(done) = done {
                    done.context("producer task")??;
                }
                continue;
            }
            _ = &mut wait => {}
        }
        let target = if targets.is_empty() {
            ["api", "exec-poll", "exec-topic"][rng.gen_range(0..3)]
        } else {
            targets.remove(rng.gen_range(0..targets.len()))
        };
        run.kill9_and_restart(target, Duration::from_secs(1)).await;
        kills += 1;
        if target == "api" {
            run.wait_api(Duration::from_secs(30)).await?;
        }
    }
    eprintln!("[commands] production over after {kills} kills");

    // Everything ends: a lease left behind runs out (ambiguo), the rest
    // is reported.
    let settled = run.settle_commands(Duration::from_secs(120)).await;
    eprintln!(
        "[commands] settled: {settled}, {} open",
        run.open_commands().await.unwrap_or(-1)
    );

    // A person resends every other ambiguo command: a new command of the
    // same message. Motor never did.
    let ambiguous = run.ambiguous_commands().await?;
    let mut resent = 0;
    for (original, instance, kind, message) in ambiguous.into_iter().step_by(2) {
        let ask = Ask {
            instance,
            kind,
            message,
            expires_in: None,
            resend_of: Some(original),
        };
        producer.ask(&ask, Duration::from_secs(60)).await?;
        resent += 1;
    }
    eprintln!("[commands] {resent} ambiguo commands resent by hand");
    run.settle_commands(Duration::from_secs(90)).await;
    let report = run.finish(Duration::from_secs(5)).await;
    drop(provider);
    report
}
