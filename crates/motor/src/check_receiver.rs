//! `motor check-receiver URL --secret whsec_…`: runs the receiver
//! conformance battery (`motor_destinations::check`) against a receiver the
//! operator owns and prints one graded row per check, or the report as
//! JSON with `--json`. Exits 0 when every check passed, 1 when one failed;
//! bad flags exit 2 with clap's message naming the flag.

use std::{process::ExitCode, time::Duration};

use motor_destinations::check::{self, CheckClient, CheckOptions, CheckProfile, ReceiverKey};
use motor_domain::{
    secret::{SigningKeyId, SigningSecret},
    AppId,
};

#[derive(Debug, clap::Args)]
pub struct CheckReceiverArgs {
    /// The receiver's URL (http or https), as a subscription would hold it.
    pub url: String,
    /// The receiver's secret (`whsec_…`). During a rotation give both,
    /// newest first (repeat the flag or comma-separate).
    #[arg(
        long = "secret",
        env = "MOTOR_WEBHOOK_SECRET",
        hide_env_values = true,
        value_delimiter = ',',
        required = true,
        value_parser = parse_secret
    )]
    pub secrets: Vec<SigningSecret>,
    /// The key id (`whk_…`) of each secret, same order; mw-v1 sends it in
    /// `X-MW-Key-Id`, and a receiver that looks secrets up by key id needs
    /// the real one. Generated when absent.
    #[arg(long = "key-id", value_delimiter = ',', value_parser = parse_key_id)]
    pub key_ids: Vec<SigningKeyId>,
    /// What to grade against: Motor's contract under a signing profile
    /// (mw-v1 — also spelled motor —, t-v1, standard-webhooks), or the
    /// contract a receiver was written from: visito (seed 001), asixto
    /// (seed 003), whose envelope, headers and signature the requests then
    /// carry.
    #[arg(long, default_value = "mw-v1", value_parser = parse_profile)]
    pub profile: CheckProfile,
    /// Seconds each request may take (Motor's attempt timeout, 1–60);
    /// by default the contract's own (visito: 10) or 10.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=60))]
    pub timeout: Option<u64>,
    /// A URL holding `{event_id}` that answers `{"efectos": N}`: how many
    /// times the receiver applied that event. With it, every accepted check
    /// must show exactly one effect and every refused one none.
    #[arg(long)]
    pub effect_url: Option<String>,
    /// The `type` of the events sent.
    #[arg(long, default_value = "webhook.test")]
    pub event_type: String,
    /// Print the report as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

fn parse_secret(s: &str) -> Result<SigningSecret, String> {
    SigningSecret::parse(s.trim().to_owned())
        .ok_or_else(|| "not a secret Motor issued (whsec_ and 64 hex digits)".to_owned())
}

fn parse_key_id(s: &str) -> Result<SigningKeyId, String> {
    SigningKeyId::parse(s.trim()).ok_or_else(|| "not a key id (whk_ and hex digits)".to_owned())
}

fn parse_profile(s: &str) -> Result<CheckProfile, String> {
    CheckProfile::parse(s).ok_or_else(|| format!("one of {}", CheckProfile::names().join(", ")))
}

/// Runs the battery and prints the result; the exit code says whether the
/// receiver passed (0), failed a check (1) or could not be checked (2).
pub async fn run(args: CheckReceiverArgs) -> ExitCode {
    let options = match options(&args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("motor check-receiver: {message}");
            return ExitCode::from(2);
        }
    };
    let report = check::run(&CheckClient::direct(), &options).await;
    if args.json {
        let json = serde_json::to_string_pretty(&report).expect("a report always serialises");
        println!("{json}");
    } else {
        print!("{}", report.table());
    }
    if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The battery's options from the flags; what clap cannot check alone
/// (key ids matching secrets, the URLs) is checked here.
fn options(args: &CheckReceiverArgs) -> Result<CheckOptions, String> {
    if !args.key_ids.is_empty() && args.key_ids.len() != args.secrets.len() {
        return Err(format!(
            "--key-id: {} given for {} secrets; give one per --secret, same order",
            args.key_ids.len(),
            args.secrets.len()
        ));
    }
    let keys = args
        .secrets
        .iter()
        .enumerate()
        .map(|(i, secret)| ReceiverKey {
            key_id: args
                .key_ids
                .get(i)
                .cloned()
                .unwrap_or_else(SigningKeyId::generate),
            secret: secret.clone(),
        })
        .collect();
    let options = CheckOptions {
        url: args.url.clone(),
        profile: args.profile,
        keys,
        timeout: args.timeout.map(Duration::from_secs).unwrap_or_else(|| {
            args.profile
                .contract()
                .spec()
                .attempt_timeout
                .unwrap_or(check::DEFAULT_TIMEOUT)
        }),
        effect_url: args.effect_url.clone(),
        event_type: args.event_type.clone(),
        // Visito's tenantId: any app will do for a receiver checked here.
        app_id: AppId::new(),
    };
    options.validate().map_err(|e| match e {
        check::OptionsError::EffectUrl => format!("--effect-url: {e}"),
        other => other.to_string(),
    })?;
    Ok(options)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    const SECRET: &str = "whsec_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(["motor", "check-receiver"].iter().chain(args))
    }

    #[test]
    fn flags_parse_and_bad_ones_name_themselves() {
        let cli = parse(&[
            "http://127.0.0.1:1/w",
            "--secret",
            SECRET,
            "--profile",
            "t-v1",
        ])
        .unwrap();
        let Command::CheckReceiver(args) = cli.command else {
            panic!("expected check-receiver")
        };
        assert_eq!(args.profile.as_str(), "t-v1");
        assert_eq!(args.timeout, None);
        for (name, contract) in [
            ("visito", "visito"),
            ("asixto", "asixto"),
            ("motor", "motor"),
            ("standard-webhooks", "motor"),
        ] {
            let cli = parse(&["http://x/", "--secret", SECRET, "--profile", name]).unwrap();
            let Command::CheckReceiver(args) = cli.command else {
                panic!("expected check-receiver")
            };
            assert_eq!(args.profile.contract().as_str(), contract, "{name}");
        }
        let err = parse(&["http://x/", "--secret", SECRET, "--profile", "visitor"]).unwrap_err();
        assert!(err.to_string().contains("--profile"), "{err}");
        assert!(err.to_string().contains("asixto"), "{err}");
        let err = parse(&["http://x/", "--secret", "whsec_short"]).unwrap_err();
        assert!(err.to_string().contains("--secret"), "{err}");
        let err = parse(&["http://x/", "--secret", SECRET, "--timeout", "61"]).unwrap_err();
        assert!(err.to_string().contains("--timeout"), "{err}");
    }

    #[test]
    fn options_refuse_what_clap_cannot_see() {
        let args = |extra: &[&str]| {
            let mut all = vec!["ftp://x/", "--secret", SECRET];
            all.extend_from_slice(extra);
            let Command::CheckReceiver(args) = parse(&all).unwrap().command else {
                panic!("expected check-receiver")
            };
            args
        };
        assert!(super::options(&args(&[])).unwrap_err().contains("url"));
        let mut ok = args(&[]);
        ok.url = "http://127.0.0.1:1/w".into();
        assert!(super::options(&ok).is_ok());
        ok.effect_url = Some("http://127.0.0.1:1/efectos".into());
        assert!(super::options(&ok).unwrap_err().contains("--effect-url"));
        let mut two_ids = args(&["--key-id", "whk_01,whk_02"]);
        two_ids.url = "http://127.0.0.1:1/w".into();
        assert!(super::options(&two_ids).unwrap_err().contains("--key-id"));
    }
}
