//! `motor admin`: the operator's operations from the shell. It runs the
//! application layer's functions (`motor_app`), as the API does, and
//! prints what the API would answer: its wire shapes, and on failure its
//! error body. The operations name a bad field bare (`scopes[0]`); the
//! body says where the API would have it (`campo`: `body.scopes[0]`, so a
//! script reads both doors alike) and adds the shell's own name for it
//! (`opcion`: `--scope`).

use clap::Subcommand;
use motor_api::{
    admin::{
        alerts::{AlertList, AlertOut},
        apps::{AppList, AppOut},
        event_types::EventCatalogue,
        instances::{InstanceList, InstanceOut},
        keys::{CreatedKeyOut, KeyList},
        settings::SettingsOut,
    },
    error::Location,
    ApiError,
};
use motor_app::{alerts, apps, event_types, instances, keys, settings, AppError};
use motor_domain::{settings::KEYS, AppId};
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

/// `--permiso-lectura <type>=<scope>`.
fn type_and_scope(raw: &str) -> Result<(String, String), String> {
    raw.split_once('=')
        .map(|(t, s)| (t.to_owned(), s.to_owned()))
        .ok_or_else(|| format!("{raw:?} is not <type>=<read scope>"))
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
        /// `<type>=<read scope>`: the read scope a key needs to subscribe
        /// to that type (message.created=conversations:read); repeatable.
        #[arg(long = "permiso-lectura", value_parser = type_and_scope)]
        permisos_lectura: Vec<(String, String)>,
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
        /// `motor` (default), `visito`, `asixto` or `standard-webhooks`:
        /// the contract its subscriptions take when they name none.
        #[arg(long)]
        contrato: Option<String>,
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
        /// `motor`, `visito`, `asixto` or `standard-webhooks` (for
        /// subscriptions created after).
        #[arg(long)]
        contrato: Option<String>,
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
        /// events:write, events:read, subscriptions:manage, deliveries:replay,
        /// commands:write, commands:read, commands:execute; repeatable.
        #[arg(long = "scope", required = true)]
        scopes: Vec<String>,
        /// Restricts the key to this instance; repeatable.
        #[arg(long = "instancia")]
        instancias: Vec<String>,
        /// When the key stops working (RFC 3339, in the future).
        #[arg(long = "vence-en")]
        vence_en: Option<String>,
        /// A read scope of the app's (conversations:read); repeatable.
        #[arg(long = "permiso-lectura")]
        permisos_lectura: Vec<String>,
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

/// A refused command: the API's error, and the flag or argument of this
/// command the field came from.
#[derive(Debug)]
pub struct AdminError {
    pub api: ApiError,
    /// `--scope`, `KEY`, ...; `None` when the error names no field.
    pub option: Option<String>,
}

impl AdminError {
    /// The API's error body with `opcion` beside `campo`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut body = self.api.to_json();
        if let Some(option) = &self.option {
            body["error"]["opcion"] = option.as_str().into();
        }
        body
    }
}

/// Runs one admin command; the JSON to print, or the error to print.
pub async fn run(pool: &Pool, command: AdminCommand) -> Result<serde_json::Value, AdminError> {
    let inputs = Inputs::of(&command);
    execute(pool, command).await.map_err(|e| inputs.refused(e))
}

/// Where a command's fields travel in its API twin (the body, or the query
/// of `GET /v1/admin/alerts`), and the shell's name for each.
struct Inputs {
    place: Location,
    options: Options,
}

enum Options {
    /// A field's first name and its flag.
    Flags(&'static [(&'static str, &'static str)]),
    /// `settings set KEY VALUE`: the field is the key.
    Setting,
}

impl Inputs {
    fn of(command: &AdminCommand) -> Self {
        const APP: &[(&str, &str)] = &[
            ("nombre", "--nombre"),
            ("destinos_permitidos", "--destino"),
            ("politica_destinos", "--politica-destinos"),
        ];
        const KEY: &[(&str, &str)] = &[
            ("nombre", "--nombre"),
            ("scopes", "--scope"),
            ("instancias", "--instancia"),
            ("vence_en", "--vence-en"),
            ("permisos_lectura", "--permiso-lectura"),
        ];
        let (place, options) = match command {
            AdminCommand::App(_) => (Location::Body, Options::Flags(APP)),
            AdminCommand::Instance(_) => {
                (Location::Body, Options::Flags(&[("nombre", "--nombre")]))
            }
            AdminCommand::Key(_) => (Location::Body, Options::Flags(KEY)),
            AdminCommand::Settings(_) => (Location::Body, Options::Setting),
            AdminCommand::Alert(_) => (
                Location::Query,
                Options::Flags(&[("estado", "--estado"), ("app_id", "--app")]),
            ),
            AdminCommand::EventTypes(_) => (
                Location::Body,
                Options::Flags(&[
                    ("tipos", "--tipo"),
                    ("permisos_lectura", "--permiso-lectura"),
                ]),
            ),
        };
        Self { place, options }
    }

    /// The API's error (the field under the twin's place) and the shell's
    /// name for the field.
    fn refused(&self, e: AppError) -> AdminError {
        let option = match &e {
            AppError::Invalid(field) => self.option(&field.field),
            _ => None,
        };
        AdminError {
            api: self.place.error(e),
            option,
        }
    }

    /// The flag or argument a bare field came from: `scopes[0]` from
    /// `--scope`; a setting's bad value from `VALUE`, an unknown one from
    /// `KEY`.
    fn option(&self, field: &str) -> Option<String> {
        match &self.options {
            Options::Setting => Some(
                if KEYS.iter().any(|k| field.starts_with(k)) {
                    "VALUE"
                } else {
                    "KEY"
                }
                .to_owned(),
            ),
            Options::Flags(flags) => {
                let first = field.split(['.', '[']).next().unwrap_or_default();
                flags
                    .iter()
                    .find(|(name, _)| *name == first)
                    .map(|(_, flag)| (*flag).to_owned())
            }
        }
    }
}

async fn execute(pool: &Pool, command: AdminCommand) -> Result<serde_json::Value, AppError> {
    match command {
        AdminCommand::App(cmd) => match cmd {
            AppCommand::Create {
                nombre,
                destinos,
                politica_destinos,
                contrato,
            } => {
                let input = apps::NewApp {
                    name: nombre,
                    allowed_destinations: destinos,
                    destination_policy: politica_destinos,
                    contract: contrato,
                };
                json(AppOut::from(apps::create(pool, input).await?))
            }
            AppCommand::List => json(AppList {
                apps: wire(apps::list(pool).await?),
            }),
            AppCommand::Get { id } => json(AppOut::from(apps::get(pool, id).await?)),
            AppCommand::Update {
                id,
                nombre,
                destinos,
                politica_destinos,
                contrato,
            } => {
                let change = apps::AppChange {
                    name: nombre,
                    allowed_destinations: destinos,
                    destination_policy: politica_destinos,
                    contract: contrato,
                };
                json(AppOut::from(apps::update(pool, id, change).await?))
            }
        },
        AdminCommand::Instance(cmd) => match cmd {
            InstanceCommand::Create { app, nombre } => json(InstanceOut::from(
                instances::create(pool, app, &nombre).await?,
            )),
            InstanceCommand::List { app } => json(InstanceList {
                instances: wire(instances::list(pool, app).await?),
            }),
        },
        AdminCommand::Key(cmd) => match cmd {
            KeyCommand::Create {
                app,
                nombre,
                scopes,
                instancias,
                vence_en,
                permisos_lectura,
            } => {
                let input = keys::NewKey {
                    name: nombre,
                    scopes,
                    instances: instancias,
                    expires_at: vence_en,
                    read_scopes: permisos_lectura,
                };
                json(CreatedKeyOut::from(keys::create(pool, app, input).await?))
            }
            KeyCommand::List { app } => json(KeyList {
                keys: wire(keys::list(pool, app).await?),
            }),
            KeyCommand::Revoke { app, key_id } => {
                keys::revoke(pool, app, &key_id).await?;
                Ok(serde_json::json!({"key_id": key_id, "revocada": true}))
            }
        },
        AdminCommand::Settings(cmd) => match cmd {
            SettingsCommand::Get => json(SettingsOut::from(settings::get(pool).await?)),
            SettingsCommand::Set { key, value } => {
                let mut patch = serde_json::Map::new();
                patch.insert(key, setting_value(&value));
                json(SettingsOut::from(
                    settings::update(pool, &patch.into()).await?,
                ))
            }
        },
        AdminCommand::Alert(cmd) => match cmd {
            AlertCommand::List { estado, app } => {
                let app = app.map(|a| a.to_string());
                json(AlertList {
                    alerts: wire(alerts::list(pool, estado.as_deref(), app.as_deref()).await?),
                })
            }
            AlertCommand::Close { id } => json(AlertOut::from(alerts::close(pool, id).await?)),
        },
        AdminCommand::EventTypes(cmd) => match cmd {
            EventTypesCommand::Get { app } => {
                json(EventCatalogue::from(event_types::get(pool, app).await?))
            }
            EventTypesCommand::Set {
                app,
                tipos,
                permisos_lectura,
            } => json(EventCatalogue::from(
                event_types::set(
                    pool,
                    app,
                    Some(tipos),
                    permisos_lectura.into_iter().collect(),
                )
                .await?,
            )),
            EventTypesCommand::Open { app } => json(EventCatalogue::from(
                event_types::set(pool, app, None, Default::default()).await?,
            )),
        },
    }
}

/// Each item in its wire shape.
fn wire<T, W: From<T>>(items: Vec<T>) -> Vec<W> {
    items.into_iter().map(W::from).collect()
}

/// A setting's value from the shell: JSON when it parses, else a string.
fn setting_value(raw: &str) -> serde_json::Value {
    serde_json::from_str(raw).unwrap_or_else(|_| serde_json::Value::String(raw.to_owned()))
}

fn json(value: impl Serialize) -> Result<serde_json::Value, AppError> {
    serde_json::to_value(value).map_err(AppError::internal)
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use motor_domain::{operator::parse_scopes, settings::parse_patch, FieldError};

    use super::*;
    use crate::cli::{Cli, Command};

    fn command(args: &[&str]) -> AdminCommand {
        let cli = Cli::try_parse_from(["motor", "admin"].iter().chain(args)).unwrap();
        let Command::Admin(command) = cli.command else {
            panic!("not an admin command")
        };
        command
    }

    fn refused(args: &[&str], e: impl Into<AppError>) -> serde_json::Value {
        Inputs::of(&command(args)).refused(e.into()).to_json()["error"].clone()
    }

    #[test]
    fn a_refused_field_is_named_by_its_flag_and_as_the_api_names_it() {
        let app = AppId::new().to_string();
        let args = [
            "key", "create", "--app", &app, "--nombre", "k", "--scope", "root",
        ];
        // The operation's parser names the field bare.
        let bare = parse_scopes(&["root".into()], "scopes").unwrap_err();
        assert_eq!(bare.field, "scopes[0]");
        let error = refused(&args, bare);
        assert_eq!(error["opcion"], "--scope");
        assert_eq!(error["campo"], "body.scopes[0]");
        assert_eq!(error["code"], "validacion");

        let bad_name = FieldError::invalid("nombre", "must be 1 to 120 characters");
        let error = refused(
            &["instance", "create", "--app", &app, "--nombre", " "],
            bad_name,
        );
        assert_eq!(
            (&error["opcion"], &error["campo"]),
            (&"--nombre".into(), &"body.nombre".into())
        );

        let bad_destination = FieldError::invalid("destinos_permitidos[1]", "bad");
        let error = refused(&["app", "create", "--nombre", "a"], bad_destination);
        assert_eq!(error["opcion"], "--destino");

        // `alert list` is the API's GET with a query.
        let bad_state = FieldError::invalid("estado", "must be abierta or cerrada");
        let error = refused(&["alert", "list", "--estado", "rota"], bad_state);
        assert_eq!(
            (&error["opcion"], &error["campo"]),
            (&"--estado".into(), &"query.estado".into())
        );
    }

    #[test]
    fn a_setting_names_its_key_or_value() {
        let set = |key: &str, value: &str| {
            let patch = serde_json::json!({ key: setting_value(value) });
            refused(
                &["settings", "set", key, value],
                parse_patch(&patch).unwrap_err(),
            )
        };
        let error = set("webhooks.timeout_segundos", "61");
        assert_eq!(error["opcion"], "VALUE");
        assert_eq!(error["campo"], "body.webhooks.timeout_segundos");
        let error = set("webhooks.nope", "1");
        assert_eq!(error["opcion"], "KEY");
        assert_eq!(error["campo"], "body.webhooks.nope");
    }

    #[test]
    fn an_error_without_a_field_has_no_option() {
        let error = refused(&["app", "list"], AppError::NotFound("app"));
        assert_eq!(error["code"], "no_encontrado");
        assert!(
            error.get("opcion").is_none() && error.get("campo").is_none(),
            "{error}"
        );
    }
}
