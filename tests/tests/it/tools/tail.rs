//! `motor tail`, the real binary, following a real Motor's stream: it
//! prints the events appended after it started, and resumes by itself
//! after the last one it printed — when Motor restarts (an event appended
//! while it was down included) and when the connection is cut — printing
//! none twice and skipping none.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use motor_system_tests::harness::proxy::Proxy;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::call;
use crate::{
    dispatch::WAIT,
    util::{append_to_ledger, motor_bin, TestDb, TestMotor, ALL_ROLES},
};

/// A running `motor tail`, its output lines collected; killed when
/// dropped.
struct Tail {
    child: Child,
    out: Arc<Mutex<Vec<String>>>,
    err: Arc<Mutex<Vec<String>>>,
}

impl Tail {
    fn spawn(base: &str, token: &str, instance: &str, extra: &[&str]) -> Self {
        let mut child = Command::new(motor_bin())
            .args(["tail", "--instance", instance])
            .args(extra)
            .env("MOTOR_URL", base)
            .env("MOTOR_TOKEN", token)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let collect = |pipe: Box<dyn std::io::Read + Send>| {
            let lines = Arc::new(Mutex::new(Vec::new()));
            let sink = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    sink.lock().unwrap().push(line);
                }
            });
            lines
        };
        let out = collect(Box::new(child.stdout.take().unwrap()));
        let err = collect(Box::new(child.stderr.take().unwrap()));
        Self { child, out, err }
    }

    fn out(&self) -> Vec<String> {
        self.out.lock().unwrap().clone()
    }

    fn err(&self) -> Vec<String> {
        self.err.lock().unwrap().clone()
    }

    /// Waits until `check` holds for (stdout, stderr).
    async fn wait(&self, what: &str, check: impl Fn(&[String], &[String]) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !check(&self.out(), &self.err()) {
            assert!(
                Instant::now() < deadline,
                "motor tail never showed {what}\nstdout: {:#?}\nstderr: {:#?}",
                self.out(),
                self.err()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The seqs printed with `--json`, in order.
    fn seqs(&self) -> Vec<i64> {
        self.out()
            .iter()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap_or_else(|_| panic!("not JSON: {l}"))["seq"]
                    .as_i64()
                    .unwrap()
            })
            .collect()
    }
}

impl Drop for Tail {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn post(m: &TestMotor, token: &str, instance: &str, n: i64) {
    let (status, answer) = call(
        m,
        token,
        Method::POST,
        &format!("/v1/instances/{instance}/events"),
        Some(json!({"type": "pedido.creado", "data": {"n": n}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_follows_live_and_resumes_after_a_restart() {
    let db = TestDb::new().await;
    let m = TestMotor::start_on(db.clone(), &ALL_ROLES).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0].to_string();
    // Before tail starts: not printed.
    post(&m, &t.token, &instance, 0).await;

    let tail = Tail::spawn(&m.url(""), &t.token, &instance, &["--json"]);
    tail.wait("that it follows", |_, err| {
        err.iter().any(|l| l.contains("following instance"))
    })
    .await;
    post(&m, &t.token, &instance, 1).await;
    tail.wait("seq 2", |out, _| !out.is_empty()).await;
    assert_eq!(tail.seqs(), vec![2]);
    let envelope: Value = serde_json::from_str(&tail.out()[0]).unwrap();
    assert_eq!(envelope["data"]["n"], 1);
    assert_eq!(envelope["instance_id"], instance);

    // Motor stops; an event is appended while it is down; it comes back
    // on the same address.
    let addr = m.addr.unwrap();
    m.stop().await;
    append_to_ledger(
        &db.pool,
        t.instances[0],
        &[json!({"type": "pedido.creado", "data": {"n": 2}})],
    )
    .await;
    let m = TestMotor::start_configured(db, &ALL_ROLES, |c| c.http_addr = addr.to_string()).await;
    post(&m, &t.token, &instance, 3).await;
    tail.wait("seq 4", |out, _| out.len() >= 3).await;
    assert_eq!(tail.seqs(), vec![2, 3, 4], "{:#?}", tail.err());
    assert!(
        tail.err()
            .iter()
            .any(|l| l.contains("resuming after seq 2")),
        "{:#?}",
        tail.err()
    );
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_resumes_after_the_connection_is_cut() {
    let m = TestMotor::start(&ALL_ROLES).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0].to_string();
    let proxy = Proxy::start("127.0.0.1:0", m.addr.unwrap()).await;

    let tail = Tail::spawn(&format!("http://{}", proxy.addr), &t.token, &instance, &[]);
    tail.wait("that it follows", |_, err| {
        err.iter().any(|l| l.contains("following instance"))
    })
    .await;
    post(&m, &t.token, &instance, 1).await;
    tail.wait("seq 1", |out, _| !out.is_empty()).await;
    assert!(
        tail.out()[0].starts_with("#1 pedido.creado "),
        "{:?}",
        tail.out()
    );

    // The connection is cut (RST) and new ones refused for a while.
    proxy.reset();
    tail.wait("the cut", |_, err| {
        err.iter().any(|l| l.contains("resuming after seq 1"))
    })
    .await;
    post(&m, &t.token, &instance, 2).await;
    proxy.heal();
    tail.wait("seq 2", |out, _| out.len() >= 2).await;
    let out = tail.out();
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(
        out[1].starts_with("#2 pedido.creado ") && out[1].ends_with(r#"{"n":2}"#),
        "{out:?}"
    );
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_names_a_refusal_and_stops() {
    let m = TestMotor::start(&ALL_ROLES).await;
    let t = m.tenant(1).await;
    let mut tail = Tail::spawn(&m.url(""), "not-a-key", &t.instances[0].to_string(), &[]);
    tail.wait("the refusal", |_, err| {
        err.iter().any(|l| l.contains("401 no_autenticado"))
    })
    .await;
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = tail.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "motor tail kept running after a 401"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status.code(), Some(1), "{:?}", tail.err());
    m.stop().await;
}
