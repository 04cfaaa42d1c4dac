//! A complete executor — the provider adapter a user writes — against a
//! fake provider that runs in this same process on loopback. It reads
//! commands from the long-poll (`GET /v1/executor/commands`, the primary
//! path: see docs/COMMANDS.md), claims each, hands it to the provider and
//! reports what happened; it also reports its instance `conectada` when
//! it starts.
//!
//!   cargo run -p motor --example executor -- --token $TOKEN --instance $INSTANCE \
//!       [--url http://127.0.0.1:8080] [--accept 0.6] [--refuse 0.1] [--busy 0.1] \
//!       [--timeout 0.1] [--late 0.1] [--provider-timeout-ms 500] [--seed N] \
//!       [--exit-after N] [--idle-exit SECONDS]
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
    sync::{Arc, Mutex},
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
    let instance = flag("--instance").ok_or("--instance is required")?;
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
        let provider_url = format!("http://{}", start_provider(provider.clone()).await?);
        eprintln!("fake provider on {provider_url}");
        let motor = reqwest::Client::new();
        let to_provider = reqwest::Client::builder().timeout(patience).build()?;

        // The instance is up: say so (an executor reports state changes).
        let res = motor
            .post(format!("{base}/v1/executor/instances/{instance}/state"))
            .bearer_auth(&token)
            .json(&json!({"estado": "conectada", "motivo": "executor started"}))
            .send()
            .await?;
        eprintln!("state conectada: {}", res.status());

        let mut finished = 0usize;
        let mut idle_since = Instant::now();
        'poll: loop {
            let res = motor
                .get(format!("{base}/v1/executor/commands"))
                .query(&[
                    ("instance", instance.as_str()),
                    ("wait", "5"),
                    ("limit", "20"),
                ])
                .bearer_auth(&token)
                .send()
                .await;
            let page: Value = match res {
                Ok(res) if res.status() == 200 => res.json().await?,
                Ok(res) => {
                    eprintln!("long-poll answered {}: {}", res.status(), res.text().await?);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                Err(e) => {
                    eprintln!("long-poll failed ({e}); retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            let due = page["commands"].as_array().cloned().unwrap_or_default();
            if due.is_empty() {
                if idle_exit.is_some_and(|s| idle_since.elapsed() >= Duration::from_secs(s)) {
                    break 'poll;
                }
                continue;
            }
            idle_since = Instant::now();
            for pointer in due {
                let id = pointer["command_id"].as_str().unwrap_or_default();
                let res = motor
                    .post(format!("{base}/v1/executor/commands/{id}/claim"))
                    .bearer_auth(&token)
                    .send()
                    .await?;
                if res.status() != 200 {
                    // Another executor got it, it was cancelled or it
                    // expired meanwhile: not ours to run.
                    eprintln!("claim {id}: {}", res.status());
                    continue;
                }
                let claimed: Value = res.json().await?;
                let lease = claimed["reserva"].as_str().unwrap_or_default().to_owned();
                let command = &claimed["comando"];
                let outcome = call_provider(
                    &to_provider,
                    &provider_url,
                    &json!({
                        "command_id": id, "tipo": command["tipo"], "chat": command["chat"],
                        "contenido": command["contenido"], "parametros": command["parametros"],
                    }),
                )
                .await;
                let body = report_body(command, &lease, &outcome);
                let res = motor
                    .post(format!("{base}/v1/executor/commands/{id}/report"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await?;
                let status = body["status"].as_str().unwrap_or_default();
                if res.status() != 200 {
                    // 409: the lease ran out and the sweeper made it
                    // ambiguo first; Motor keeps that answer.
                    eprintln!(
                        "report {id} {status}: {} {}",
                        res.status(),
                        res.text().await?
                    );
                    continue;
                }
                println!(
                    "{}",
                    json!({"command_id": id, "tipo": command["tipo"], "status": status})
                );
                if status != "en_cola" {
                    finished += 1;
                    if exit_after.is_some_and(|n| finished >= n) {
                        break 'poll;
                    }
                }
            }
        }
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
