//! The command line: `motor migrate | serve | admin | doctor |
//! check-receiver | replay | tail`.

use clap::{Parser, Subcommand};

use crate::{admin::AdminCommand, config::Config, serve::Role};

#[derive(Debug, Parser)]
#[command(
    name = "motor",
    version,
    about = "Motor: ordered, signed, at-least-once event delivery"
)]
pub struct Cli {
    #[command(flatten)]
    pub config: Config,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Creates the database if missing and applies pending migrations.
    Migrate,
    /// Runs Motor's roles (all of them unless --roles picks some).
    Serve {
        /// Comma-separated roles to run in this process.
        #[arg(long, value_delimiter = ',', default_values_t = Role::ALL.to_vec(), value_enum)]
        roles: Vec<Role>,
    },
    /// The operator API from the shell (apps, instances, keys, settings,
    /// alerts, event types); prints the same JSON.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// One reconciliation pass: prints what is stuck as JSON; exits 0 when
    /// nothing is, 2 when something is, 1 when the check failed.
    Doctor,
    /// Grades a webhook receiver against the contract with a battery of
    /// signed requests; exits 1 when a check fails.
    CheckReceiver(crate::check_receiver::CheckReceiverArgs),
    /// Starts a replay through the API (or follows one) and shows its
    /// deliveries draining; Ctrl-C leaves it running.
    Replay(crate::replay::ReplayArgs),
    /// Follows an instance's ledger live through the API's stream,
    /// resuming by itself.
    Tail(crate::tail::TailArgs),
    /// Creates (or widens) the JetStream stream a NATS subscription
    /// publishes into; prints it as JSON.
    #[cfg(feature = "nats")]
    NatsStream(crate::nats_stream::NatsStreamArgs),
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn roles_parse() {
        let cli = Cli::try_parse_from(["motor", "serve", "--roles", "relay"]).unwrap();
        let Command::Serve { roles } = cli.command else {
            panic!("expected serve")
        };
        assert_eq!(roles, vec![Role::Relay]);
        let cli = Cli::try_parse_from(["motor", "serve"]).unwrap();
        let Command::Serve { roles } = cli.command else {
            panic!("expected serve")
        };
        assert_eq!(roles, Role::ALL.to_vec());
        assert!(Cli::try_parse_from(["motor", "serve", "--roles", "nope"]).is_err());
    }

    #[test]
    fn webhook_extra_roots_are_read_at_start() {
        let roots = |args: &[&str]| {
            let cli = Cli::try_parse_from(["motor"].iter().chain(args).chain(&["serve"])).unwrap();
            cli.config.extra_roots()
        };
        let ca = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../motor-destinations/testdata/tls/ca.pem"
        );
        assert_eq!(roots(&["--webhook-extra-roots", ca]).unwrap().len(), 1);
        let key = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../motor-destinations/testdata/tls/server.key"
        );
        for bad in [key, "/nonexistent/roots.pem"] {
            let err = roots(&["--webhook-extra-roots", bad]).unwrap_err();
            assert!(
                format!("{err:#}").contains("MOTOR_WEBHOOK_EXTRA_ROOTS"),
                "{err:#}"
            );
        }
        if std::env::var_os("MOTOR_WEBHOOK_EXTRA_ROOTS").is_none() {
            assert!(roots(&[]).unwrap().is_empty());
        }
    }

    #[test]
    fn admin_settings_and_alerts_parse() {
        use crate::admin::{AdminCommand, AlertCommand, SettingsCommand};

        let cli = Cli::try_parse_from([
            "motor",
            "admin",
            "settings",
            "set",
            "webhooks.timeout_segundos",
            "20",
        ])
        .unwrap();
        let Command::Admin(AdminCommand::Settings(SettingsCommand::Set { key, value })) =
            cli.command
        else {
            panic!("expected settings set")
        };
        assert_eq!(
            (key.as_str(), value.as_str()),
            ("webhooks.timeout_segundos", "20")
        );
        assert!(Cli::try_parse_from(["motor", "admin", "settings", "set", "k"]).is_err());
        assert!(Cli::try_parse_from(["motor", "admin", "alert", "close", "nope"]).is_err());
        let cli = Cli::try_parse_from(["motor", "admin", "alert", "list", "--estado", "abierta"])
            .unwrap();
        assert!(matches!(
            cli.command,
            Command::Admin(AdminCommand::Alert(AlertCommand::List {
                estado: Some(_),
                app: None
            }))
        ));
    }
}
