use std::process::ExitCode;

use clap::Parser;
use motor::{
    cli::{Cli, Command},
    serve,
};
use tokio_util::sync::CancellationToken;

/// mimalloc rather than glibc's malloc: under many tenants' traffic
/// (shapes bench, `tenants`) `perf` put 17 % of Motor's samples in
/// glibc's allocator (`_int_malloc`, `_int_free`, `malloc_consolidate`);
/// docs/BENCHMARKS.md, 2026-12-05 13:05.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let _logging = motor::logging::init();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("motor: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Migrate => {
            motor_store::migrate(&cli.config.database_url).await?;
            eprintln!("motor: database migrated");
        }
        Command::Serve { roles } => {
            let shutdown = CancellationToken::new();
            serve::cancel_on_signal(shutdown.clone());
            serve::run(cli.config, &roles, shutdown, None).await?;
        }
        Command::Doctor => {
            return motor::doctor::run(&cli.config.database_url, &cli.config.reconcile).await;
        }
        Command::CheckReceiver(args) => return Ok(motor::check_receiver::run(args).await),
        Command::Replay(args) => return Ok(motor::replay::run(args).await),
        Command::Tail(args) => return Ok(motor::tail::run(args).await),
        #[cfg(feature = "nats")]
        Command::NatsStream(args) => return motor::nats_stream::run(args).await,
        Command::Admin(command) => {
            motor_store::migrate(&cli.config.database_url).await?;
            let pool = motor_store::connect(&cli.config.database_url, 2).await?;
            match motor::admin::run(&pool, command).await {
                Ok(json) => println!("{}", serde_json::to_string_pretty(&json)?),
                Err(e) => {
                    eprintln!("{}", serde_json::to_string_pretty(&e.to_json())?);
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
