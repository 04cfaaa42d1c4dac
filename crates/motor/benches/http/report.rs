//! The results: each phase's numbers, the targets they are held against,
//! and the two markdown tables printed at the end (targets; CPU by process).

use crate::{
    common::percentile,
    cpu::{Usage, GROUPS},
    load::Posted,
    receiver::Delivered,
};

/// A fixed rate is held when the delivered rate reaches this share of the
/// rate asked, with nothing missing.
const HELD: f64 = 0.95;

/// One phase: what was posted, what reached the receiver (nothing for the
/// intake phase), and the CPU spent until it was delivered and the outbox
/// drained.
pub struct Phase {
    pub name: String,
    pub posted: Posted,
    pub delivered: Option<Delivered>,
    pub cpu: Usage,
    /// Attempts recorded while the phase ran that did not deliver (`None`:
    /// not counted, as the hot lane's bench does not).
    pub failed_attempts: Option<i64>,
}

impl Phase {
    /// Events per second from the first POST to the last arrival.
    pub fn delivered_per_s(&self) -> f64 {
        let Some(delivered) = self.delivered.as_ref().filter(|d| !d.arrivals.is_empty()) else {
            return f64::NAN;
        };
        let seconds = (delivered.last_ms() - self.posted.started_ms) / 1000.0;
        delivered.arrivals.len() as f64 / seconds
    }

    /// Arrivals per second from the first to the last: at a fixed rate, a
    /// steady latency does not count against the rate, a growing queue does.
    pub fn arrival_rate(&self) -> f64 {
        match &self.delivered {
            Some(d) if d.arrivals.len() > 1 => {
                (d.arrivals.len() - 1) as f64 * 1000.0 / (d.last_ms() - d.first_ms())
            }
            _ => f64::NAN,
        }
    }

    /// Events the phase's CPU is divided by: delivered ones, or accepted
    /// ones when nothing is delivered.
    fn events(&self) -> usize {
        match &self.delivered {
            Some(d) => d.arrivals.len(),
            None => self.posted.committed.len(),
        }
    }

    /// Commit → receiver p50 and p99 (ms).
    pub fn latency(&self) -> (f64, f64) {
        let ms = self
            .delivered
            .as_ref()
            .map(Delivered::latencies)
            .unwrap_or_default();
        (percentile(&ms, 0.5), percentile(&ms, 0.99))
    }

    /// What went wrong, if anything: POST errors, deliveries missing.
    fn trouble(&self) -> Option<String> {
        let missing = self.delivered.as_ref().map_or(0, |d| d.missing.len());
        let mut trouble = Vec::new();
        if self.posted.errors > 0 {
            trouble.push(format!("{} POSTs failed", self.posted.errors));
        }
        if missing > 0 {
            trouble.push(format!(
                "{missing} of {} not delivered",
                self.posted.committed.len()
            ));
        }
        (!trouble.is_empty()).then(|| trouble.join(", "))
    }

    /// One line as the phase ends, so a long run shows progress.
    pub fn print_progress(&self) {
        let posted = &self.posted;
        print!(
            "{}: {} events in {:.1} s of POSTs ({} requests/s, request p50 {:.1} ms, p99 {:.1} ms)",
            self.name,
            posted.committed.len(),
            posted.seconds,
            thousands(posted.requests_per_s()),
            percentile(&posted.requests_ms, 0.5),
            percentile(&posted.requests_ms, 0.99),
        );
        if self.delivered.is_some() {
            let (p50, p99) = self.latency();
            print!(
                "; delivered {}/s, commit -> receiver p50 {p50:.1} ms, p99 {p99:.1} ms",
                thousands(self.delivered_per_s())
            );
        }
        if let Some(failed) = self.failed_attempts {
            print!("; {failed} attempts failed");
        }
        println!("; CPU {:.2} cores", self.cpu.total() / self.cpu.wall);
        if let Some(trouble) = self.trouble() {
            println!("  ! {trouble}");
        }
        if let Some(e) = &posted.first_error {
            println!("  ! first POST error: {e}");
        }
        if let Some(d) = &self.delivered {
            for (hook, instance, seq) in d.missing.iter().take(5) {
                println!("  ! missing: {} instance {instance} seq {seq}", hook.path());
            }
            if d.duplicates > 0 {
                println!("  ({} duplicate arrivals)", d.duplicates);
            }
        }
    }
}

/// A row of the targets table.
pub struct Row {
    what: String,
    target: String,
    measured: String,
    met: Option<bool>,
}

impl Row {
    /// A throughput against its target (`None`: no target), in delivered
    /// events/s (accepted requests/s for intake).
    pub fn throughput(what: &str, phase: &Phase, target: Option<f64>) -> Self {
        let (p50, p99) = phase.latency();
        let measured = match &phase.delivered {
            Some(_) => format!(
                "{} delivered events/s; commit → receiver p50 {p50:.1} ms, p99 {p99:.1} ms",
                thousands(phase.delivered_per_s())
            ),
            None => format!(
                "{} requests/s (request p50 {:.1} ms, p99 {:.1} ms)",
                thousands(phase.posted.requests_per_s()),
                percentile(&phase.posted.requests_ms, 0.5),
                percentile(&phase.posted.requests_ms, 0.99),
            ),
        };
        let rate = match &phase.delivered {
            Some(_) => phase.delivered_per_s(),
            None => phase.posted.requests_per_s(),
        };
        let (target, met) = match target {
            Some(t) => (format!("≥ {}/s", thousands(t)), Some(rate >= t)),
            None => ("—".to_owned(), None),
        };
        Self::new(what, &target, measured, met, phase)
    }

    /// The healthy lanes' rate while some receivers misbehave, against the
    /// same lanes' rate when every receiver was healthy.
    pub fn bad_receivers(what: &str, phase: &Phase, healthy: f64, all_healthy: f64) -> Self {
        let cost = (1.0 - healthy / all_healthy) * 100.0;
        let measured = format!(
            "healthy lanes {} delivered events/s against {}/s when all were healthy ({:+.1} %)",
            thousands(healthy),
            thousands(all_healthy),
            -cost
        );
        Self::new(
            what,
            "healthy lanes lose < 10 %",
            measured,
            Some(cost < 10.0),
            phase,
        )
    }

    /// A fixed rate to `shape` (what it was sent to) against its latency
    /// target (`None`: no target at this rate) and, when `held`, its rate.
    pub fn fixed_rate(
        phase: &Phase,
        asked: f64,
        shape: &str,
        target: Option<(f64, f64)>,
        held: bool,
    ) -> Self {
        let (p50, p99) = phase.latency();
        let achieved = phase.arrival_rate();
        let measured = format!(
            "{} of {} events/s delivered (sent {}/s); p50 {p50:.1} ms, p99 {p99:.1} ms",
            thousands(achieved),
            thousands(asked),
            thousands(phase.posted.requests_per_s()),
        );
        let rate_ok = !held || achieved >= HELD * asked;
        let (target, met) = match target {
            Some((t50, t99)) => (
                format!(
                    "{}p50 ≤ {t50} ms, p99 ≤ {t99} ms",
                    if held { "held, " } else { "" }
                ),
                Some(rate_ok && p50 <= t50 && p99 <= t99),
            ),
            None => ("—".to_owned(), None),
        };
        let what = format!("fixed {} events/s, {shape}", thousands(asked));
        Self::new(&what, &target, measured, met, phase)
    }

    /// Idle CPU of Motor and the broker, in % of a core (target < 3 %).
    pub fn idle(usage: &Usage) -> Self {
        let share = usage.motor_and_broker() / usage.wall * 100.0;
        Self {
            what: format!("idle CPU, Motor + broker, {:.0} s", usage.wall),
            target: "< 3 % of a core".into(),
            measured: format!(
                "{share:.1} % of a core (Motor {:.1} %, broker {:.1} %)",
                usage.seconds[0] / usage.wall * 100.0,
                usage.seconds[2] / usage.wall * 100.0,
            ),
            met: Some(share < 3.0),
        }
    }

    fn new(what: &str, target: &str, measured: String, met: Option<bool>, phase: &Phase) -> Self {
        let (measured, met) = match phase.trouble() {
            Some(trouble) => (format!("{measured} — INCOMPLETE: {trouble}"), Some(false)),
            None => (measured, met),
        };
        Self {
            what: what.to_owned(),
            target: target.to_owned(),
            measured,
            met,
        }
    }
}

pub fn print_targets(rows: &[Row]) {
    println!("| measurement | target | measured | met |");
    println!("| --- | --- | --- | --- |");
    for row in rows {
        let met = match row.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "—",
        };
        println!(
            "| {} | {} | {} | {met} |",
            row.what, row.target, row.measured
        );
    }
}

/// CPU per delivered event (per accepted event for intake), by process, in
/// µs; and the cores the phase kept busy on average.
pub fn print_cpu(phases: &[Phase]) {
    println!(
        "| phase | events | {} | total µs/event | cores busy |",
        GROUPS.map(|g| format!("{g} µs/event")).join(" | ")
    );
    println!("| --- | --- |{} --- | --- |", " --- |".repeat(GROUPS.len()));
    for phase in phases {
        let events = phase.events().max(1) as f64;
        let per_event = |seconds: f64| thousands(seconds * 1e6 / events);
        println!(
            "| {} | {} | {} | {} | {:.2} |",
            phase.name,
            thousands(events),
            phase.cpu.seconds.map(per_event).join(" | "),
            per_event(phase.cpu.total()),
            phase.cpu.total() / phase.cpu.wall,
        );
    }
}

/// Context switches per delivered event (per accepted event for intake),
/// by process, under a heading: at a low rate, the wake-ups an event costs.
pub fn print_switches(phases: &[Phase]) {
    println!(
        "Context switches per delivered event (every thread), from /proc/<pid>/task/*/status:"
    );
    println!();
    println!(
        "| phase | events | {} | total switches/event |",
        GROUPS.map(|g| format!("{g} switches/event")).join(" | ")
    );
    println!("| --- | --- |{} --- |", " --- |".repeat(GROUPS.len()));
    for phase in phases {
        let events = phase.events().max(1) as f64;
        let per_event = |n: u64| format!("{:.1}", n as f64 / events);
        println!(
            "| {} | {} | {} | {} |",
            phase.name,
            thousands(events),
            phase.cpu.switches.map(per_event).join(" | "),
            per_event(phase.cpu.switches.iter().sum()),
        );
    }
}

/// `12345.6` → `12,346`.
pub fn thousands(value: f64) -> String {
    if !value.is_finite() {
        return "—".into();
    }
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 {
        out.insert(0, '-');
    }
    out
}
