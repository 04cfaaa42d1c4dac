//! A phase's result: one line for people and one `BENCH_JSON {...}` line
//! for `scripts/bench` (docs/BENCHMARKS.md, "Quick runs", lists its keys).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::{
    common::percentile,
    load::Posted,
    meter::{load_average, Spent, GROUPS},
    receiver::{Arrival, Delivered},
    report::thousands,
};

/// A delivery later than this, commit -> receiver, is late (the p99
/// target of issue 38).
const LATE_MS: f64 = 50.0;

pub struct Outcome {
    pub phase: &'static str,
    pub posted: Posted,
    pub delivered: Delivered,
    pub spent: Spent,
    /// A fixed-rate phase: the rate asked (delivered/s is then arrivals
    /// per second from the first to the last).
    pub asked: Option<f64>,
    /// Added to the last arrival of a closed loop: the time the receiver
    /// takes to answer (the slow phase's 500 ms), so the rate counts
    /// deliveries done, not requests received.
    pub answer_ms: f64,
    /// Numbers of this phase only (name, value), printed and in the JSON.
    pub extras: Vec<(&'static str, f64)>,
    /// Sentences printed under the line.
    pub notes: Vec<String>,
}

impl Outcome {
    /// Delivered events per second: from the first POST to the last
    /// arrival (closed loops; plus [`Self::answer_ms`]), or from the first arrival to the last
    /// (fixed rates: a steady latency does not count against the rate).
    pub fn delivered_per_s(&self) -> f64 {
        let d = &self.delivered;
        let n = d.arrivals.len() as f64;
        match self.asked {
            Some(_) if n > 1.0 => (n - 1.0) * 1000.0 / (d.last_ms() - d.first_ms()),
            Some(_) => f64::NAN,
            None => n * 1000.0 / (d.last_ms() + self.answer_ms - self.posted.started_ms),
        }
    }

    /// µs of CPU per delivered event by [`GROUPS`].
    fn per_event(&self) -> [f64; 5] {
        let n = self.delivered.arrivals.len().max(1) as f64;
        self.spent.seconds.map(|s| s * 1e6 / n)
    }

    pub fn print(&self) {
        let (p50, p99, max) = spread(&self.delivered);
        let per = self.per_event();
        let motor_side = per[0] + per[1] + per[2];
        let rate = match self.asked {
            Some(asked) => format!(
                "{} of {}/s delivered (sent {}/s)",
                thousands(self.delivered_per_s()),
                thousands(asked),
                thousands(self.posted.requests_per_s())
            ),
            None => format!("{} delivered/s", thousands(self.delivered_per_s())),
        };
        println!(
            "{}: {} deliveries, {rate}; commit -> receiver p50 {p50:.1} ms, p99 {p99:.1} ms, \
             max {max:.1} ms; CPU per delivered event: motor {:.0} µs, postgres {:.0}, \
             broker {:.0} (together {motor_side:.0}), load generator {:.0}, receiver {:.0}; \
             {:.2} cores busy; load average {}",
            self.phase,
            thousands(self.delivered.arrivals.len() as f64),
            per[0],
            per[1],
            per[2],
            per[3],
            per[4],
            self.spent.total() / self.spent.wall,
            load_average(),
        );
        for (name, value) in &self.extras {
            println!("  {name}: {}", number(*value));
        }
        for note in &self.notes {
            println!("  {note}");
        }
        if let Some(late) = self
            .asked
            .and_then(|_| late_windows(&self.delivered.arrivals))
        {
            println!("  {late}");
        }
        if self.posted.errors > 0 {
            println!(
                "  ! {} POSTs failed; first: {}",
                self.posted.errors,
                self.posted.first_error.as_deref().unwrap_or("")
            );
        }
        if !self.delivered.missing.is_empty() {
            println!(
                "  ! INCOMPLETE: {} of {} deliveries missing",
                self.delivered.missing.len(),
                self.delivered.missing.len() + self.delivered.arrivals.len()
            );
        }
        if self.delivered.duplicates > 0 {
            println!("  ({} duplicate arrivals)", self.delivered.duplicates);
        }

        let mut fields = Map::new();
        let mut put = |k: &str, v: Value| {
            fields.insert(k.to_owned(), v);
        };
        put("bench", "shapes".into());
        put("phase", self.phase.into());
        put("deliveries", self.delivered.arrivals.len().into());
        put("missing", self.delivered.missing.len().into());
        put("post_errors", self.posted.errors.into());
        put("delivered_per_s", round(self.delivered_per_s()));
        put("p50_ms", round(p50));
        put("p99_ms", round(p99));
        put("max_ms", round(max));
        put("cpu_us_per_event", round(motor_side));
        for (group, us) in GROUPS.iter().zip(per) {
            put(&format!("cpu_us_{group}"), round(us));
        }
        for (name, value) in &self.extras {
            put(name, round(*value));
        }
        put("cores_busy", round(self.spent.total() / self.spent.wall));
        put("load_average", load_average().into());
        println!("BENCH_JSON {}", Value::Object(fields));
    }
}

/// A fixed-rate phase's warm-up, not counted in its numbers: one line for
/// people (no JSON), so Motor's start under the phase's load stays in
/// sight.
pub fn print_warm_up(phase: &str, seconds: f64, delivered: &Delivered) {
    let (p50, p99, max) = spread(delivered);
    println!(
        "{phase} warm-up ({seconds} s at the phase's rate, not counted): {} deliveries; \
         commit -> receiver p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms",
        thousands(delivered.arrivals.len() as f64),
    );
    if let Some(late) = late_windows(&delivered.arrivals) {
        println!("  {late}");
    }
}

/// Commit -> receiver p50, p99 and max, in ms.
fn spread(delivered: &Delivered) -> (f64, f64, f64) {
    let ms = delivered.latencies();
    (
        percentile(&ms, 0.5),
        percentile(&ms, 0.99),
        ms.last().copied().unwrap_or(f64::NAN),
    )
}

/// Deliveries later than [`LATE_MS`] by the tenth of a second of their
/// commit since the first: "late (> 50 ms) by 100 ms of commit: 0.0 s 18
/// (max 75.6 ms), …", which tells one stall from a steady tail.
fn late_windows(arrivals: &[Arrival]) -> Option<String> {
    let first = arrivals
        .iter()
        .map(|a| a.received_at_ms)
        .fold(f64::INFINITY, f64::min);
    let mut windows = BTreeMap::<u64, (usize, f64)>::new();
    for a in arrivals {
        let ms = a.at_ms - a.received_at_ms;
        if ms > LATE_MS {
            let (n, max) = windows
                .entry(((a.received_at_ms - first) / 100.0) as u64)
                .or_default();
            *n += 1;
            *max = max.max(ms);
        }
    }
    if windows.is_empty() {
        return None;
    }
    let list: Vec<String> = windows
        .iter()
        .map(|(tenth, (n, max))| {
            let at = *tenth as f64 / 10.0;
            format!("{at:.1} s {n} (max {max:.1} ms)")
        })
        .collect();
    Some(format!(
        "late (> {LATE_MS} ms) by 100 ms of commit: {}",
        list.join(", ")
    ))
}

fn round(v: f64) -> Value {
    if v.is_finite() {
        json!((v * 10.0).round() / 10.0)
    } else {
        Value::Null
    }
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 {
        thousands(v)
    } else {
        format!("{v:.1}")
    }
}
