//! `motor admin`: the operator API's operations from the shell, printing
//! the same JSON the API answers.

use clap::Subcommand;
use motor_api::{
    admin::{self, CreateApp, CreateInstance, CreateKey, UpdateApp},
    ApiError,
};
use motor_domain::AppId;
use motor_store::Pool;
use serde::Serialize;

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Apps: the tenants that own instances, keys and subscriptions.
    #[command(subcommand)]
    App(AppCommand),
    /// Instances of an app (each has its own ledger).
    #[command(subcommand)]
    Instance(InstanceCommand),
    /// API keys of an app.
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Debug, Subcommand)]
pub enum AppCommand {
    Create {
        #[arg(long)]
        nombre: String,
        /// Allowed destination (`host` or `host:port`); repeatable.
        #[arg(long = "destino")]
        destinos: Vec<String>,
    },
    List,
    Get {
        id: AppId,
    },
    Update {
        id: AppId,
        #[arg(long)]
        nombre: Option<String>,
        /// Replaces the allowed destinations; repeatable.
        #[arg(long = "destino")]
        destinos: Option<Vec<String>>,
    },
}

#[derive(Debug, Subcommand)]
pub enum InstanceCommand {
    Create {
        #[arg(long)]
        app: AppId,
        #[arg(long)]
        nombre: String,
    },
    List {
        #[arg(long)]
        app: AppId,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Issues a key; its token is printed once and stored hashed.
    Create {
        #[arg(long)]
        app: AppId,
        #[arg(long)]
        nombre: String,
        /// events:write, events:read, subscriptions:manage, deliveries:replay; repeatable.
        #[arg(long = "scope", required = true)]
        scopes: Vec<String>,
        /// Restricts the key to this instance; repeatable.
        #[arg(long = "instancia")]
        instancias: Vec<String>,
    },
    List {
        #[arg(long)]
        app: AppId,
    },
    Revoke {
        #[arg(long)]
        app: AppId,
        key_id: String,
    },
}

/// Runs one admin command; the JSON to print, or the API's error body.
pub async fn run(pool: &Pool, command: AdminCommand) -> Result<serde_json::Value, ApiError> {
    match command {
        AdminCommand::App(cmd) => match cmd {
            AppCommand::Create { nombre, destinos } => json(
                admin::create_app(
                    pool,
                    CreateApp {
                        nombre,
                        destinos_permitidos: destinos,
                    },
                )
                .await?,
            ),
            AppCommand::List => json(admin::list_apps(pool).await?),
            AppCommand::Get { id } => json(admin::get_app(pool, id).await?),
            AppCommand::Update {
                id,
                nombre,
                destinos,
            } => json(
                admin::update_app(
                    pool,
                    id,
                    UpdateApp {
                        nombre,
                        destinos_permitidos: destinos,
                    },
                )
                .await?,
            ),
        },
        AdminCommand::Instance(cmd) => match cmd {
            InstanceCommand::Create { app, nombre } => {
                json(admin::create_instance(pool, app, CreateInstance { nombre }).await?)
            }
            InstanceCommand::List { app } => json(admin::list_instances(pool, app).await?),
        },
        AdminCommand::Key(cmd) => match cmd {
            KeyCommand::Create {
                app,
                nombre,
                scopes,
                instancias,
            } => json(
                admin::create_key(
                    pool,
                    app,
                    CreateKey {
                        nombre,
                        scopes,
                        instancias,
                    },
                )
                .await?,
            ),
            KeyCommand::List { app } => json(admin::list_keys(pool, app).await?),
            KeyCommand::Revoke { app, key_id } => {
                admin::revoke_key(pool, app, &key_id).await?;
                Ok(serde_json::json!({"key_id": key_id, "revocada": true}))
            }
        },
    }
}

fn json(value: impl Serialize) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(value).map_err(ApiError::internal)
}
