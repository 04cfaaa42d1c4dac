//! The long-poll (`GET /v1/executor/commands?instance=…&wait=…`): an
//! instance's claimable commands in acceptance order, as the
//! `{prefix}.commands` records describe them, waiting up to `wait` for
//! one to appear. It reads Postgres, the truth: a command cancelled,
//! claimed or expired is never answered, a deferred one comes back at its
//! `next_try`. While it waits it is woken by this process's [`Bell`], by
//! the earliest `next_try` of the instance's queued commands, and
//! otherwise reads again every [`ExecutorConfig::recheck`] (commits of
//! other processes). Answering is not claiming: every executor that
//! polls may see a command; the claim decides who runs it.

use std::time::Duration;

use motor_domain::{outbox::CommandJob, time, FieldError, InstanceId};
use motor_store::{commands, Pool};

use super::{command_error, Bell, ExecutorConfig};
use crate::{Access, Result};

/// Most commands one answer carries, unless the settings say otherwise
/// ([`ExecutorConfig::max_limit`]).
pub const MAX_LIMIT: i64 = 100;
const DEFAULT_LIMIT: i64 = 10;

/// A long-poll's parsed query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollQuery {
    pub wait: Duration,
    pub limit: i64,
}

impl PollQuery {
    /// `wait` in whole seconds, 0 to `config.max_wait` (default 0: answer
    /// at once); `limit` 1 to `config.max_limit` (default 10, or the
    /// maximum if that is lower). Errors name the parameter (bare: `wait`,
    /// `limit`).
    pub fn parse(
        wait: Option<&str>,
        limit: Option<&str>,
        config: &ExecutorConfig,
    ) -> Result<Self, FieldError> {
        let max_wait = config.max_wait.as_secs();
        let wait = match wait {
            None => 0,
            Some(raw) => parse_u64(raw).filter(|w| *w <= max_wait).ok_or_else(|| {
                FieldError::invalid("wait", format!("must be whole seconds, 0 to {max_wait}"))
            })?,
        };
        let max_limit = config.max_limit.max(1);
        let limit = match limit {
            None => DEFAULT_LIMIT.min(max_limit),
            Some(raw) => parse_u64(raw)
                .and_then(|l| i64::try_from(l).ok())
                .filter(|l| (1..=max_limit).contains(l))
                .ok_or_else(|| FieldError::invalid("limit", format!("must be 1 to {max_limit}")))?,
        };
        Ok(Self {
            wait: Duration::from_secs(wait),
            limit,
        })
    }
}

/// `instance`'s claimable commands, waiting up to `query.wait` for one;
/// an empty list once the wait is over. Ends early (empty) on `stop`.
pub async fn poll(
    pool: &Pool,
    bell: &Bell,
    config: &ExecutorConfig,
    access: &Access,
    instance: InstanceId,
    query: PollQuery,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Vec<CommandJob>> {
    super::check_instance(access, instance)?;
    let deadline = tokio::time::Instant::now() + query.wait;
    tokio::pin!(stop);
    loop {
        // Registered before the read: a ring while it runs is not lost.
        let woken = bell.listen(instance);
        let now = time::now_millis();
        let mut conn = pool.acquire().await?;
        let (due, next) = commands::due(&mut conn, access.app, instance, now, query.limit)
            .await
            .map_err(command_error)?;
        drop(conn);
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if !due.is_empty() || left.is_zero() {
            return Ok(due);
        }
        let mut nap = left.min(config.recheck);
        if let Some(next) = next {
            let until = (next - now).to_std().unwrap_or_default();
            nap = nap.min(until);
        }
        tokio::select! {
            _ = woken => {}
            _ = tokio::time::sleep(nap) => {}
            _ = &mut stop => return Ok(Vec::new()),
        }
    }
}

/// A whole number written with digits only (no sign, no spaces).
fn parse_u64(raw: &str) -> Option<u64> {
    if raw.is_empty() || raw.len() > 18 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_and_limit_are_bounded_and_named() {
        let config = ExecutorConfig::default();
        let q = PollQuery::parse(None, None, &config).unwrap();
        assert_eq!((q.wait, q.limit), (Duration::ZERO, DEFAULT_LIMIT));
        let q = PollQuery::parse(Some("30"), Some("100"), &config).unwrap();
        assert_eq!((q.wait, q.limit), (Duration::from_secs(30), 100));
        for (wait, limit, field) in [
            (Some("31"), None, "wait"),
            (Some("-1"), None, "wait"),
            (Some("1.5"), None, "wait"),
            (Some(""), None, "wait"),
            (None, Some("0"), "limit"),
            (None, Some("101"), "limit"),
            (None, Some("x"), "limit"),
        ] {
            let e = PollQuery::parse(wait, limit, &config).unwrap_err();
            assert_eq!(e.field, field, "{wait:?} {limit:?}");
        }
    }

    #[test]
    fn the_bounds_are_the_settings() {
        let config = ExecutorConfig {
            max_wait: Duration::from_secs(120),
            max_limit: 5,
            ..ExecutorConfig::default()
        };
        let q = PollQuery::parse(Some("120"), Some("5"), &config).unwrap();
        assert_eq!((q.wait, q.limit), (Duration::from_secs(120), 5));
        // The default limit never exceeds the maximum.
        assert_eq!(PollQuery::parse(None, None, &config).unwrap().limit, 5);
        let e = PollQuery::parse(Some("121"), None, &config).unwrap_err();
        assert_eq!(e.field, "wait");
        assert!(e.message.contains("0 to 120"), "{}", e.message);
        let e = PollQuery::parse(None, Some("6"), &config).unwrap_err();
        assert_eq!(e.field, "limit");
        assert!(e.message.contains("1 to 5"), "{}", e.message);
    }
}
