//! `motor replay`: starts a replay through the public API
//! (`POST /v1/subscriptions/{id}/replays`) and shows its deliveries
//! draining — delivered, failed, pending — from
//! `GET /v1/subscriptions/{id}/replays/{replay_id}`, as a progress bar on a
//! terminal and as one line per change otherwise. Ctrl-C stops watching,
//! never the replay: it runs in Motor, and the command says how to follow
//! it again (`--follow`). Exits 0 when every delivery was delivered, 1 when
//! one failed or the API refused, 130 on Ctrl-C.

use std::{process::ExitCode, time::Duration};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use crate::remote::{success, RemoteArgs, RemoteError};

#[derive(Debug, clap::Args)]
#[command(group(
    clap::ArgGroup::new("what").required(true).args(["instance", "events", "follow"])
))]
pub struct ReplayArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// The subscription the events are sent to again.
    #[arg(long)]
    pub subscription: Uuid,
    /// The instance whose ledger range (--desde..=--hasta) is replayed.
    #[arg(long, requires_all = ["desde", "hasta"])]
    pub instance: Option<Uuid>,
    /// The first seq of the range.
    #[arg(id = "desde", long = "desde", requires = "instance")]
    pub from: Option<i64>,
    /// The last seq of the range (at most 10,000 events).
    #[arg(id = "hasta", long = "hasta", requires = "instance")]
    pub to: Option<i64>,
    /// Event ids to replay instead of a range (comma list, at most 500).
    #[arg(long, value_delimiter = ',', conflicts_with = "instance")]
    pub events: Vec<Uuid>,
    /// Why (the replay's audit keeps it; 1–300 characters).
    #[arg(
        long = "motivo",
        default_value = "replay from the terminal (motor replay)"
    )]
    pub reason: String,
    /// The request's Idempotency-Key; a fresh one when absent. Repeat the
    /// command with the same key to get the same replay, not a second one.
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// Follow a replay already started (its `replay_id`) instead of
    /// starting one.
    #[arg(long, conflicts_with_all = ["instance", "events"])]
    pub follow: Option<Uuid>,
    /// Milliseconds between two reads of the progress.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(50..=60_000))]
    pub poll_ms: u64,
}

/// The API's answer to a new replay.
#[derive(Debug, Deserialize)]
struct Started {
    replay_id: Uuid,
    #[serde(rename = "entregas")]
    deliveries: u64,
}

/// The API's progress of a replay.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct Progress {
    #[serde(rename = "entregas")]
    deliveries: u64,
    #[serde(rename = "entregadas")]
    delivered: u64,
    #[serde(rename = "fallidas")]
    failed: u64,
    #[serde(rename = "pendientes")]
    pending: u64,
    terminado: bool,
}

impl Progress {
    fn line(&self) -> String {
        format!(
            "delivered {} · failed {} · pending {}",
            self.delivered, self.failed, self.pending
        )
    }
}

pub async fn run(args: ReplayArgs) -> ExitCode {
    let client = reqwest::Client::new();
    let replay = match args.follow {
        Some(replay) => replay,
        None => match start(&client, &args).await {
            Ok(started) => {
                eprintln!(
                    "motor replay: replay {} started: {} deliveries to subscription {}",
                    started.replay_id, started.deliveries, args.subscription
                );
                started.replay_id
            }
            Err(e) => {
                eprintln!("motor replay: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    tokio::select! {
        code = watch(&client, &args, replay) => code,
        _ = &mut interrupted => {
            eprintln!(
                "\nmotor replay: stopped watching; replay {replay} goes on in Motor. Follow it again with\n  \
                 motor replay --url {} --subscription {} --follow {replay}\nor read {}",
                args.remote.url,
                args.subscription,
                args.remote.endpoint(&progress_path(args.subscription, replay)),
            );
            ExitCode::from(130)
        }
    }
}

async fn start(client: &reqwest::Client, args: &ReplayArgs) -> Result<Started, RemoteError> {
    let body = match args.instance {
        Some(instance) => json!({
            "instancia_id": instance,
            "desde_seq": args.from,
            "hasta_seq": args.to,
            "motivo": args.reason,
        }),
        None => json!({"event_ids": args.events, "motivo": args.reason}),
    };
    let key = args
        .idempotency_key
        .clone()
        .unwrap_or_else(|| format!("motor-replay-{}", Uuid::new_v4()));
    let response = client
        .post(
            args.remote
                .endpoint(&format!("/v1/subscriptions/{}/replays", args.subscription)),
        )
        .bearer_auth(&args.remote.token)
        .header("Idempotency-Key", key)
        .json(&body)
        .send()
        .await?;
    Ok(success(response).await?.json().await?)
}

fn progress_path(subscription: Uuid, replay: Uuid) -> String {
    format!("/v1/subscriptions/{subscription}/replays/{replay}")
}

async fn read(
    client: &reqwest::Client,
    args: &ReplayArgs,
    replay: Uuid,
) -> Result<Progress, RemoteError> {
    let response = client
        .get(
            args.remote
                .endpoint(&progress_path(args.subscription, replay)),
        )
        .bearer_auth(&args.remote.token)
        .timeout(Duration::from_secs(10))
        .send()
        .await?;
    Ok(success(response).await?.json().await?)
}

/// Reads the progress until nothing is pending; a passing trouble (no
/// answer, a 5xx) is said and retried, a refusal ends it.
async fn watch(client: &reqwest::Client, args: &ReplayArgs, replay: Uuid) -> ExitCode {
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} ({elapsed})")
            .expect("a valid template"),
    );
    let mut last: Option<Progress> = None;
    let mut interval = tokio::time::interval(Duration::from_millis(args.poll_ms));
    loop {
        interval.tick().await;
        let progress = match read(client, args, replay).await {
            Ok(progress) => progress,
            Err(e) if e.is_passing() => {
                bar.suspend(|| eprintln!("motor replay: {e}; trying again"));
                continue;
            }
            Err(e) => {
                bar.abandon();
                eprintln!("motor replay: {e}");
                return ExitCode::FAILURE;
            }
        };
        if last.as_ref() != Some(&progress) {
            bar.set_length(progress.deliveries);
            bar.set_position(progress.delivered + progress.failed);
            bar.set_message(progress.line());
            if bar.is_hidden() {
                eprintln!("motor replay: {}", progress.line());
            }
        }
        if progress.terminado {
            bar.finish();
            println!("replay {replay}: {}", progress.line());
            return if progress.failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            };
        }
        last = Some(progress);
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    const SUB: &str = "0190c6a4-8f1e-7cc0-9d8e-3b1f1c2d3e4f";

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(
            ["motor", "replay", "--token", "k", "--subscription", SUB]
                .iter()
                .chain(args),
        )
    }

    #[test]
    fn a_range_or_events_or_follow_and_only_one() {
        let cli = parse(&["--instance", SUB, "--desde", "1", "--hasta", "9"]).unwrap();
        let Command::Replay(args) = cli.command else {
            panic!("expected replay")
        };
        assert_eq!((args.from, args.to), (Some(1), Some(9)));
        assert!(parse(&["--events", &format!("{SUB},{SUB}")]).is_ok());
        assert!(parse(&["--follow", SUB]).is_ok());
        let none = parse(&[]).unwrap_err().to_string();
        assert!(none.contains("--instance"), "{none}");
        let half = parse(&["--instance", SUB, "--desde", "1"]).unwrap_err();
        assert!(half.to_string().contains("--hasta"), "{half}");
        let both = parse(&[
            "--instance",
            SUB,
            "--desde",
            "1",
            "--hasta",
            "2",
            "--events",
            SUB,
        ]);
        assert!(both.unwrap_err().to_string().contains("--events"));
        let bad = parse(&["--events", "nope"]).unwrap_err();
        assert!(bad.to_string().contains("--events"), "{bad}");
    }
}
