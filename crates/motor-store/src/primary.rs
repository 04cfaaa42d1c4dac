//! Which Postgres server Motor writes to. `MOTOR_DATABASE_URL` may name
//! several hosts in libpq's form (`postgres://h1:5441,h2:5442/motor?target_session_attrs=read-write`);
//! sqlx's `PgConnectOptions` takes one host, so the list is parsed here
//! and every connection Motor makes goes through one choice: the first
//! host, in order, that accepts a connection (and, with `read-write`,
//! takes writes).
//!
//! A pool made by [`crate::connect`] is pointed at the chosen host; with
//! several hosts a task of its own ([`follow`]) asks that host once a
//! second whether it still takes writes, and when it does not (killed,
//! demoted) looks for the host that does and points the pool there.
//! Connections made before the switch are dropped when next acquired;
//! the relay's and the sweeper's own connections come from the pool's
//! options ([`crate::connect_own`]), so they follow too.

use std::{
    str::FromStr,
    sync::{Arc, Mutex},
    time::Duration,
};

use sqlx::{postgres::PgConnectOptions, ConnectOptions, PgConnection, PgPool};
use tokio::time::Instant;

/// `target_session_attrs`: what a host must be for Motor to use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionAttrs {
    /// The first host that accepts a connection (libpq's default).
    Any,
    /// The first host whose sessions take writes (`read-write`, or
    /// `primary`, which is the same for a server with no hot standby
    /// quirks Motor cares about).
    ReadWrite,
}

/// The hosts of a database URL, in order, each as sqlx's options.
#[derive(Debug, Clone)]
pub struct Hosts {
    pub candidates: Vec<PgConnectOptions>,
    pub attrs: SessionAttrs,
}

/// A database URL Motor cannot use.
#[derive(Debug, thiserror::Error)]
#[error("MOTOR_DATABASE_URL: {0}")]
pub struct UrlError(String);

impl Hosts {
    /// Parses a `postgres://` URL naming one host or several
    /// (`user:pass@h1:p1,h2:p2,[::1]:p3/db?…`). Every other parameter is
    /// sqlx's; `target_session_attrs` is taken out and kept here.
    pub fn parse(url: &str) -> Result<Self, UrlError> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| UrlError("not a URL (expected postgres://…)".into()))?;
        if scheme != "postgres" && scheme != "postgresql" {
            return Err(UrlError(format!(
                "scheme {scheme:?} (expected postgres or postgresql)"
            )));
        }
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path_and_query) = rest.split_at(authority_end);
        let (userinfo, host_list) = match authority.rsplit_once('@') {
            Some((user, hosts)) => (Some(user), hosts),
            None => (None, authority),
        };
        let (path, query) = match path_and_query.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (path_and_query, None),
        };
        let mut attrs = SessionAttrs::Any;
        let mut kept = Vec::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("target_session_attrs", value)) => {
                    attrs = match value {
                        "any" => SessionAttrs::Any,
                        "read-write" | "primary" => SessionAttrs::ReadWrite,
                        other => {
                            return Err(UrlError(format!(
                                "target_session_attrs={other} is not supported \
                                 (Motor writes: read-write or any)"
                            )))
                        }
                    }
                }
                _ => kept.push(pair),
            }
        }
        let query = if kept.is_empty() {
            String::new()
        } else {
            format!("?{}", kept.join("&"))
        };
        let user = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
        let hosts = split_hosts(host_list)?;
        let candidates = hosts
            .iter()
            .map(|host| {
                let one = format!("{scheme}://{user}{host}{path}{query}");
                let options = PgConnectOptions::from_str(&one)
                    .map_err(|e| UrlError(format!("host {host:?}: {e}")))?;
                // The URL's brackets of an IPv6 address are not the host's.
                let bare = options
                    .get_host()
                    .strip_prefix('[')
                    .and_then(|h| h.strip_suffix(']'))
                    .map(str::to_owned);
                Ok(match bare {
                    Some(bare) => options.host(&bare),
                    None => options,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { candidates, attrs })
    }

    /// The same hosts with every candidate changed by `f` (an
    /// application name, another database).
    pub fn map(&self, f: impl Fn(PgConnectOptions) -> PgConnectOptions) -> Self {
        Self {
            candidates: self.candidates.iter().cloned().map(f).collect(),
            attrs: self.attrs,
        }
    }

    /// The first host, in order, that accepts a connection and is what
    /// `target_session_attrs` asks for: its options and the connection.
    /// When none is, the last host's error (or, when hosts answered but
    /// none took writes, an I/O error saying so: out of reach for now).
    pub async fn find(&self, within: Duration) -> sqlx::Result<(PgConnectOptions, PgConnection)> {
        let mut last = None;
        for options in &self.candidates {
            let attempt = async {
                let mut conn = options.connect().await?;
                if self.attrs == SessionAttrs::ReadWrite && !takes_writes(&mut conn).await? {
                    return Err(read_only(options));
                }
                Ok(conn)
            };
            match tokio::time::timeout(within, attempt).await {
                Ok(Ok(conn)) => return Ok((options.clone(), conn)),
                Ok(Err(e)) => last = Some(e),
                Err(_) => {
                    last = Some(sqlx::Error::Io(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("{} did not answer", address(options)),
                    )))
                }
            }
        }
        Err(last.unwrap_or_else(|| read_only(&PgConnectOptions::new())))
    }
}

/// Splits `h1:p1,h2,[::1]:p3` into hosts, refusing an empty one.
fn split_hosts(list: &str) -> Result<Vec<&str>, UrlError> {
    let mut hosts = Vec::new();
    let mut start = 0;
    let mut in_brackets = false;
    for (i, c) in list.char_indices() {
        match c {
            '[' => in_brackets = true,
            ']' => in_brackets = false,
            ',' if !in_brackets => {
                hosts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    hosts.push(&list[start..]);
    if hosts.len() > 1 && hosts.iter().any(|h| h.is_empty()) {
        return Err(UrlError(format!("an empty host in {list:?}")));
    }
    Ok(hosts)
}

/// Whether this session takes writes: not a standby in recovery, and not
/// read-only by default (pg_auto_failover and operators set
/// `default_transaction_read_only` on a primary they are fencing).
pub async fn takes_writes(conn: &mut PgConnection) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT (NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off') AS "writable!""#
    )
    .fetch_one(conn)
    .await
}

fn address(options: &PgConnectOptions) -> String {
    format!("{}:{}", options.get_host(), options.get_port())
}

/// A host that answered but does not take writes, as an I/O error: to a
/// caller it is the same as no answer (the primary is out of reach for
/// now), and every door maps it to "retry later".
fn read_only(options: &PgConnectOptions) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::NotConnected,
        format!("{} does not take writes (no primary)", address(options)),
    ))
}

/// When the pool last moved to another host; connections older than that
/// belong to the old one.
#[derive(Debug, Clone, Default)]
pub struct Switched(Arc<Mutex<Option<Instant>>>);

impl Switched {
    pub fn now(&self) {
        *self.0.lock().expect("not poisoned") = Some(Instant::now());
    }

    /// Whether a connection of this `age` was made after the last switch.
    pub fn is_current(&self, age: Duration) -> bool {
        self.0
            .lock()
            .expect("not poisoned")
            .is_none_or(|at| age < at.elapsed())
    }
}

/// How often the pool's host is asked whether it still takes writes.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// How long one host may take to connect and answer during a search.
const CONNECT_WITHIN: Duration = Duration::from_secs(2);

/// Keeps `pool` on the host that takes writes until the pool closes:
/// `probe` is a connection to the current host, asked once a second;
/// when it fails or the host stops taking writes, the hosts are searched
/// in order and the pool is pointed at the one found.
pub async fn follow(
    hosts: Hosts,
    pool: PgPool,
    mut current: PgConnectOptions,
    mut probe: Option<PgConnection>,
    switched: Switched,
) {
    let mut lost_since: Option<Instant> = None;
    while !pool.is_closed() {
        tokio::time::sleep(CHECK_EVERY).await;
        if let Some(conn) = probe.as_mut() {
            let check = tokio::time::timeout(CONNECT_WITHIN, takes_writes(conn)).await;
            if matches!(check, Ok(Ok(true))) {
                continue;
            }
            probe = None;
            if lost_since.is_none() {
                lost_since = Some(Instant::now());
                tracing::warn!(
                    host = %address(&current),
                    "the Postgres primary stopped answering as writable; looking for another"
                );
            }
        }
        match hosts.find(CONNECT_WITHIN).await {
            Ok((options, conn)) => {
                probe = Some(conn);
                let moved = address(&options) != address(&current);
                if moved {
                    // The pool's own settings (application name, jit) stay.
                    let next = pool
                        .connect_options()
                        .as_ref()
                        .clone()
                        .host(options.get_host())
                        .port(options.get_port());
                    pool.set_connect_options(next);
                    switched.now();
                }
                if let Some(since) = lost_since.take() {
                    tracing::warn!(
                        host = %address(&options),
                        moved,
                        gap_ms = since.elapsed().as_millis() as u64,
                        "following the Postgres primary"
                    );
                }
                current = options;
            }
            Err(e) => {
                if lost_since.is_none() {
                    lost_since = Some(Instant::now());
                    tracing::warn!(error = %e, "no Postgres host takes writes; looking again every second");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(url: &str) -> Vec<(String, u16, Option<String>)> {
        Hosts::parse(url)
            .unwrap()
            .candidates
            .iter()
            .map(|o| {
                (
                    o.get_host().to_owned(),
                    o.get_port(),
                    o.get_database().map(str::to_owned),
                )
            })
            .collect()
    }

    #[test]
    fn one_host_is_what_sqlx_parses() {
        assert_eq!(
            hosts("postgres://postgres@127.0.0.1:5432/motor"),
            [("127.0.0.1".to_owned(), 5432, Some("motor".to_owned()))]
        );
        let parsed = Hosts::parse("postgres://u:p@db/motor?sslmode=disable").unwrap();
        assert_eq!(parsed.attrs, SessionAttrs::Any);
        assert_eq!(parsed.candidates[0].get_username(), "u");
    }

    #[test]
    fn several_hosts_keep_their_order_user_database_and_parameters() {
        let parsed = Hosts::parse(
            "postgres://motor:s3cret@h1:5441,h2:5442,[::1]:5443/ledger?target_session_attrs=read-write&application_name=x",
        )
        .unwrap();
        assert_eq!(parsed.attrs, SessionAttrs::ReadWrite);
        let got: Vec<_> = parsed
            .candidates
            .iter()
            .map(|o| {
                (
                    o.get_host().to_owned(),
                    o.get_port(),
                    o.get_username().to_owned(),
                    o.get_database().map(str::to_owned),
                    o.get_application_name().map(str::to_owned),
                )
            })
            .collect();
        let want = |h: &str, p| {
            (
                h.to_owned(),
                p,
                "motor".to_owned(),
                Some("ledger".to_owned()),
                Some("x".to_owned()),
            )
        };
        assert_eq!(got, [want("h1", 5441), want("h2", 5442), want("::1", 5443)]);
    }

    #[test]
    fn a_host_without_port_takes_the_default() {
        let got = hosts("postgresql://h1,h2:6000/motor?target_session_attrs=any");
        assert_eq!(got[0].0, "h1");
        assert_eq!(got[1], ("h2".to_owned(), 6000, Some("motor".to_owned())));
        assert_eq!(
            Hosts::parse("postgresql://h1,h2:6000/motor?target_session_attrs=any")
                .unwrap()
                .attrs,
            SessionAttrs::Any
        );
        assert_eq!(
            Hosts::parse("postgres://a,b?target_session_attrs=primary")
                .unwrap()
                .attrs,
            SessionAttrs::ReadWrite
        );
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        for (url, says) in [
            ("127.0.0.1:5432/motor", "not a URL"),
            ("mysql://h/motor", "scheme"),
            ("postgres://h1,,h2/motor", "empty host"),
            ("postgres://h1:x,h2/motor", "host \"h1:x\""),
            (
                "postgres://h1,h2/motor?target_session_attrs=standby",
                "target_session_attrs=standby",
            ),
        ] {
            let e = Hosts::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(e.starts_with("MOTOR_DATABASE_URL"), "{e}");
        }
    }

    #[test]
    fn a_connection_is_current_until_the_pool_switches() {
        let switched = Switched::default();
        assert!(switched.is_current(Duration::from_secs(3600)));
        switched.now();
        std::thread::sleep(Duration::from_millis(20));
        assert!(!switched.is_current(Duration::from_secs(1)));
        assert!(switched.is_current(Duration::from_millis(1)));
    }

    /// A demoted host's refusal (25006) is "out of reach, retry later";
    /// a bad statement is not.
    #[tokio::test]
    async fn a_read_only_refusal_is_out_of_reach_and_a_bad_statement_is_not() {
        let Ok(server) = std::env::var("MOTOR_TEST_DATABASE_URL") else {
            eprintln!("MOTOR_TEST_DATABASE_URL unset: skipped");
            return;
        };
        let options = PgConnectOptions::from_str(&server)
            .unwrap()
            .database("postgres")
            .options([("default_transaction_read_only", "on")]);
        let mut conn = options.connect().await.unwrap();
        let refused = sqlx::query("CREATE TABLE motor_never_made (x int)")
            .execute(&mut conn)
            .await
            .unwrap_err();
        assert!(crate::out_of_reach(&refused), "{refused:?}");
        let bad = sqlx::query("SELEC 1").execute(&mut conn).await.unwrap_err();
        assert!(!crate::out_of_reach(&bad), "{bad:?}");
    }

    /// The choice against real servers: a host nobody listens on is
    /// skipped, and so is one whose sessions are read-only.
    #[tokio::test]
    async fn find_skips_dead_and_read_only_hosts() {
        let Ok(server) = std::env::var("MOTOR_TEST_DATABASE_URL") else {
            eprintln!("MOTOR_TEST_DATABASE_URL unset: skipped");
            return;
        };
        let live = PgConnectOptions::from_str(&server).unwrap();
        let dead_port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let url = format!(
            "postgres://{}@127.0.0.1:{dead_port},{}:{}/postgres?target_session_attrs=read-write",
            live.get_username(),
            live.get_host(),
            live.get_port()
        );
        let hosts = Hosts::parse(&url).unwrap();
        let (chosen, _conn) = hosts.find(Duration::from_secs(5)).await.unwrap();
        assert_eq!(chosen.get_port(), live.get_port());
        // A live host whose sessions are read-only is no primary.
        let read_only_only = hosts.map(|o| o.options([("default_transaction_read_only", "on")]));
        let e = read_only_only
            .find(Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("does not take writes"), "{e}");
        // `any` takes it all the same.
        let any = Hosts {
            attrs: SessionAttrs::Any,
            ..read_only_only
        };
        let (chosen, _conn) = any.find(Duration::from_secs(5)).await.unwrap();
        assert_eq!(chosen.get_port(), live.get_port());
    }
}
