//! The fake provider of the commands scenario: what an executor hands a
//! command to (for the seed's user, WhatsApp), on loopback in the
//! harness's process, so it outlives every executor that is killed. Each
//! call is logged as a `provider_call` line when it arrives, with what the
//! provider does with it: it acts (the message goes out) and answers at
//! once (`accept`), after a while (`slow`, still within the executor's
//! patience) or too late (`late`); or it refuses (`refuse`, 400 with a
//! server code), asks to wait (`busy`, 429 `Retry-After: 1`, nothing done)
//! or never answers (`timeout`). The choice is a stable hash of the command
//! id and how many calls it had before, so a busy command is not busy for
//! ever.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{extract::State, http::StatusCode, response::IntoResponse, routing::post, Json};
use serde_json::{json, Value};

use crate::{
    history::{now_us, Record, Recorder},
    scenarios::bucket,
};

/// Percentages of each behaviour (the rest is `accept`), and the delays.
#[derive(Debug, Clone)]
pub struct ProviderScript {
    pub slow: u32,
    pub late: u32,
    pub refuse: u32,
    pub busy: u32,
    pub timeout: u32,
    /// How long a `slow` answer takes (beyond the lease: the executor's
    /// heartbeats keep it).
    pub slow_ms: u64,
    /// How long a `late` answer takes (beyond the executor's patience).
    pub late_ms: u64,
    /// At most this many `busy` answers in a row for one command.
    pub most_busy: usize,
}

struct Shared {
    script: ProviderScript,
    recorder: Recorder,
    /// Calls so far per command.
    calls: Mutex<HashMap<String, usize>>,
}

pub struct Provider {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Provider {
    pub async fn start(script: ProviderScript, recorder: Recorder) -> Self {
        let shared = Arc::new(Shared {
            script,
            recorder,
            calls: Mutex::default(),
        });
        let app = axum::Router::new()
            .route("/send", post(call))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the provider");
        let addr = listener.local_addr().expect("its address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// The logical message a command carries (`m` in `contenido` or
/// `parametros`): what the producer made it for.
fn message_of(body: &Value) -> String {
    let inner = if body["contenido"].is_object() {
        &body["contenido"]
    } else {
        &body["parametros"]
    };
    inner["m"].as_str().unwrap_or_default().to_owned()
}

async fn call(State(shared): State<Arc<Shared>>, Json(body): Json<Value>) -> impl IntoResponse {
    let command_id = body["command_id"].as_str().unwrap_or_default().to_owned();
    let previous = {
        let mut calls = shared.calls.lock().expect("not poisoned");
        let n = calls.entry(command_id.clone()).or_default();
        *n += 1;
        *n - 1
    };
    let s = &shared.script;
    let roll = bucket(&command_id, previous);
    let busy = if previous < s.most_busy { s.busy } else { 0 };
    let mut edge = 0;
    let mut behaviour = "accept";
    for (pct, name) in [
        (s.slow, "slow"),
        (s.late, "late"),
        (s.refuse, "refuse"),
        (busy, "busy"),
        (s.timeout, "timeout"),
    ] {
        if roll >= edge && roll < edge + pct {
            behaviour = name;
            break;
        }
        edge += pct;
    }
    let acted = matches!(behaviour, "accept" | "slow" | "late");
    let provider_message_id = acted.then(|| format!("wamid.{}", uuid::Uuid::new_v4().simple()));
    shared.recorder.record(&Record::ProviderCall {
        command_id,
        reserva: body["reserva"].as_str().unwrap_or_default().to_owned(),
        message: message_of(&body),
        behaviour: behaviour.into(),
        acted,
        provider_message_id: provider_message_id.clone(),
        t_us: now_us(),
    });
    let accepted = |id: Option<String>| {
        let at = chrono_now();
        (
            StatusCode::OK,
            [("retry-after", "0")],
            Json(json!({"id": id, "accepted_at": at})),
        )
    };
    match behaviour {
        "accept" => accepted(provider_message_id),
        "slow" => {
            tokio::time::sleep(Duration::from_millis(s.slow_ms)).await;
            accepted(provider_message_id)
        }
        "late" => {
            tokio::time::sleep(Duration::from_millis(s.late_ms)).await;
            accepted(provider_message_id)
        }
        "refuse" => (
            StatusCode::BAD_REQUEST,
            [("retry-after", "0")],
            Json(json!({"code": "131026", "error": "recipient cannot receive"})),
        ),
        "busy" => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            Json(json!({"error": "slow down"})),
        ),
        _ => {
            // Never answers within anyone's patience.
            tokio::time::sleep(Duration::from_secs(600)).await;
            (
                StatusCode::GATEWAY_TIMEOUT,
                [("retry-after", "0")],
                Json(json!({})),
            )
        }
    }
}

/// Now as RFC 3339 with milliseconds, UTC (what a provider answers).
fn chrono_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
