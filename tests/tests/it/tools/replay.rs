//! `motor replay`, the real binary, against a real Motor and receiver:
//! it starts a replay through the API, shows its deliveries draining and
//! ends with what was delivered; Ctrl-C (SIGINT) leaves the replay running
//! and prints how to follow it, and `--follow` picks it up again.

use std::{
    io::{BufRead, BufReader},
    process::{Command, Output, Stdio},
    time::Duration,
};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::call;
use crate::{
    dispatch::{motor, receiver::Receiver, subscribe, WAIT},
    util::{motor_bin, TestMotor},
};

fn replay_command(m: &TestMotor, token: &str, sub: &str, args: &[&str]) -> Command {
    let mut command = Command::new(motor_bin());
    command
        .arg("replay")
        .args(["--subscription", sub, "--poll-ms", "100"])
        .args(args)
        .env("MOTOR_URL", m.url(""))
        .env("MOTOR_TOKEN", token)
        .env("RUST_LOG", "warn");
    command
}

/// Runs it to the end (in a blocking thread), within [`WAIT`].
async fn run(mut command: Command) -> Output {
    let output = tokio::task::spawn_blocking(move || command.output().unwrap());
    tokio::time::timeout(WAIT, output).await.unwrap().unwrap()
}

async fn post_events(m: &TestMotor, token: &str, instance: &str, n: usize) {
    let events: Vec<Value> = (0..n)
        .map(|i| json!({"type": "pedido.creado", "data": {"n": i}}))
        .collect();
    let (status, answer) = call(
        m,
        token,
        Method::POST,
        &format!("/v1/instances/{instance}/events"),
        Some(json!(events)),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_from_the_terminal_drains_and_says_so() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({})).await.to_string();
    let instance = t.instances[0].to_string();
    post_events(&m, &t.token, &instance, 3).await;
    r.wait_for("the live deliveries", WAIT, |s| s.len() >= 3)
        .await;

    let out = run(replay_command(
        &m,
        &t.token,
        &sub,
        &["--instance", &instance, "--desde", "1", "--hasta", "3"],
    ))
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("delivered 3 · failed 0 · pending 0"),
        "{stdout}\n{stderr}"
    );
    assert!(stderr.contains("3 deliveries"), "{stderr}");
    // The receiver got the three again.
    let seen = r.seen();
    let events: std::collections::BTreeSet<_> = seen.iter().map(|s| s.event_id.clone()).collect();
    assert_eq!(events.len(), 3);
    assert_eq!(seen.len(), 6, "three live and three replayed deliveries");
    assert_eq!(seen.iter().filter(|s| s.replay_of.is_some()).count(), 3);

    // The API refuses a bad range and the command shows the field.
    let out = run(replay_command(
        &m,
        &t.token,
        &sub,
        &["--instance", &instance, "--desde", "5", "--hasta", "2"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("422") && stderr.contains("campo"),
        "{stderr}"
    );
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_leaves_the_replay_running_and_follow_picks_it_up() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let r = Receiver::start().await;
    let sub = subscribe(&m, &t, &r, json!({})).await.to_string();
    let instance = t.instances[0].to_string();
    post_events(&m, &t.token, &instance, 2).await;
    r.wait_for("the live deliveries", WAIT, |s| s.len() >= 2)
        .await;
    // Paused, the replay's deliveries wait.
    let (status, paused) = call(
        &m,
        &t.token,
        Method::PATCH,
        &format!("/v1/subscriptions/{sub}"),
        Some(json!({"estado": "pausada"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{paused}");

    let mut child = replay_command(
        &m,
        &t.token,
        &sub,
        &["--instance", &instance, "--desde", "1", "--hasta", "2"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stderr = child.stderr.take().unwrap();
    let pid = child.id();
    // Reads stderr until the progress shows two pending, then interrupts.
    let lines = tokio::task::spawn_blocking(move || {
        let mut lines = Vec::new();
        let mut interrupted = false;
        for line in BufReader::new(stderr).lines() {
            let line = line.unwrap();
            if !interrupted && line.contains("pending 2") {
                let ok = Command::new("kill")
                    .args(["-INT", &pid.to_string()])
                    .status()
                    .unwrap();
                assert!(ok.success());
                interrupted = true;
            }
            lines.push(line);
        }
        lines
    });
    let lines = tokio::time::timeout(WAIT, lines).await.unwrap().unwrap();
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    let text = lines.join("\n");
    assert_eq!(status.code(), Some(130), "{text}");
    let follow = lines
        .iter()
        .find_map(|l| l.split("--follow ").nth(1))
        .unwrap_or_else(|| panic!("no --follow hint: {text}"))
        .trim()
        .to_owned();
    assert!(text.contains("goes on in Motor"), "{text}");

    // The replay is still there, pending; resumed, --follow sees it drain.
    let (status, progress) = call(
        &m,
        &t.token,
        Method::GET,
        &format!("/v1/subscriptions/{sub}/replays/{follow}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{progress}");
    assert_eq!(progress["pendientes"], 2, "{progress}");
    assert_eq!(progress["terminado"], false);
    let (status, _) = call(
        &m,
        &t.token,
        Method::PATCH,
        &format!("/v1/subscriptions/{sub}"),
        Some(json!({"estado": "activa"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let out = run(replay_command(&m, &t.token, &sub, &["--follow", &follow])).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("delivered 2 · failed 0 · pending 0"),
        "{stdout}"
    );
    r.wait_for("the replayed deliveries", Duration::from_secs(10), |s| {
        s.iter().filter(|s| s.replay_of.is_some()).count() >= 2 || s.len() >= 4
    })
    .await;
    m.stop().await;
}
