//! `motor admin`: the operator API's operations from the shell, printing
//! the same JSON the API answers.

use clap::Subcommand;
use motor_api::{
    admin::{
        self, apps::AppSchema, instances::InstanceSchema, keys::CreatedKeySchema, CreateApp,
        CreateInstance, CreateKey, UpdateApp,
    },
    admin::{
        alerts::{self, AlertQuery},
        event_types::{self, EventCatalogue},
        settings,
    },
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
    /// Operator settings (`GET/PATCH /v1/admin/settings`).
    #[command(subcommand)]
    Settings(SettingsCommand),
    /// Operator alerts (`/v1/admin/alerts`).
    #[command(subcommand)]
    Alert(AlertCommand),
    /// An app's closed catalogue of event types (`/v1/admin/apps/{id}/event-types`).
    #[command(subcommand)]
    EventTypes(EventTypesCommand),
}

#[derive(Debug, Subcommand)]
pub enum SettingsCommand {
    /// Prints the settings in force, defaults included.
    Get,
    /// Sets one key (checked against its range) and prints the settings.
    Set {
        /// `webhooks.destinos_permitidos`, `webhooks.timeout_segundos`,
        /// `webhooks.ventana_rotacion_minutos` or `retencion.dias_entregados`.
        key: String,
        /// A JSON value (`20`, `["hooks.example.com"]`); anything that is
        /// not JSON is taken as a string.
        value: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AlertCommand {
    /// Alerts, newest first.
    List {
        /// `abierta` or `cerrada`; both when absent.
        #[arg(long)]
        estado: Option<String>,
        /// Only this app's alerts.
        #[arg(long)]
        app: Option<AppId>,
    },
    /// Closes an alert and prints it.
    Close { id: uuid::Uuid },
}

#[derive(Debug, Subcommand)]
pub enum EventTypesCommand {
    /// Prints the app's catalogue (`null`: any type is accepted).
    Get {
        #[arg(long)]
        app: AppId,
    },
    /// Closes the catalogue to these types; repeatable.
    Set {
        #[arg(long)]
        app: AppId,
        #[arg(long = "tipo")]
        tipos: Vec<String>,
    },
    /// Opens the catalogue again: any type is accepted.
    Open {
        #[arg(long)]
        app: AppId,
    },
}

#[derive(Debug, Subcommand)]
pub enum AppCommand {
    Create {
        #[arg(long)]
        nombre: String,
        /// Allowed destination (`host` or `host:port`); repeatable.
        #[arg(long = "destino")]
        destinos: Vec<String>,
        /// `estandar` (default) or `publica_https`.
        #[arg(long = "politica-destinos")]
        politica_destinos: Option<String>,
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
        /// `estandar` or `publica_https`.
        #[arg(long = "politica-destinos")]
        politica_destinos: Option<String>,
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
            AppCommand::Create {
                nombre,
                destinos,
                politica_destinos,
            } => json(AppSchema::from(
                admin::create_app(
                    pool,
                    CreateApp {
                        nombre,
                        destinos_permitidos: destinos,
                        politica_destinos,
                    },
                )
                .await?,
            )),
            AppCommand::List => json(admin::list_apps(pool).await?),
            AppCommand::Get { id } => json(AppSchema::from(admin::get_app(pool, id).await?)),
            AppCommand::Update {
                id,
                nombre,
                destinos,
                politica_destinos,
            } => json(AppSchema::from(
                admin::update_app(
                    pool,
                    id,
                    UpdateApp {
                        nombre,
                        destinos_permitidos: destinos,
                        politica_destinos,
                    },
                )
                .await?,
            )),
        },
        AdminCommand::Instance(cmd) => match cmd {
            InstanceCommand::Create { app, nombre } => json(InstanceSchema::from(
                admin::create_instance(pool, app, CreateInstance { nombre }).await?,
            )),
            InstanceCommand::List { app } => json(admin::list_instances(pool, app).await?),
        },
        AdminCommand::Key(cmd) => match cmd {
            KeyCommand::Create {
                app,
                nombre,
                scopes,
                instancias,
            } => json(CreatedKeySchema::from(
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
            )),
            KeyCommand::List { app } => json(admin::list_keys(pool, app).await?),
            KeyCommand::Revoke { app, key_id } => {
                admin::revoke_key(pool, app, &key_id).await?;
                Ok(serde_json::json!({"key_id": key_id, "revocada": true}))
            }
        },
        AdminCommand::Settings(cmd) => match cmd {
            SettingsCommand::Get => json(settings::get_settings(pool).await?),
            SettingsCommand::Set { key, value } => {
                let mut patch = serde_json::Map::new();
                patch.insert(key, setting_value(&value));
                json(settings::update_settings(pool, &patch.into()).await?)
            }
        },
        AdminCommand::Alert(cmd) => match cmd {
            AlertCommand::List { estado, app } => json(
                alerts::list_alerts(
                    pool,
                    &AlertQuery {
                        estado,
                        app_id: app.map(|a| a.to_string()),
                    },
                )
                .await?,
            ),
            AlertCommand::Close { id } => json(alerts::close_alert(pool, id).await?),
        },
        AdminCommand::EventTypes(cmd) => match cmd {
            EventTypesCommand::Get { app } => json(event_types::get_catalogue(pool, app).await?),
            EventTypesCommand::Set { app, tipos } => json(
                event_types::set_catalogue(pool, app, EventCatalogue { tipos: Some(tipos) })
                    .await?,
            ),
            EventTypesCommand::Open { app } => {
                json(event_types::set_catalogue(pool, app, EventCatalogue { tipos: None }).await?)
            }
        },
    }
}

/// A setting's value from the shell: JSON when it parses, else a string.
fn setting_value(raw: &str) -> serde_json::Value {
    serde_json::from_str(raw).unwrap_or_else(|_| serde_json::Value::String(raw.to_owned()))
}

fn json(value: impl Serialize) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(value).map_err(ApiError::internal)
}
