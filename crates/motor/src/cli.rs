//! The command line: `motor migrate | serve | admin`.

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
    /// Bootstraps apps, instances and API keys; prints JSON.
    #[command(subcommand)]
    Admin(AdminCommand),
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
}
