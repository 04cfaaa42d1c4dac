//! A complete executor — the provider adapter a user writes — against a
//! fake provider that runs in this same process on loopback (or, with
//! `--provider URL`, one of your own: the fault matrix's). It reads
//! commands from the long-poll (`GET /v1/executor/commands`, the primary
//! path: see docs/COMMANDS.md) — or, with `--topic`, from the
//! `{prefix}.commands` topic, the secondary path — claims each, hands it
//! to the provider and reports what happened; it also reports each
//! instance `conectada` when it starts.
//!
//!   cargo run -p motor --example executor -- --token $TOKEN --instance $INSTANCE[,$OTHER…] \
//!       [--url http://127.0.0.1:8080] [--accept 0.6] [--refuse 0.1] [--busy 0.1] \
//!       [--timeout 0.1] [--late 0.1] [--provider-timeout-ms 500] [--seed N] \
//!       [--exit-after N] [--idle-exit SECONDS] [--provider URL] \
//!       [--topic [--brokers HOST:PORT] [--prefix PREFIX] [--group ID]]
//!
//! Each instance has a task of its own (one instance's commands run one at
//! a time, in order). While a provider call runs, the executor sends a
//! heartbeat (`POST /v1/executor/commands/{id}/heartbeat`) every third of
//! its lease, so a slow call does not let the sweeper make the command
//! `ambiguo`; a heartbeat answered 409 means the lease is lost and the
//! executor does not report. A report that gets no answer (Motor
//! restarting) is sent again until the lease ends.
//!
//! With `--topic` it reads `{prefix}.commands` (brokers and prefix from
//! the flags or `MOTOR_KAFKA_BROKERS`, `MOTOR_TOPIC_PREFIX`) in a consumer
//! group (`--group`, default `motor-example-executor`), keeps the records
//! of the instances it was given, waits for each record's `next_try` and
//! claims it; a record of a command already claimed, cancelled or
//! finished gets a 409 and is skipped. Offsets are committed after each
//! record is handled.
//!
//! The fake provider answers each request by a roll against the rates
//! (what is left after the five goes to `accept`):
//! - accept: 200 with its message id → report `enviado` (a send) or
//!   `completado` (anything else);
//! - refuse: 400 with a server code → `fallido`, stage `servidor`;
//! - busy: 429 with `Retry-After: 1` → `en_cola` (a deferral) with
//!   `next_try` one second later; the command comes back through the
//!   long-poll then and is claimed again;
//! - timeout: never answers → the executor gives up after
//!   `--provider-timeout-ms` and reports `ambiguo`: it cannot know whether
//!   the provider acted;
//! - late: acts, then answers after the executor gave up → `ambiguo`,
//!   though the message did go out (exactly the case `ambiguo` exists for:
//!   Motor never sends it again by itself).
//!
//! stdout: one JSON line per report (`command_id`, `tipo`, `status`);
//! stderr: what the provider saw at the end (requests, distinct commands,
//! commands it acted on). `--exit-after N` stops after N final reports
//! (deferrals do not count), `--idle-exit S` after S seconds without a
//! command.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use axum::{extract::State, http::StatusCode, response::IntoResponse, routing::post, Json};
use chrono::{SecondsFormat, Utc};
use rand::{rngs::StdRng, Rng, SeedableRng};
use serde_json::{json, Value};

/// What the fake provider does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    Accept,
    Refuse,
    Busy,
    Timeout,
    Late,
}

struct Rates {
    refuse: f64,
    busy: f64,
    timeout: f64,
    late: f64,
}

impl Rates {
    fn pick(&self, roll: f64) -> Behaviour {
        let mut edge = self.refuse;
        if roll < edge {
            return Behaviour::Refuse;
        }
        edge += self.busy;
        if roll < edge {
            return Behaviour::Busy;
        }
        edge += self.timeout;
        if roll < edge {
            return Behaviour::Timeout;
        }
        edge += self.late;
        if roll < edge {
            return Behaviour::Late;
        }
        Behaviour::Accept
    }
}

/// The fake provider: its dice, how long it answers late, and what it saw.
struct Provider {
    rates: Rates,
    rng: Mutex<StdRng>,
    late_by: Duration,
    /// Requests per command id, and the commands it acted on.
    seen: Mutex<HashMap<String, u32>>,
    acted: Mutex<Vec<String>>,
}

async fn provider_send(
    State(p): State<Arc<Provider>>,
    Json(req): Json<Value>,
) -> impl IntoResponse {
    let id = req["command_id"].as_str().unwrap_or_default().to_owned();
    *p.seen.lock().unwrap().entry(id.clone()).or_default() += 1;
    let behaviour = {
        let roll = p.rng.lock().unwrap().gen::<f64>();
        p.rates.pick(roll)
    };
    let accepted = || {
        p.acted.lock().unwrap().push(id.clone());
        (
            StatusCode::OK,
            [("retry-after", "0")],
            Json(json!({
                "id": format!("wamid.{}", id),
                "accepted_at": Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
            })),
        )
    };
    match behaviour {
        Behaviour::Accept => accepted(),
        Behaviour::Refuse => (
            StatusCode::BAD_REQUEST,
            [("retry-after", "0")],
            Json(json!({"code": "131026", "error": "recipient cannot receive"})),
        ),
        Behaviour::Busy => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            Json(json!({"error": "slow down"})),
        ),
        Behaviour::Timeout => {
            // Never answers within any executor's patience.
            tokio::time::sleep(Duration::from_secs(3600)).await;
            unreachable!("the executor gave up long before")
        }
        Behaviour::Late => {
            let answer = accepted();
            tokio::time::sleep(p.late_by).await;
            answer
        }
    }
}

async fn start_provider(provider: Arc<Provider>) -> std::io::Result<SocketAddr> {
    let app = axum::Router::new()
        .route("/send", post(provider_send))
        .with_state(provider);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}

/// The executor's view of one provider call.
enum Outcome {
    Accepted { message_id: String, at: String },
    Refused { server_code: String },
    Busy { retry_after: u64 },
    Unknown,
}

async fn call_provider(http: &reqwest::Client, provider: &str, command: &Value) -> Outcome {
    let sent = http
        .post(format!("{provider}/send"))
        .json(command)
        .send()
        .await;
    let Ok(res) = sent else {
        // A timeout or a cut connection: it may or may not have acted.
        return Outcome::Unknown;
    };
    let status = res.status();
    let retry_after = res
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let Ok(body) = res.json::<Value>().await else {
        return Outcome::Unknown;
    };
    match status.as_u16() {
        200 => Outcome::Accepted {
            message_id: body["id"].as_str().unwrap_or_default().to_owned(),
            at: body["accepted_at"].as_str().unwrap_or_default().to_owned(),
        },
        429 => Outcome::Busy { retry_after },
        400..=499 => Outcome::Refused {
            server_code: body["code"].as_str().unwrap_or("desconocido").to_owned(),
        },
        _ => Outcome::Unknown,
    }
}

/// The report's body for `outcome` of `command` under `lease`.
fn report_body(command: &Value, lease: &str, outcome: &Outcome) -> Value {
    let send = command["tipo"] == "mensaje";
    match outcome {
        Outcome::Accepted { message_id, at } if send => json!({
            "reserva": lease, "status": "enviado", "provider_message_id": message_id,
            "chat": command["chat"], "aceptado_en": at,
        }),
        Outcome::Accepted { .. } => json!({"reserva": lease, "status": "completado"}),
        Outcome::Refused { server_code } => json!({
            "reserva": lease, "status": "fallido", "error_code": "rechazado",
            "stage": "servidor", "server_code": server_code,
        }),
        Outcome::Busy { retry_after } => {
            let next = Utc::now() + chrono::Duration::seconds(*retry_after as i64);
            json!({"reserva": lease, "status": "en_cola",
                   "next_try": next.to_rfc3339_opts(SecondsFormat::Millis, true)})
        }
        Outcome::Unknown => json!({
            "reserva": lease, "status": "ambiguo", "error_code": "proveedor_sin_respuesta",
        }),
    }
}

/// What every instance's task shares.
struct Executor {
    base: String,
    token: String,
    provider_url: String,
    motor: reqwest::Client,
    to_provider: reqwest::Client,
    /// Final reports made (deferrals do not count), and when a command was
    /// last seen.
    finished: AtomicUsize,
    last_seen: Mutex<Instant>,
}

impl Executor {
    /// Claims command `id`, runs it against the provider (sending
    /// heartbeats meanwhile) and reports the outcome. Nothing when the
    /// claim is refused (another executor has it, it was cancelled, it
    /// expired) or the lease was lost.
    async fn run(&self, id: &str) {
        *self.last_seen.lock().unwrap() = Instant::now();
        let res = self
            .motor
            .post(format!("{}/v1/executor/commands/{id}/claim", self.base))
            .bearer_auth(&self.token)
            .send()
            .await;
        let claimed: Value = match res {
            Ok(res) if res.status() == 200 => match res.json().await {
                Ok(claimed) => claimed,
                Err(e) => {
                    eprintln!("claim {id}: unreadable answer ({e})");
                    return;
                }
            },
            Ok(res) => {
                // Another executor got it, it was cancelled or it expired
                // meanwhile: not ours to run.
                eprintln!("claim {id}: {}", res.status());
                return;
            }
            Err(e) => {
                // If Motor did commit the claim, its lease runs out and
                // the sweeper makes it ambiguo: never run it blind.
                eprintln!("claim {id}: no answer ({e})");
                return;
            }
        };
        let lease = claimed["reserva"].as_str().unwrap_or_default().to_owned();
        let until = claimed["reservado_hasta"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
        // A third of the lease between heartbeats.
        let beat = until
            .and_then(|u| (u - Utc::now()).to_std().ok())
            .map_or(Duration::from_secs(10), |left| {
                (left / 3).max(Duration::from_millis(200))
            });
        let command = &claimed["comando"];
        let payload = json!({
            "command_id": id, "reserva": lease, "tipo": command["tipo"],
            "chat": command["chat"], "contenido": command["contenido"],
            "parametros": command["parametros"],
        });
        let call = call_provider(&self.to_provider, &self.provider_url, &payload);
        tokio::pin!(call);
        let outcome = loop {
            tokio::select! {
                outcome = &mut call => break outcome,
                _ = tokio::time::sleep(beat) => {
                    if !self.heartbeat(id, &lease).await {
                        eprintln!("heartbeat {id}: the lease is lost; not reporting");
                        return;
                    }
                }
            }
        };
        let body = report_body(command, &lease, &outcome);
        let status = body["status"].as_str().unwrap_or_default().to_owned();
        if !self.report(id, &body, until).await {
            return;
        }
        println!(
            "{}",
            json!({"command_id": id, "tipo": command["tipo"], "status": status})
        );
        if status != "en_cola" {
            self.finished.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Extends the lease; false once it is lost (409). A heartbeat that
    /// gets no answer is not a loss: the next one may.
    async fn heartbeat(&self, id: &str, lease: &str) -> bool {
        let res = self
            .motor
            .post(format!("{}/v1/executor/commands/{id}/heartbeat", self.base))
            .bearer_auth(&self.token)
            .json(&json!({ "reserva": lease }))
            .send()
            .await;
        !matches!(res, Ok(res) if res.status() == 409)
    }

    /// Sends the report until Motor answers it (up to the lease's end and
    /// a little more: a report after the lease's end is still taken until
    /// the sweeper acts). Whether it was recorded.
    async fn report(&self, id: &str, body: &Value, until: Option<chrono::DateTime<Utc>>) -> bool {
        let give_up = until.unwrap_or_else(Utc::now) + chrono::Duration::seconds(2);
        let status = body["status"].as_str().unwrap_or_default();
        loop {
            let res = self
                .motor
                .post(format!("{}/v1/executor/commands/{id}/report", self.base))
                .bearer_auth(&self.token)
                .json(body)
                .send()
                .await;
            match res {
                Ok(res) if res.status() == 200 => return true,
                Ok(res) if !res.status().is_server_error() => {
                    // 409: the lease ran out and the sweeper made it
                    // ambiguo first (or an earlier try of this report was
                    // recorded and its answer lost); Motor keeps that.
                    let code = res.status();
                    eprintln!(
                        "report {id} {status}: {code} {}",
                        res.text().await.unwrap_or_default()
                    );
                    return false;
                }
                other => {
                    if Utc::now() > give_up {
                        eprintln!("report {id} {status}: gave up ({other:?})");
                        return false;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    /// Says the instance is up (an executor reports state changes),
    /// trying until Motor answers.
    async fn connected(&self, instance: &str) {
        for _ in 0..50 {
            let res = self
                .motor
                .post(format!(
                    "{}/v1/executor/instances/{instance}/state",
                    self.base
                ))
                .bearer_auth(&self.token)
                .json(&json!({"estado": "conectada", "motivo": "executor started"}))
                .send()
                .await;
            match res {
                Ok(res) => {
                    eprintln!("state conectada {instance}: {}", res.status());
                    return;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// The long-poll loop of one instance.
    async fn poll(&self, instance: &str) {
        loop {
            let res = self
                .motor
                .get(format!("{}/v1/executor/commands", self.base))
                .query(&[("instance", instance), ("wait", "5"), ("limit", "20")])
                .bearer_auth(&self.token)
                .send()
                .await;
            let page: Value = match res {
                Ok(res) if res.status() == 200 => res.json().await.unwrap_or(Value::Null),
                Ok(res) => {
                    eprintln!(
                        "long-poll answered {}: {}",
                        res.status(),
                        res.text().await.unwrap_or_default()
                    );
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                Err(e) => {
                    eprintln!("long-poll failed ({e}); retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            for pointer in page["commands"].as_array().cloned().unwrap_or_default() {
                self.run(pointer["command_id"].as_str().unwrap_or_default())
                    .await;
            }
        }
    }

    /// The `{prefix}.commands` loop: records of `instances` (keyed by
    /// instance, so one instance's arrive in order), each claimed once its
    /// `next_try` is due.
    async fn consume(
        self: Arc<Self>,
        brokers: &str,
        topic: &str,
        group: &str,
        instances: &[String],
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        use rdkafka::{
            consumer::{CommitMode, Consumer, StreamConsumer},
            ClientConfig, Message, Offset, TopicPartitionList,
        };
        let consumer: StreamConsumer = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            // Tansu answers a JoinGroup after about half the session
            // timeout: a short one lets a restarted executor rejoin soon.
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "2000")
            .create()?;
        consumer.subscribe(&[topic])?;
        let mut records = 0u64;
        loop {
            // What the record says, taken before any wait (a borrowed
            // message must not be held across one).
            let received = consumer.recv().await.map(|message| {
                let record: Value = serde_json::from_slice(message.payload().unwrap_or_default())
                    .unwrap_or_default();
                (record, message.partition(), message.offset())
            });
            let (record, partition, offset) = match received {
                Ok(taken) => taken,
                Err(e) => {
                    eprintln!("{topic}: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            records += 1;
            if records == 1 || records.is_multiple_of(100) {
                eprintln!("{topic}: {records} records read");
            }
            let instance = record["instance_id"].as_str().unwrap_or_default();
            if instances.iter().any(|i| i == instance) {
                let due = record["next_try"]
                    .as_str()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                    .and_then(|t| (t.with_timezone(&Utc) - Utc::now()).to_std().ok());
                if let Some(wait) = due {
                    tokio::time::sleep(wait).await;
                }
                self.run(record["command_id"].as_str().unwrap_or_default())
                    .await;
            }
            let mut done = TopicPartitionList::new();
            done.add_partition_offset(topic, partition, Offset::Offset(offset + 1))?;
            consumer.commit(&done, CommitMode::Async)?;
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let rate = |name: &str| -> Result<f64, Box<dyn std::error::Error>> {
        let r: f64 = flag(name).map(|v| v.parse()).transpose()?.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&r) {
            return Err(format!("{name} must be between 0 and 1").into());
        }
        Ok(r)
    };
    let base = flag("--url").unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let token = flag("--token").ok_or("--token is required")?;
    let instances: Vec<String> = flag("--instance")
        .ok_or("--instance is required")?
        .split(',')
        .map(str::to_owned)
        .collect();
    let rates = Rates {
        refuse: rate("--refuse")?,
        busy: rate("--busy")?,
        timeout: rate("--timeout")?,
        late: rate("--late")?,
    };
    if rates.refuse + rates.busy + rates.timeout + rates.late > 1.0 {
        return Err("the rates add up to more than 1".into());
    }
    let patience = Duration::from_millis(
        flag("--provider-timeout-ms")
            .map(|v| v.parse())
            .transpose()?
            .unwrap_or(500),
    );
    let seed: u64 = flag("--seed").map(|v| v.parse()).transpose()?.unwrap_or(7);
    let exit_after: Option<usize> = flag("--exit-after").map(|v| v.parse()).transpose()?;
    let idle_exit: Option<u64> = flag("--idle-exit").map(|v| v.parse()).transpose()?;
    let external_provider = flag("--provider");
    let topic = args.iter().any(|a| a == "--topic");
    let brokers = flag("--brokers")
        .or_else(|| std::env::var("MOTOR_KAFKA_BROKERS").ok())
        .unwrap_or_else(|| "127.0.0.1:9092".into());
    let prefix = flag("--prefix")
        .or_else(|| std::env::var("MOTOR_TOPIC_PREFIX").ok())
        .unwrap_or_else(|| "motor".into());
    let group = flag("--group").unwrap_or_else(|| "motor-example-executor".into());

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let provider = Arc::new(Provider {
            rates,
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            late_by: patience * 2,
            seen: Mutex::default(),
            acted: Mutex::default(),
        });
        let provider_url = match external_provider {
            Some(url) => url,
            None => format!("http://{}", start_provider(provider.clone()).await?),
        };
        eprintln!("provider on {provider_url}");
        let executor = Arc::new(Executor {
            base,
            token,
            provider_url,
            motor: reqwest::Client::new(),
            to_provider: reqwest::Client::builder().timeout(patience).build()?,
            finished: AtomicUsize::new(0),
            last_seen: Mutex::new(Instant::now()),
        });
        for instance in &instances {
            executor.connected(instance).await;
        }
        let mut tasks = tokio::task::JoinSet::new();
        if topic {
            let executor = executor.clone();
            let topic = format!("{prefix}.commands");
            let instances = instances.clone();
            tasks.spawn(async move {
                if let Err(e) = executor.consume(&brokers, &topic, &group, &instances).await {
                    eprintln!("{topic}: {e}");
                }
            });
        } else {
            for instance in instances {
                let executor = executor.clone();
                tasks.spawn(async move { executor.poll(&instance).await });
            }
        }
        // Until told to stop (or for ever).
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let done = exit_after.is_some_and(|n| executor.finished.load(Ordering::SeqCst) >= n);
            let idle = idle_exit.is_some_and(|s| {
                executor.last_seen.lock().unwrap().elapsed() >= Duration::from_secs(s)
            });
            if done || idle || tasks.is_empty() {
                break;
            }
        }
        tasks.abort_all();
        let seen = provider.seen.lock().unwrap();
        eprintln!(
            "provider: {} requests, {} distinct commands, acted on {}",
            seen.values().sum::<u32>(),
            seen.len(),
            provider.acted.lock().unwrap().len()
        );
        Ok::<_, Box<dyn std::error::Error>>(())
    })
}
