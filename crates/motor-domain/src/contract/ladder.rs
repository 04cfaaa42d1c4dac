//! Retry ladders as data: the nominal delays, how each delay is drawn
//! around its nominal value, and when a delivery stops trying. One pure
//! function, [`Ladder::next_due`], turns (attempt, start, now, draw) into
//! the next attempt's time; the clock and the draw come from the caller.
//!
//! A delivery keeps the ladder it started with: [`LadderId`] (`motor@1`,
//! `visito@1`, `asixto@1`) is the small stable form a delivery row stores,
//! and [`Ladder::by_id`] reads it back. Changing a built-in ladder means a
//! new version beside the old one, never an edit of the old one.
//!
//! Motor's own ladder gives exactly what
//! [`crate::delivery::RetryPolicy::decide`] gives for a retryable failure
//! without `Retry-After` (proven by a property test). [`Ladder::decide`]
//! is the engine's call for every other ladder: the ladder's wait,
//! stretched by a receiver's `Retry-After` as the policy stretches it.

use std::{borrow::Cow, fmt, str::FromStr, time::Duration};

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

use crate::{
    delivery::{Decision, Jitter, LastError, Outcome, Tier},
    time::Timestamp,
};

/// How a wait is drawn around its nominal delay.
/// Its wire spelling is [`JitterMode::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JitterMode {
    /// `simetrica`: nominal ± `percent` %, the draw 0 at the bottom, 0.5
    /// at the nominal delay (Motor's `decide`, to the millisecond).
    Symmetric { percent: u8 },
    /// `mitad_a_total`: between half and all of the nominal delay
    /// (seed 003: "cada uno se sortea entre la mitad y el total").
    HalfToFull,
}

impl JitterMode {
    pub const fn as_str(self) -> &'static str {
        match self {
            JitterMode::Symmetric { .. } => "simetrica",
            JitterMode::HalfToFull => "mitad_a_total",
        }
    }

    /// The wait for a nominal delay of `nominal_ms` under the draw.
    fn draw_millis(self, nominal_ms: u64, draw: Jitter) -> u64 {
        match self {
            JitterMode::Symmetric { percent } => {
                // The same arithmetic as RetryPolicy::scheduled, so the two
                // agree to the millisecond.
                let spread = nominal_ms * u64::from(percent) / 100;
                let offset = ((2.0 * draw.unit() - 1.0) * spread as f64).floor() as i64;
                nominal_ms.saturating_add_signed(offset)
            }
            JitterMode::HalfToFull => {
                let half = nominal_ms / 2;
                let above = ((nominal_ms - half) as f64 * draw.unit()).floor() as u64;
                half + above
            }
        }
    }
}

/// When a delivery stops trying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// After this many attempts in all (the first one included).
    MaxAttempts(u32),
    /// A retryable failure at or after `started_at` + this age ends it.
    MaxAge(Duration),
}

/// The built-in ladders' names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LadderName {
    Motor,
    Visito,
    Asixto,
}

impl LadderName {
    pub const ALL: [Self; 3] = [Self::Motor, Self::Visito, Self::Asixto];

    pub const fn as_str(self) -> &'static str {
        match self {
            LadderName::Motor => "motor",
            LadderName::Visito => "visito",
            LadderName::Asixto => "asixto",
        }
    }
}

/// What a delivery row stores to keep its ladder: `name@version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LadderId {
    pub name: LadderName,
    pub version: u16,
}

impl fmt::Display for LadderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.name.as_str(), self.version)
    }
}

/// A stored ladder id that names no ladder this build knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown retry ladder {0:?} (known: motor@1, visito@1, asixto@1)")]
pub struct UnknownLadder(pub String);

impl FromStr for LadderId {
    type Err = UnknownLadder;

    /// Only ids of ladders [`Ladder::by_id`] knows parse, so a row that
    /// parses always resolves.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownLadder(s.to_owned());
        let (name, version) = s.split_once('@').ok_or_else(unknown)?;
        let name = LadderName::ALL
            .into_iter()
            .find(|n| n.as_str() == name)
            .ok_or_else(unknown)?;
        // Digits only: `+1` and ` 1` are not a stored form.
        if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
            return Err(unknown());
        }
        let id = LadderId {
            name,
            version: version.parse().map_err(|_| unknown())?,
        };
        Ladder::by_id(id).map(|_| id).ok_or_else(unknown)
    }
}

/// As one string, `name@version`, so a job or a row keeps it flat.
impl Serialize for LadderId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for LadderId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

/// A retry ladder: after the `n`-th failed attempt the wait is drawn
/// around `delays[n - 1]` (the last delay for ever after, where the limit
/// is an age), until the limit ends the delivery. Built-ins are the
/// constants below; [`Ladder::new`] checks a custom one (a test's short
/// ladder), so every ladder has at least one delay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ladder {
    id: LadderId,
    delays: Cow<'static, [Duration]>,
    jitter: JitterMode,
    limit: Limit,
}

/// A custom ladder is not usable as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LadderError {
    #[error("a ladder needs at least one delay")]
    NoDelays,
    #[error("delays must be at least 1 ms, whole milliseconds and under 10 years")]
    BadDelay,
    #[error("a symmetric jitter is at most ±100 %")]
    SpreadAbove100,
    #[error("a ladder allows at least one attempt, or a positive age")]
    EmptyLimit,
}

const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

const MINUTE: u64 = 60;
const HOUR: u64 = 3600;

/// DESIGN.md §2: 1 s, 5 s, 30 s, 2 min, 10 min, then 1 h, each ±20 %;
/// give up 72 h after creation. The same values as
/// [`crate::delivery::RetryPolicy::production`].
pub static MOTOR_V1: Ladder = Ladder {
    id: LadderId {
        name: LadderName::Motor,
        version: 1,
    },
    delays: Cow::Borrowed(&[
        secs(1),
        secs(5),
        secs(30),
        secs(2 * MINUTE),
        secs(10 * MINUTE),
        secs(HOUR),
    ]),
    jitter: JitterMode::Symmetric { percent: 20 },
    limit: Limit::MaxAge(secs(72 * HOUR)),
};

/// Seed 001: "Los errores se reintentan después de 1 minuto, 5 minutos, 30
/// minutos, 2 horas, 8 horas y 24 horas: siete intentos en total." The
/// seed names exact delays, so they are not drawn (±0 %).
pub static VISITO_V1: Ladder = Ladder {
    id: LadderId {
        name: LadderName::Visito,
        version: 1,
    },
    delays: Cow::Borrowed(&[
        secs(MINUTE),
        secs(5 * MINUTE),
        secs(30 * MINUTE),
        secs(2 * HOUR),
        secs(8 * HOUR),
        secs(24 * HOUR),
    ]),
    jitter: JitterMode::Symmetric { percent: 0 },
    limit: Limit::MaxAttempts(7),
};

/// Seed 003: "La escalera es de siete intentos repartidos en unas diez
/// horas", each delay drawn "entre la mitad y el total del valor nominal".
/// The seed's table did not survive; Motor's choice (docs/CONTRACTS.md):
/// 1 min, 4 min, 25 min, 1 h 30 min, 3 h, 5 h — exactly 10 h nominal, so
/// the seventh attempt comes 5 to 10 h after the first.
pub static ASIXTO_V1: Ladder = Ladder {
    id: LadderId {
        name: LadderName::Asixto,
        version: 1,
    },
    delays: Cow::Borrowed(&[
        secs(MINUTE),
        secs(4 * MINUTE),
        secs(25 * MINUTE),
        secs(90 * MINUTE),
        secs(3 * HOUR),
        secs(5 * HOUR),
    ]),
    jitter: JitterMode::HalfToFull,
    limit: Limit::MaxAttempts(7),
};

/// What follows a retryable failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextAttempt {
    /// Try again at `due_at` = now + `wait`.
    Retry { wait: Duration, due_at: Timestamp },
    /// The ladder is spent: the delivery ends `fallida` (`<code>_agotada`).
    Exhausted,
}

impl Ladder {
    /// A ladder with these values, checked. `id` names what it stands for
    /// (a test's short `visito@1`, say); only built-ins resolve by id.
    pub fn new(
        id: LadderId,
        delays: Vec<Duration>,
        jitter: JitterMode,
        limit: Limit,
    ) -> Result<Self, LadderError> {
        const TEN_YEARS: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
        if delays.is_empty() {
            return Err(LadderError::NoDelays);
        }
        let whole_ms = |d: &Duration| d.subsec_nanos().is_multiple_of(1_000_000);
        if delays
            .iter()
            .any(|d| *d < Duration::from_millis(1) || *d >= TEN_YEARS || !whole_ms(d))
        {
            return Err(LadderError::BadDelay);
        }
        if matches!(jitter, JitterMode::Symmetric { percent } if percent > 100) {
            return Err(LadderError::SpreadAbove100);
        }
        if matches!(limit, Limit::MaxAttempts(0)) || limit == Limit::MaxAge(Duration::ZERO) {
            return Err(LadderError::EmptyLimit);
        }
        Ok(Self {
            id,
            delays: Cow::Owned(delays),
            jitter,
            limit,
        })
    }

    pub fn id(&self) -> LadderId {
        self.id
    }

    /// The nominal delays, after the 1st, 2nd… failed attempt.
    pub fn delays(&self) -> &[Duration] {
        &self.delays
    }

    pub fn jitter(&self) -> JitterMode {
        self.jitter
    }

    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// Every built-in ladder, by id.
    pub const ALL: [&'static Ladder; 3] = [&MOTOR_V1, &VISITO_V1, &ASIXTO_V1];

    /// The ladder a stored id names.
    pub fn by_id(id: LadderId) -> Option<&'static Ladder> {
        Self::ALL.into_iter().find(|l| l.id == id)
    }

    /// The nominal delay after the `attempt`-th failed attempt (0 read as
    /// 1, as `decide` reads it).
    pub fn nominal(&self, attempt: u32) -> Duration {
        let step = attempt.max(1) as usize - 1;
        self.delays[step.min(self.delays.len() - 1)]
    }

    /// The drawn wait after the `attempt`-th failed attempt.
    pub fn wait(&self, attempt: u32, draw: Jitter) -> Duration {
        let nominal = self.nominal(attempt).as_millis() as u64;
        Duration::from_millis(self.jitter.draw_millis(nominal, draw))
    }

    /// The next attempt after the `attempt`-th one failed (retryably) at
    /// `now`, for a delivery started at `started_at`.
    pub fn next_due(
        &self,
        attempt: u32,
        started_at: Timestamp,
        now: Timestamp,
        draw: Jitter,
    ) -> NextAttempt {
        let spent = match self.limit {
            Limit::MaxAttempts(max) => attempt.max(1) >= max,
            Limit::MaxAge(age) => (now - started_at).to_std().is_ok_and(|a| a >= age),
        };
        if spent {
            return NextAttempt::Exhausted;
        }
        let wait = self.wait(attempt, draw);
        NextAttempt::Retry {
            wait,
            due_at: add(now, wait),
        }
    }

    /// What follows the `attempt`-th attempt of a delivery started at
    /// `started_at`, whose result came at `now`: delivered, suspended and
    /// failed as the outcome says; a retryable failure waits as the ladder
    /// draws, stretched (never shortened) by the receiver's `Retry-After`
    /// capped at `retry_after_cap`, or ends the delivery (`<code>_agotada`)
    /// when the ladder is spent. The job goes to the largest delay tier not
    /// above the wait (it is held there until its due time).
    pub fn decide(
        &self,
        started_at: Timestamp,
        now: Timestamp,
        attempt: u32,
        outcome: Outcome,
        draw: Jitter,
        retry_after_cap: Duration,
    ) -> Decision {
        match outcome {
            Outcome::Delivered => Decision::Delivered,
            Outcome::Suspend { reason, error } => Decision::Suspend { reason, error },
            Outcome::Fail { error } => Decision::Fail {
                error: LastError::new(error),
            },
            Outcome::Retry { error, retry_after } => {
                match self.next_due(attempt, started_at, now, draw) {
                    NextAttempt::Exhausted => Decision::Fail {
                        error: LastError::exhausted(error),
                    },
                    NextAttempt::Retry { wait, .. } => {
                        let wait = match retry_after {
                            Some(asked) => wait.max(ceil_millis(asked.min(retry_after_cap))),
                            None => wait,
                        };
                        Decision::Retry {
                            error,
                            next_attempt: attempt.max(1).saturating_add(1),
                            wait,
                            due_at: add(now, wait),
                            tier: Tier::for_delay(wait),
                        }
                    }
                }
            }
        }
    }

    /// A stand-in for a built-in ladder, from its one-line form (a test
    /// setting, `MOTOR_TEST_LADDERS`): `<id>=<ms>,<ms>…;<jitter>;<limit>`
    /// where jitter is `simetrica=<percent>` or `mitad_a_total` and limit
    /// is `intentos=<n>` or `edad_ms=<ms>`. For example
    /// `visito@1=300,600,1200;simetrica=0;intentos=4`.
    pub fn parse_stand_in(text: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("{text:?}: {why}");
        let (id, rest) = text
            .split_once('=')
            .ok_or_else(|| bad("expected <id>=<delays>;<jitter>;<limit>"))?;
        let id: LadderId = id.parse().map_err(|e: UnknownLadder| bad(&e.to_string()))?;
        let mut parts = rest.split(';');
        let delays = parts
            .next()
            .unwrap_or_default()
            .split(',')
            .map(|ms| ms.trim().parse::<u64>().map(Duration::from_millis))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| bad("delays are whole milliseconds, comma separated"))?;
        let jitter = match parts.next().map(|j| j.split_once('=').unwrap_or((j, ""))) {
            Some(("mitad_a_total", "")) => JitterMode::HalfToFull,
            Some(("simetrica", percent)) => JitterMode::Symmetric {
                percent: percent
                    .parse()
                    .map_err(|_| bad("simetrica=<percent 0-100>"))?,
            },
            _ => return Err(bad("jitter is simetrica=<percent> or mitad_a_total")),
        };
        let limit = match parts.next().and_then(|l| l.split_once('=')) {
            Some(("intentos", n)) => {
                Limit::MaxAttempts(n.parse().map_err(|_| bad("intentos=<n>"))?)
            }
            Some(("edad_ms", ms)) => Limit::MaxAge(Duration::from_millis(
                ms.parse().map_err(|_| bad("edad_ms=<ms>"))?,
            )),
            _ => return Err(bad("limit is intentos=<n> or edad_ms=<ms>")),
        };
        if parts.next().is_some() {
            return Err(bad("three parts: delays, jitter, limit"));
        }
        Ladder::new(id, delays, jitter, limit).map_err(|e| bad(&e.to_string()))
    }

    /// The times of every attempt of a delivery whose attempts all fail
    /// the moment they are made, the first at `first`, each wait drawn by
    /// `draw`. What a receiver that never answers 2xx sees.
    pub fn attempt_times(
        &self,
        first: Timestamp,
        mut draw: impl FnMut() -> Jitter,
    ) -> Vec<Timestamp> {
        let mut times = vec![first];
        let mut attempt = 1;
        while let NextAttempt::Retry { due_at, .. } =
            self.next_due(attempt, first, *times.last().expect("never empty"), draw())
        {
            times.push(due_at);
            attempt += 1;
        }
        times
    }
}

fn ceil_millis(d: Duration) -> Duration {
    let ms = d.as_nanos().div_ceil(1_000_000);
    Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

/// `now + wait`, saturating at the largest representable time.
fn add(now: Timestamp, wait: Duration) -> Timestamp {
    chrono::TimeDelta::from_std(wait)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
}

#[cfg(test)]
mod tests;
