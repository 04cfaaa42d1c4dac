//! A webhook receiver built on the `motor-receiver` crate, as a user of
//! Motor would write it: it verifies each request's signature (mw-v1 unless
//! `--firma` says otherwise), answers 408 to a timestamp more than 300 s
//! off and 401 to anything unsigned, deduplicates by `event_id`, and prints
//! what it received.
//!
//!   MOTOR_WEBHOOK_SECRET=whsec_… cargo run --example receiver -- \
//!     [--addr 127.0.0.1:8090] [--firma mw-v1|t-v1|standard-webhooks] \
//!     [--database-url postgres://…]
//!
//! During a rotation give both secrets, comma-separated. Without a
//! database it remembers event ids in memory (lost on restart); with
//! `--database-url` (or `MOTOR_RECEIVER_DATABASE_URL`) it keeps them in the
//! Postgres inbox and answers 204 only after the commit.

use std::{
    collections::HashSet,
    convert::Infallible,
    sync::{Arc, Mutex},
};

use axum::{
    extract::{FromRef, State},
    http::StatusCode,
    routing::post,
    Router,
};
use motor_receiver::{Inbox, Profile, Received, Secret, Verifier, Webhook, WebhookRejection};
use uuid::Uuid;

/// Where event ids already applied are kept.
#[derive(Clone)]
enum Seen {
    Memory(Arc<Mutex<HashSet<Uuid>>>),
    Inbox(Inbox),
}

#[derive(Clone, FromRef)]
struct App {
    verifier: Verifier,
    seen: Seen,
}

async fn webhook(
    State(seen): State<Seen>,
    webhook: Result<Webhook, WebhookRejection>,
) -> StatusCode {
    let webhook = match webhook {
        Ok(webhook) => webhook,
        Err(rejection) => {
            eprintln!("rejected ({}): {rejection}", rejection.status());
            return rejection.status();
        }
    };
    let event = &webhook.envelope;
    let outcome = match &seen {
        Seen::Memory(ids) => {
            let first = ids.lock().expect("not poisoned").insert(event.event_id);
            if first {
                Received::Applied
            } else {
                Received::Duplicate
            }
        }
        // The effect of this receiver is the log line below; a real one
        // writes its own rows here, in the inbox's transaction.
        Seen::Inbox(inbox) => {
            inbox
                .receive(event, async |_tx| Ok::<(), Infallible>(()))
                .await
        }
    };
    let what = match &outcome {
        Received::Applied => "verified",
        Received::Duplicate => "repeat  ",
        Received::Failed(e) => {
            eprintln!("not kept, Motor will retry: {e}");
            return outcome.status();
        }
    };
    println!(
        "{what} delivery {}: event {} instance {} seq {} {} {}",
        webhook.delivery_id().unwrap_or("-"),
        event.event_id,
        event.instance_id,
        event.seq,
        event.event_type,
        event.data,
    );
    outcome.status()
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let secrets: Vec<Secret> = std::env::var("MOTOR_WEBHOOK_SECRET")
        .map_err(|_| anyhow::anyhow!("set MOTOR_WEBHOOK_SECRET to the subscription's whsec_… secret (comma-separate two during a rotation)"))?
        .split(',')
        .map(|s| Secret::new(s.trim()))
        .collect();
    let args: Vec<String> = std::env::args().collect();
    let addr = arg(&args, "--addr").unwrap_or_else(|| "127.0.0.1:8090".into());
    let firma = arg(&args, "--firma").unwrap_or_else(|| Profile::MwV1.as_str().into());
    let profile = Profile::parse(&firma)
        .ok_or_else(|| anyhow::anyhow!("--firma is mw-v1, t-v1 or standard-webhooks"))?;
    let verifier = Verifier::new(profile, secrets)?;

    let database =
        arg(&args, "--database-url").or_else(|| std::env::var("MOTOR_RECEIVER_DATABASE_URL").ok());
    let seen = match database {
        Some(url) => {
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(3)
                .connect(&url)
                .await?;
            let inbox = Inbox::new(pool, "example-receiver");
            inbox.create().await?;
            Seen::Inbox(inbox)
        }
        None => Seen::Memory(Arc::default()),
    };

    let app = Router::new()
        .route("/webhook", post(webhook))
        .with_state(App { verifier, seen });
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("receiver listening on http://{addr}/webhook ({profile})");
    axum::serve(listener, app).await?;
    Ok(())
}
