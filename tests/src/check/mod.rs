//! The invariant checker: reads a [`History`] and judges it against
//! DESIGN.md's invariants, using only what the history holds (what the
//! producers were told, what the receivers saw, the harness's actions and
//! the dump of Motor's tables). It never trusts Motor's own account where
//! a receiver's is available: a request's interval at the receiver lies
//! inside Motor's attempt, so an overlap the receivers saw is an overlap
//! Motor made.
//!
//! Neighbours: `model` indexes the history; `delivery`, `timing` and
//! `transport` hold the delivery checks, `commands` the commands' (which
//! index the history on their own).

mod commands;
mod contracts;
mod delivery;
mod model;
mod timing;
mod transport;

use std::{collections::BTreeMap, fmt};

pub use model::Model;

use crate::history::{History, Line};

/// The invariants the checker judges, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    /// Every event a producer was told about is in the ledger with its
    /// seq; seqs per instance are 1..n with no gap.
    Durable,
    /// Every (event, subscription) has its delivery, and it is terminal
    /// or pending on a paused/suspended subscription; `entregada` only
    /// after the receiver said 2xx.
    NoLoss,
    /// Ordered lanes: no first attempt before every lower-seq delivery of
    /// its lane was terminal.
    LaneOrder,
    /// A receiver sees an event again only as a retry of the same
    /// delivery id, a replay or another subscription; nothing after a
    /// delivery was recorded `entregada`.
    Duplicates,
    /// Never two concurrent attempts of one delivery.
    Concurrency,
    /// At most N requests in flight per unordered subscription per process.
    InFlight,
    /// No retry before its due time.
    RetryNotEarly,
    /// No retry later than its due time plus a bounded slack (plus the
    /// disruptions the history records).
    RetryNotLate,
    /// A retryable failure past the horizon ends `fallida` with
    /// `<code>_agotada`, and none ends so before it.
    Exhaustion,
    /// Every request carried signatures that verified.
    Signatures,
    /// A `cancelada` delivery (a contract that cancels on deactivation)
    /// is an accepted end, not a loss; after its cancel committed, its
    /// receiver sees at most the one request that was in flight, arriving
    /// within an attempt's timeout of the cancel.
    Cancel,
    /// Every command answered 202 exists under its key; one key, one
    /// command.
    CmdDurable,
    /// Every command ended in one terminal status with exactly that
    /// status's terminal event.
    CmdTerminal,
    /// A command's events in the ledger in the order of its transitions,
    /// and commands accepted one after the other in that order.
    CmdLedger,
    /// No command reached the provider twice (but after a "busy"), and a
    /// message went out twice only as a person's resend of an `ambiguo`
    /// one.
    CmdOnce,
    /// The fake provider's log agrees with each command's end.
    CmdProvider,
    /// Visito and Asixto requests carry their contract's identity: Visito
    /// the event's `eventId` in body and header on every request of a
    /// delivery and of a manual retry; Asixto one `id` per delivery, a
    /// replay a new one with `replay_of` the first (`contracts`).
    ContractIdentity,
}

impl Invariant {
    pub const ALL: [Invariant; 17] = [
        Invariant::Durable,
        Invariant::NoLoss,
        Invariant::LaneOrder,
        Invariant::Duplicates,
        Invariant::Concurrency,
        Invariant::InFlight,
        Invariant::RetryNotEarly,
        Invariant::RetryNotLate,
        Invariant::Exhaustion,
        Invariant::Signatures,
        Invariant::Cancel,
        Invariant::CmdDurable,
        Invariant::CmdTerminal,
        Invariant::CmdLedger,
        Invariant::CmdOnce,
        Invariant::CmdProvider,
        Invariant::ContractIdentity,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Invariant::Durable => "durable",
            Invariant::NoLoss => "no_loss",
            Invariant::LaneOrder => "lane_order",
            Invariant::Duplicates => "duplicates",
            Invariant::Concurrency => "concurrency",
            Invariant::InFlight => "in_flight",
            Invariant::RetryNotEarly => "retry_not_early",
            Invariant::RetryNotLate => "retry_not_late",
            Invariant::Exhaustion => "exhaustion",
            Invariant::Signatures => "signatures",
            Invariant::Cancel => "cancel",
            Invariant::CmdDurable => "cmd_durable",
            Invariant::CmdTerminal => "cmd_terminal",
            Invariant::CmdLedger => "cmd_ledger",
            Invariant::CmdOnce => "cmd_once",
            Invariant::CmdProvider => "cmd_provider",
            Invariant::ContractIdentity => "contract_identity",
        }
    }
}

/// One broken invariant, with the history lines that show it.
#[derive(Debug, Clone)]
pub struct Violation {
    pub invariant: Invariant,
    /// When it happened (unix µs), to name the first one.
    pub at_us: i64,
    pub message: String,
    pub lines: Vec<Line>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "[{}] {}", self.invariant.name(), self.message)?;
        for line in &self.lines {
            writeln!(f, "    {line}")?;
        }
        Ok(())
    }
}

/// What one check looked at and what it found.
#[derive(Debug, Default, Clone)]
pub struct Verdict {
    /// Cases examined (a check that examined nothing proves nothing; the
    /// report shows it as `n/a`).
    pub checked: usize,
    pub violations: Vec<Violation>,
}

/// The checker's answer for one history.
#[derive(Debug, Default, Clone)]
pub struct Report {
    pub scenario: String,
    pub verdicts: BTreeMap<Invariant, Verdict>,
    /// Facts worth printing that judge nothing (counts, unattributed
    /// requests, unrecorded attempts).
    pub notes: Vec<String>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.verdicts.values().all(|v| v.violations.is_empty())
    }

    pub fn violations(&self, invariant: Invariant) -> &[Violation] {
        self.verdicts
            .get(&invariant)
            .map_or(&[], |v| v.violations.as_slice())
    }

    /// The earliest violation of all.
    pub fn first(&self) -> Option<&Violation> {
        self.verdicts
            .values()
            .flat_map(|v| &v.violations)
            .min_by_key(|v| v.at_us)
    }

    /// `ok`, `FAIL(n)` or `n/a` for one invariant (the summary table).
    pub fn cell(&self, invariant: Invariant) -> String {
        match self.verdicts.get(&invariant) {
            Some(v) if !v.violations.is_empty() => format!("FAIL({})", v.violations.len()),
            Some(v) if v.checked > 0 => "ok".into(),
            _ => "n/a".into(),
        }
    }

    fn add(&mut self, invariant: Invariant, verdict: Verdict) {
        let entry = self.verdicts.entry(invariant).or_default();
        entry.checked += verdict.checked;
        entry.violations.extend(verdict.violations);
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "scenario {}", self.scenario)?;
        for note in &self.notes {
            writeln!(f, "  note: {note}")?;
        }
        for invariant in Invariant::ALL {
            let v = self.verdicts.get(&invariant).cloned().unwrap_or_default();
            writeln!(
                f,
                "  {:<16} {:<10} checked {:>7}, violations {}",
                invariant.name(),
                self.cell(invariant),
                v.checked,
                v.violations.len()
            )?;
        }
        match self.first() {
            None => writeln!(f, "PASS"),
            Some(first) => {
                writeln!(f, "FAIL; the first violation:")?;
                write!(f, "{first}")?;
                // Up to two more of each violated invariant, so every
                // failing column shows an example.
                for invariant in Invariant::ALL {
                    let others = self
                        .violations(invariant)
                        .iter()
                        .filter(|v| !std::ptr::eq(*v, first));
                    for v in others.take(2) {
                        write!(f, "also {v}")?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// Judges `history`. An unreadable or inconsistent history (no meta line)
/// is an error, not a pass.
pub fn check(history: &History) -> anyhow::Result<Report> {
    let model = Model::build(history)?;
    let mut report = Report {
        scenario: model.scenario.clone(),
        ..Report::default()
    };
    report.notes = model.notes();
    report.add(Invariant::Durable, delivery::durable(&model));
    report.add(Invariant::NoLoss, delivery::no_loss(&model));
    report.add(Invariant::LaneOrder, timing::lane_order(&model));
    report.add(Invariant::Duplicates, delivery::duplicates(&model));
    report.add(Invariant::Concurrency, transport::concurrency(&model));
    report.add(Invariant::InFlight, transport::in_flight(&model));
    let (early, late) = timing::retries(&model);
    report.add(Invariant::RetryNotEarly, early);
    report.add(Invariant::RetryNotLate, late);
    report.add(Invariant::Exhaustion, timing::exhaustion(&model));
    report.add(Invariant::Signatures, transport::signatures(&model));
    report.add(Invariant::Cancel, delivery::cancel(&model));
    for (invariant, verdict) in commands::check(history) {
        report.add(invariant, verdict);
    }
    report.add(Invariant::ContractIdentity, contracts::identity(&model));
    Ok(report)
}
