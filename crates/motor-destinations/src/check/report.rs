//! What a run found: one graded row per check, the answer times, and the
//! two renderings the CLI prints (a table, or the JSON the API door will
//! answer with; its field names are Spanish like the rest of the API).

use std::{fmt, time::Duration};

use serde::{Serialize, Serializer};

/// What a check requires of the answer's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// Any 2xx.
    Success,
    /// Exactly this status.
    Status(u16),
    /// Any 4xx but 408 and 429 (see the module docs).
    Refused,
    /// Anything but a 2xx: under a contract whose document names no
    /// refusal code (seeds 001 and 003: "el único acuse es un 2xx").
    Rejected,
    /// The slowest answers (p99) under this bound.
    AnswersUnder(Duration),
}

impl Expected {
    /// Whether `status` is what this check wanted.
    pub fn accepts(self, status: u16) -> bool {
        match self {
            Self::Success => (200..300).contains(&status),
            Self::Status(wanted) => status == wanted,
            Self::Refused => (400..500).contains(&status) && status != 408 && status != 429,
            Self::Rejected => !(200..300).contains(&status),
            Self::AnswersUnder(_) => false,
        }
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Success => f.write_str("2xx"),
            Self::Status(s) => write!(f, "{s}"),
            Self::Refused => f.write_str("4xx (no 408/429)"),
            Self::Rejected => f.write_str("no 2xx"),
            Self::AnswersUnder(d) => write!(f, "p99 < {} ms", d.as_millis()),
        }
    }
}

impl Serialize for Expected {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What the receiver did for one check.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Got {
    /// The HTTP status, when there was an answer.
    pub status: Option<u16>,
    /// The sanitised transport code (`timeout`, `conexion_rechazada`, …)
    /// when there was none.
    pub error: Option<String>,
    /// The effect endpoint's count for the check's event, when asked.
    #[serde(rename = "efectos")]
    pub effects: Option<u64>,
}

impl fmt::Display for Got {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.status, &self.error) {
            (Some(status), _) => write!(f, "{status}")?,
            (None, Some(error)) => f.write_str(error)?,
            (None, None) => f.write_str("-")?,
        }
        if let Some(n) = self.effects {
            write!(f, ", {n} effect{}", if n == 1 { "" } else { "s" })?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    #[serde(rename = "ok")]
    Pass,
    #[serde(rename = "falla")]
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "ok",
            Self::Fail => "falla",
        }
    }
}

/// One graded check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    #[serde(rename = "nombre")]
    pub name: &'static str,
    #[serde(rename = "esperado")]
    pub expected: Expected,
    /// The effects the check required, when an effect URL was given.
    #[serde(rename = "efectos_esperados", skip_serializing_if = "Option::is_none")]
    pub expected_effects: Option<u64>,
    #[serde(rename = "obtenido")]
    pub got: Got,
    #[serde(rename = "veredicto")]
    pub verdict: Verdict,
    /// Why it failed, in a few words; `None` when it passed.
    #[serde(rename = "motivo", skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(rename = "duracion_ms", skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// The answer times of every request the battery sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Timings {
    #[serde(rename = "muestras")]
    pub samples: usize,
    pub p50_ms: u64,
    pub p99_ms: u64,
    #[serde(rename = "timeout_ms")]
    pub timeout_ms: u64,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub url: String,
    #[serde(rename = "perfil")]
    pub profile: &'static str,
    /// True when every check passed.
    #[serde(rename = "aprobado")]
    pub passed: bool,
    #[serde(rename = "comprobaciones")]
    pub checks: Vec<CheckResult>,
    #[serde(rename = "tiempos")]
    pub timings: Timings,
}

impl Report {
    pub fn failures(&self) -> impl Iterator<Item = &CheckResult> {
        self.checks.iter().filter(|c| c.verdict == Verdict::Fail)
    }

    /// The table the CLI prints: check, expected, got, verdict, and why
    /// when a check failed.
    pub fn table(&self) -> String {
        let expected: Vec<String> = self.checks.iter().map(expected_cell).collect();
        let got: Vec<String> = self
            .checks
            .iter()
            .map(|c| match c.expected {
                Expected::AnswersUnder(_) => format!("p99 {} ms", self.timings.p99_ms),
                _ => c.got.to_string(),
            })
            .collect();
        let width = |title: &str, cells: &mut dyn Iterator<Item = usize>| {
            cells.fold(title.chars().count(), usize::max)
        };
        let w0 = width("check", &mut self.checks.iter().map(|c| c.name.len()));
        let w1 = width("expected", &mut expected.iter().map(|e| e.chars().count()));
        let w2 = width("got", &mut got.iter().map(|g| g.chars().count()));
        let mut out = format!(
            "{:w0$}  {:w1$}  {:w2$}  verdict\n",
            "check", "expected", "got"
        );
        for ((check, expected), got) in self.checks.iter().zip(&expected).zip(&got) {
            let line = format!(
                "{:w0$}  {:w1$}  {:w2$}  {}",
                check.name,
                expected,
                got,
                check.verdict.as_str()
            );
            out.push_str(line.trim_end());
            if let Some(reason) = &check.reason {
                out.push_str(&format!("  ({reason})"));
            }
            out.push('\n');
        }
        let failed = self.failures().count();
        out.push_str(&format!(
            "{} of {} checks passed ({} {}, p50 {} ms, p99 {} ms)\n",
            self.checks.len() - failed,
            self.checks.len(),
            self.url,
            self.profile,
            self.timings.p50_ms,
            self.timings.p99_ms,
        ));
        out
    }
}

fn expected_cell(check: &CheckResult) -> String {
    match check.expected_effects {
        Some(n) => format!(
            "{}, {n} effect{}",
            check.expected,
            if n == 1 { "" } else { "s" }
        ),
        None => check.expected.to_string(),
    }
}

/// The nearest-rank percentile `p` (0–100) of `samples`, in ms; 0 for none.
pub(crate) fn percentile_ms(samples: &[Duration], p: usize) -> u64 {
    if samples.is_empty() {
        return 0;
    }
    let mut sorted = samples.to_vec();
    sorted.sort();
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1].as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expectations_grade_statuses() {
        assert!(Expected::Success.accepts(204));
        assert!(!Expected::Success.accepts(301));
        assert!(Expected::Status(408).accepts(408));
        assert!(!Expected::Status(408).accepts(401));
        for refused in [400, 401, 403, 422] {
            assert!(Expected::Refused.accepts(refused), "{refused}");
        }
        for not in [200, 204, 302, 408, 429, 500] {
            assert!(!Expected::Refused.accepts(not), "{not}");
        }
    }

    #[test]
    fn nearest_rank_percentiles() {
        let ms = |v: &[u64]| {
            v.iter()
                .map(|&m| Duration::from_millis(m))
                .collect::<Vec<_>>()
        };
        let samples = ms(&[5, 1, 3, 2, 4, 100, 6, 7, 8, 9]);
        assert_eq!(percentile_ms(&samples, 50), 5);
        assert_eq!(percentile_ms(&samples, 99), 100);
        assert_eq!(percentile_ms(&ms(&[7]), 50), 7);
        assert_eq!(percentile_ms(&[], 99), 0);
    }
}
