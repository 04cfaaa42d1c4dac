//! `motor nats-stream`: creates (or widens) the JetStream stream a NATS
//! subscription publishes into, so a user needs no `nats` CLI to try one.
//! A JetStream publish to a subject no stream captures fails (`sin_stream`,
//! retried), so the stream must exist before the first delivery. Prints
//! the stream's name, subjects and message count as JSON.

use std::process::ExitCode;

use async_nats::{jetstream, ConnectOptions};
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct NatsStreamArgs {
    /// The NATS server (`nats://host:port`, `tls://…` for TLS).
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    pub server: String,
    /// The stream's name.
    #[arg(long, default_value = "MOTOR")]
    pub name: String,
    /// The subjects it captures (comma list; wildcards `*` and `>`), e.g.
    /// `motor.>` for `nats://…/motor.{instance_id}.{type}`.
    #[arg(long, value_delimiter = ',', required = true)]
    pub subjects: Vec<String>,
    /// A token to log in with.
    #[arg(
        long,
        env = "MOTOR_NATS_TOKEN",
        hide_env_values = true,
        conflicts_with = "user"
    )]
    pub token: Option<String>,
    /// A user to log in with (with --password).
    #[arg(long, requires = "password")]
    pub user: Option<String>,
    #[arg(
        long,
        env = "MOTOR_NATS_PASSWORD",
        hide_env_values = true,
        requires = "user"
    )]
    pub password: Option<String>,
}

pub async fn run(args: NatsStreamArgs) -> anyhow::Result<ExitCode> {
    let mut options = ConnectOptions::new().connection_timeout(std::time::Duration::from_secs(10));
    if let Some(token) = &args.token {
        options = options.token(token.clone());
    }
    if let (Some(user), Some(password)) = (&args.user, &args.password) {
        options = options.user_and_password(user.clone(), password.clone());
    }
    let client = options.connect(args.server.as_str()).await?;
    let js = jetstream::new(client);
    let config = jetstream::stream::Config {
        name: args.name.clone(),
        subjects: args.subjects.clone(),
        ..Default::default()
    };
    // Creates it, or, when it exists, makes it capture these subjects too.
    let mut stream = match js.get_stream(&args.name).await {
        Ok(mut existing) => {
            let mut wider = existing.info().await?.config.clone();
            for subject in &args.subjects {
                if !wider.subjects.contains(subject) {
                    wider.subjects.push(subject.clone());
                }
            }
            js.update_stream(wider).await?;
            js.get_stream(&args.name).await?
        }
        Err(_) => js.create_stream(config).await?,
    };
    let info = stream.info().await?;
    let shown = json!({
        "nombre": info.config.name,
        "sujetos": info.config.subjects,
        "mensajes": info.state.messages,
    });
    println!("{}", serde_json::to_string_pretty(&shown)?);
    Ok(ExitCode::SUCCESS)
}
