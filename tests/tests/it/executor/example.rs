//! `crates/motor/examples/executor.rs` as a process, against `motor serve`
//! as a process: every command it reports is in the ledger with its
//! event, deferred ones come back and end, and its instance is
//! `conectada`. Build it first: `cargo build -p motor --examples` (it is
//! looked for beside the `motor` binary, in `examples/`, or at
//! `$MOTOR_EXECUTOR_BIN`: the harness's `executor_bin`).

use std::{
    collections::HashMap,
    process::{Command, Stdio},
    time::Duration,
};

use motor_domain::command::{CommandId, RawOptions};
use serde_json::Value;

use super::{ledger, operation, send, stored, types_for};
use crate::util::{executor_bin, topic_prefix, MotorProcess, Tenant, TestDb};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_example_executor_runs_every_command_to_an_end_recorded_in_the_ledger() {
    let db = TestDb::new().await;
    let (_motor, base) =
        MotorProcess::serving("api,sweeper", &db, &topic_prefix(), &[], Stdio::inherit()).await;
    let pool = &db.pool;
    let t = Tenant::create(pool, 1).await;
    let instance = t.instances[0];
    let token = crate::util::key(pool, t.app, &["commands:execute"], &[]).await;
    let mut ids: Vec<CommandId> = Vec::new();
    for n in 0..14 {
        ids.push(
            send(
                pool,
                t.app,
                instance,
                &format!("m{n}"),
                RawOptions::default(),
            )
            .await,
        );
    }
    ids.push(operation(pool, t.app, instance, "grupos").await);
    ids.push(operation(pool, t.app, instance, "pausar").await);

    let example = executor_bin();
    let run = tokio::task::spawn_blocking(move || {
        Command::new(example)
            .args(["--url", &base, "--token", &token, "--instance"])
            .arg(instance.to_string())
            .args([
                "--refuse",
                "0.15",
                "--busy",
                "0.2",
                "--timeout",
                "0.1",
                "--late",
                "0.1",
                "--provider-timeout-ms",
                "300",
                "--seed",
                "11",
                "--exit-after",
                "16",
                "--idle-exit",
                "20",
            ])
            .stderr(Stdio::inherit())
            .output()
            .expect("running the example executor")
    });
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the example finished")
        .unwrap();
    assert!(
        output.status.success(),
        "example failed: {:?}",
        output.status
    );

    // Its reports, in order; the last of each command is final.
    let mut last: HashMap<String, String> = HashMap::new();
    let mut deferred = 0;
    for line in String::from_utf8(output.stdout).unwrap().lines() {
        let report: Value = serde_json::from_str(line).unwrap();
        let status = report["status"].as_str().unwrap().to_owned();
        deferred += usize::from(status == "en_cola");
        last.insert(report["command_id"].as_str().unwrap().to_owned(), status);
    }
    let events = ledger(pool, instance).await;
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for id in &ids {
        let reported = last
            .get(&id.to_string())
            .unwrap_or_else(|| panic!("{id} was never reported"));
        let command = stored(pool, *id).await;
        assert_eq!(command.status.as_str(), reported, "{id}");
        *seen.entry(command.status.as_str()).or_default() += 1;
        let accepted = command.kind.appends_accepted();
        let mut want: Vec<&str> = if accepted {
            vec!["command.accepted"]
        } else {
            vec![]
        };
        match reported.as_str() {
            "enviado" => want.push("message.sent"),
            "fallido" => want.push("command.failed"),
            "ambiguo" => want.push("command.ambiguous"),
            "completado" => {}
            other => panic!("{id} ended {other}"),
        }
        assert_eq!(types_for(&events, *id), want, "{id}");
    }
    // The seed makes the run the same every time: each case happened.
    eprintln!("final: {seen:?}, deferrals: {deferred}");
    for status in ["enviado", "fallido", "ambiguo", "completado"] {
        assert!(
            seen.contains_key(status),
            "no command ended {status}: {seen:?}"
        );
    }
    assert!(deferred > 0, "no deferral happened");
    // A deferred command was claimed again.
    let reclaimed = reclaimed(pool, &ids).await;
    assert!(reclaimed > 0);
    // The executor said its instance was up.
    let up = events
        .iter()
        .find(|e| e["type"] == "state.changed")
        .expect("state.changed");
    assert_eq!(up["data"]["estado"], "conectada");
}

/// How many of `ids` were claimed more than once.
async fn reclaimed(pool: &motor_store::Pool, ids: &[CommandId]) -> usize {
    let mut n = 0;
    for id in ids {
        n += usize::from(stored(pool, *id).await.claims > 1);
    }
    n
}
