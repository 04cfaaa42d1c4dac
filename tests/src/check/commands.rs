//! The commands' invariants (issue 32; docs/COMMANDS.md), judged from what
//! the producers were told (`command_accepted`, `command_cancel`), what
//! the fake provider saw (`provider_call`), the harness's kills
//! (`fault`) and the dump (`command` rows and the ledger's events that
//! cite a command). Like the delivery checks it trusts the provider's log
//! over Motor's account: a call the provider logged happened.
//!
//! - `cmd_durable`: every 202 names a command that exists, under the key
//!   it was asked with; one key, one command (a retry after a cut gets the
//!   same one).
//! - `cmd_terminal`: every command ended in exactly one terminal status,
//!   with exactly the terminal event that status has (none for
//!   `completado`); a cancel answered 200 left it `cancelado`.
//! - `cmd_ledger`: each command's events in the instance's seq order
//!   (`command.accepted` once, for sends and remote operations, before
//!   its terminal event), and commands accepted one after the other got
//!   their `command.accepted` in that order.
//! - `cmd_once`: no command reached the provider again after a call the
//!   provider did not answer "busy" (429: it did not act), each call under
//!   a claim of its own; a message went out twice only as a person's
//!   resend (a new command) of one that was `ambiguo` before the resend.
//! - `cmd_provider`: the provider's log agrees with the table: `enviado`
//!   and `completado` only after a call it acted on in time (with its
//!   message id), `fallido` at the server only after its refusal, nothing
//!   out for `cancelado` or a failure before the provider; an executor's
//!   own `ambiguo` only after a call that timed out or came late; and the
//!   sweeper's `ambiguo` (`reserva_vencida`, the lease ran out) only when
//!   a kill of an executor or of the API can explain a lease left behind.

use std::collections::{BTreeMap, HashMap};

use super::{Invariant, Verdict, Violation};
use crate::history::{History, Line, Record, Row};

/// What the sweeper writes when a lease runs out.
const LEASE_EXPIRED: &str = "reserva_vencida";
/// The sweeper passes once a second; with the machine's load, a lease's
/// end is made `ambiguo` within this much.
const SWEEP_SLACK_US: i64 = 3_000_000;

const TERMINAL: [&str; 5] = ["enviado", "completado", "fallido", "ambiguo", "cancelado"];

/// The event each terminal status appends (`completado` none).
fn terminal_event(status: &str) -> Option<&'static str> {
    match status {
        "enviado" => Some("message.sent"),
        "fallido" => Some("command.failed"),
        "ambiguo" => Some("command.ambiguous"),
        "cancelado" => Some("command.cancelled"),
        _ => None,
    }
}

const TERMINAL_EVENTS: [&str; 4] = [
    "message.sent",
    "command.failed",
    "command.ambiguous",
    "command.cancelled",
];

/// Control kinds append no `command.accepted` (their effect shows as
/// `state.changed`).
fn appends_accepted(kind: &str) -> bool {
    !matches!(
        kind,
        "reconectar" | "desconectar" | "pausar" | "reanudar" | "desvincular" | "archivar"
    )
}

#[derive(Debug, Clone)]
struct Cmd {
    id: String,
    instance_id: String,
    kind: String,
    status: String,
    error_code: Option<String>,
    stage: Option<String>,
    provider_message_id: Option<String>,
    key: Option<String>,
    claims: i32,
    updated_us: i64,
    line: Line,
}

#[derive(Debug, Clone)]
struct Accepted {
    command_id: String,
    instance_id: String,
    key: String,
    resend_of: Option<String>,
    requested_us: i64,
    t_us: i64,
    line: Line,
}

#[derive(Debug, Clone)]
struct Call {
    reserva: String,
    message: String,
    behaviour: String,
    acted: bool,
    provider_message_id: Option<String>,
    t_us: i64,
    line: Line,
}

#[derive(Debug, Clone)]
struct Ev {
    instance_id: String,
    seq: i64,
    event_type: String,
    received_us: i64,
    line: Line,
}

#[derive(Debug, Clone)]
struct Kill {
    target: String,
    start_us: i64,
    end_us: i64,
}

/// The history's commands side, indexed.
#[derive(Debug, Default)]
struct Index {
    lease_us: i64,
    commands: BTreeMap<String, Cmd>,
    accepted: Vec<Accepted>,
    cancels: Vec<(String, u16, Line)>,
    /// Per command, the provider's calls in arrival order.
    calls: BTreeMap<String, Vec<Call>>,
    /// Per command, its events in seq order.
    events: BTreeMap<String, Vec<Ev>>,
    kills: Vec<Kill>,
}

impl Index {
    fn build(history: &History) -> Self {
        let mut ix = Index::default();
        for (record, line) in &history.records {
            match record {
                Record::Meta { settings, .. } => {
                    ix.lease_us = settings.command_lease_ms as i64 * 1000;
                }
                Record::CommandAccepted {
                    command_id,
                    instance_id,
                    key,
                    resend_of,
                    requested_us,
                    t_us,
                    ..
                } => ix.accepted.push(Accepted {
                    command_id: command_id.clone(),
                    instance_id: instance_id.clone(),
                    key: key.clone(),
                    resend_of: resend_of.clone(),
                    requested_us: *requested_us,
                    t_us: *t_us,
                    line: line.clone(),
                }),
                Record::CommandCancel {
                    command_id, status, ..
                } => ix.cancels.push((command_id.clone(), *status, line.clone())),
                Record::ProviderCall {
                    command_id,
                    reserva,
                    message,
                    behaviour,
                    acted,
                    provider_message_id,
                    t_us,
                } => ix.calls.entry(command_id.clone()).or_default().push(Call {
                    reserva: reserva.clone(),
                    message: message.clone(),
                    behaviour: behaviour.clone(),
                    acted: *acted,
                    provider_message_id: provider_message_id.clone(),
                    t_us: *t_us,
                    line: line.clone(),
                }),
                Record::Fault {
                    kind,
                    target,
                    start_us,
                    end_us,
                } if kind == "kill9" => ix.kills.push(Kill {
                    target: target.clone(),
                    start_us: *start_us,
                    end_us: *end_us,
                }),
                _ => {}
            }
        }
        for (row, line) in &history.rows {
            match row {
                Row::Command {
                    id,
                    instance_id,
                    tipo,
                    status,
                    error_code,
                    stage,
                    provider_message_id,
                    idempotency_key,
                    reclamos,
                    actualizada_us,
                    ..
                } => {
                    ix.commands.insert(
                        id.clone(),
                        Cmd {
                            id: id.clone(),
                            instance_id: instance_id.clone(),
                            kind: tipo.clone(),
                            status: status.clone(),
                            error_code: error_code.clone(),
                            stage: stage.clone(),
                            provider_message_id: provider_message_id.clone(),
                            key: idempotency_key.clone(),
                            claims: *reclamos,
                            updated_us: *actualizada_us,
                            line: line.clone(),
                        },
                    );
                }
                Row::CommandEvent {
                    instance_id,
                    seq,
                    event_type,
                    command_id,
                    received_us,
                } => ix.events.entry(command_id.clone()).or_default().push(Ev {
                    instance_id: instance_id.clone(),
                    seq: *seq,
                    event_type: event_type.clone(),
                    received_us: *received_us,
                    line: line.clone(),
                }),
                _ => {}
            }
        }
        for calls in ix.calls.values_mut() {
            calls.sort_by_key(|c| c.t_us);
        }
        for events in ix.events.values_mut() {
            events.sort_by_key(|e| e.seq);
        }
        ix
    }

    fn events_of(&self, id: &str) -> &[Ev] {
        self.events.get(id).map_or(&[], Vec::as_slice)
    }

    fn calls_of(&self, id: &str) -> &[Call] {
        self.calls.get(id).map_or(&[], Vec::as_slice)
    }
}

fn violation(invariant: Invariant, at_us: i64, message: String, lines: Vec<Line>) -> Violation {
    Violation {
        invariant,
        at_us,
        message,
        lines,
    }
}

/// The five verdicts, in [`Invariant`] order.
pub fn check(history: &History) -> Vec<(Invariant, Verdict)> {
    let ix = Index::build(history);
    vec![
        (Invariant::CmdDurable, durable(&ix)),
        (Invariant::CmdTerminal, terminal(&ix)),
        (Invariant::CmdLedger, ledger(&ix)),
        (Invariant::CmdOnce, once(&ix)),
        (Invariant::CmdProvider, provider(&ix)),
    ]
}

fn durable(ix: &Index) -> Verdict {
    let mut v = Verdict::default();
    let mut by_key: HashMap<(&str, &str), &Accepted> = HashMap::new();
    for a in &ix.accepted {
        v.checked += 1;
        match ix.commands.get(&a.command_id) {
            None => v.violations.push(violation(
                Invariant::CmdDurable,
                a.t_us,
                format!(
                    "command {} was answered 202 but is not in the table",
                    a.command_id
                ),
                vec![a.line.clone()],
            )),
            Some(c) if c.key.as_deref() != Some(&a.key) || c.instance_id != a.instance_id => {
                v.violations.push(violation(
                    Invariant::CmdDurable,
                    a.t_us,
                    format!(
                        "command {} was answered 202 for key {:?} of instance {} but is stored \
                         under key {:?} of instance {}",
                        a.command_id, a.key, a.instance_id, c.key, c.instance_id
                    ),
                    vec![a.line.clone(), c.line.clone()],
                ))
            }
            Some(_) => {}
        }
        match by_key.get(&(a.instance_id.as_str(), a.key.as_str())) {
            Some(first) if first.command_id != a.command_id => v.violations.push(violation(
                Invariant::CmdDurable,
                a.t_us,
                format!(
                    "key {:?} was answered with two commands: {} and then {}",
                    a.key, first.command_id, a.command_id
                ),
                vec![first.line.clone(), a.line.clone()],
            )),
            Some(_) => {}
            None => {
                by_key.insert((a.instance_id.as_str(), a.key.as_str()), a);
            }
        }
    }
    v
}

fn terminal(ix: &Index) -> Verdict {
    let mut v = Verdict::default();
    for c in ix.commands.values() {
        v.checked += 1;
        let events = ix.events_of(&c.id);
        let ends: Vec<&Ev> = events
            .iter()
            .filter(|e| TERMINAL_EVENTS.contains(&e.event_type.as_str()))
            .collect();
        let mut lines = vec![c.line.clone()];
        lines.extend(ends.iter().map(|e| e.line.clone()));
        if !TERMINAL.contains(&c.status.as_str()) {
            v.violations.push(violation(
                Invariant::CmdTerminal,
                c.updated_us,
                format!(
                    "command {} ended the run {}, not in a terminal status",
                    c.id, c.status
                ),
                lines,
            ));
            continue;
        }
        let expected = terminal_event(&c.status);
        let agrees = match expected {
            Some(kind) => ends.len() == 1 && ends[0].event_type == kind,
            None => ends.is_empty(),
        };
        if !agrees {
            let found: Vec<&str> = ends.iter().map(|e| e.event_type.as_str()).collect();
            v.violations.push(violation(
                Invariant::CmdTerminal,
                c.updated_us,
                format!(
                    "command {} is {} but its terminal events are {found:?} (expected {})",
                    c.id,
                    c.status,
                    expected.map_or("none".to_owned(), |k| format!("one {k}"))
                ),
                lines,
            ));
            continue;
        }
        if c.status == "ambiguo" && c.stage.as_deref() != Some("frontera") {
            v.violations.push(violation(
                Invariant::CmdTerminal,
                c.updated_us,
                format!(
                    "command {} is ambiguo with stage {:?}, not frontera",
                    c.id, c.stage
                ),
                lines,
            ));
        }
    }
    for (id, status, line) in &ix.cancels {
        let Some(c) = ix.commands.get(id) else {
            continue;
        };
        v.checked += 1;
        let wrong = match status {
            200 => c.status != "cancelado",
            409 => c.status == "cancelado",
            _ => false,
        };
        if wrong {
            v.violations.push(violation(
                Invariant::CmdTerminal,
                c.updated_us,
                format!(
                    "a cancel of command {id} was answered {status} but it ended {}",
                    c.status
                ),
                vec![line.clone(), c.line.clone()],
            ));
        }
    }
    v
}

fn ledger(ix: &Index) -> Verdict {
    let mut v = Verdict::default();
    for c in ix.commands.values() {
        v.checked += 1;
        let events = ix.events_of(&c.id);
        let mut lines = vec![c.line.clone()];
        lines.extend(events.iter().map(|e| e.line.clone()));
        if let Some(e) = events.iter().find(|e| e.instance_id != c.instance_id) {
            v.violations.push(violation(
                Invariant::CmdLedger,
                e.received_us,
                format!(
                    "event seq {} of instance {} cites command {} of instance {}",
                    e.seq, e.instance_id, c.id, c.instance_id
                ),
                lines,
            ));
            continue;
        }
        let accepted: Vec<&Ev> = events
            .iter()
            .filter(|e| e.event_type == "command.accepted")
            .collect();
        let wanted = usize::from(appends_accepted(&c.kind));
        if accepted.len() != wanted {
            v.violations.push(violation(
                Invariant::CmdLedger,
                c.updated_us,
                format!(
                    "command {} ({}) has {} command.accepted in the ledger, not {wanted}",
                    c.id,
                    c.kind,
                    accepted.len()
                ),
                lines,
            ));
            continue;
        }
        // Sorted by seq: command.accepted must be the first.
        if wanted == 1 && events[0].event_type != "command.accepted" {
            v.violations.push(violation(
                Invariant::CmdLedger,
                events[0].received_us,
                format!(
                    "command {}'s {} (seq {}) comes before its command.accepted (seq {})",
                    c.id, events[0].event_type, events[0].seq, accepted[0].seq
                ),
                lines,
            ));
        }
    }
    // Commands of one instance accepted one after the other (the first's
    // 202 before the second was asked for) got their `command.accepted`
    // in that order.
    let mut per_instance: BTreeMap<&str, Vec<(&Accepted, i64)>> = BTreeMap::new();
    let mut first_answer: HashMap<&str, &Accepted> = HashMap::new();
    for a in &ix.accepted {
        first_answer
            .entry(a.command_id.as_str())
            .and_modify(|f| {
                if a.t_us < f.t_us {
                    *f = a;
                }
            })
            .or_insert(a);
    }
    for a in first_answer.values() {
        let seq = ix
            .events_of(&a.command_id)
            .iter()
            .find(|e| e.event_type == "command.accepted")
            .map(|e| e.seq);
        if let Some(seq) = seq {
            per_instance
                .entry(a.instance_id.as_str())
                .or_default()
                .push((a, seq));
        }
    }
    for list in per_instance.values_mut() {
        let mut by_answer = list.clone();
        by_answer.sort_by_key(|(a, _)| a.t_us);
        list.sort_by_key(|(a, _)| a.requested_us);
        // Walk requests in order; `before` holds the answers given
        // before each request, and the highest seq among them.
        let mut next = 0;
        let mut highest: Option<(&Accepted, i64)> = None;
        for (b, seq) in list.iter() {
            while next < by_answer.len() && by_answer[next].0.t_us < b.requested_us {
                let candidate = by_answer[next];
                if highest.is_none_or(|(_, s)| candidate.1 > s) {
                    highest = Some(candidate);
                }
                next += 1;
            }
            v.checked += 1;
            if let Some((a, a_seq)) = highest {
                if a_seq > *seq {
                    v.violations.push(violation(
                        Invariant::CmdLedger,
                        b.requested_us,
                        format!(
                            "command {} was answered 202 before command {} was asked for, but \
                             its command.accepted has seq {a_seq} > {seq}",
                            a.command_id, b.command_id
                        ),
                        vec![a.line.clone(), b.line.clone()],
                    ));
                }
            }
        }
    }
    v
}

fn once(ix: &Index) -> Verdict {
    let mut v = Verdict::default();
    for (id, calls) in &ix.calls {
        v.checked += 1;
        let Some(c) = ix.commands.get(id) else {
            v.violations.push(violation(
                Invariant::CmdOnce,
                calls[0].t_us,
                format!("the provider was called for command {id}, which does not exist"),
                vec![calls[0].line.clone()],
            ));
            continue;
        };
        for pair in calls.windows(2) {
            let (earlier, later) = (&pair[0], &pair[1]);
            if earlier.behaviour != "busy" {
                v.violations.push(violation(
                    Invariant::CmdOnce,
                    later.t_us,
                    format!(
                        "command {id} reached the provider again after a call it answered \
                         {} (acted: {})",
                        earlier.behaviour, earlier.acted
                    ),
                    vec![earlier.line.clone(), later.line.clone(), c.line.clone()],
                ));
                break;
            }
            if earlier.reserva == later.reserva {
                v.violations.push(violation(
                    Invariant::CmdOnce,
                    later.t_us,
                    format!(
                        "command {id} reached the provider twice under one claim ({})",
                        later.reserva
                    ),
                    vec![earlier.line.clone(), later.line.clone()],
                ));
                break;
            }
        }
        if calls.len() > c.claims.max(0) as usize {
            v.violations.push(violation(
                Invariant::CmdOnce,
                calls[calls.len() - 1].t_us,
                format!(
                    "command {id} reached the provider {} times but was claimed {} times",
                    calls.len(),
                    c.claims
                ),
                vec![c.line.clone()],
            ));
        }
    }
    // A resend is a person's: of a command already `ambiguo` when it was
    // asked for.
    let mut resends: HashMap<&str, &Accepted> = HashMap::new();
    for a in &ix.accepted {
        let Some(original) = &a.resend_of else {
            continue;
        };
        resends.entry(a.command_id.as_str()).or_insert(a);
        v.checked += 1;
        let ambiguous_at = ix
            .events_of(original)
            .iter()
            .find(|e| e.event_type == "command.ambiguous")
            .map(|e| e.received_us);
        let ok = ix
            .commands
            .get(original)
            .is_some_and(|o| o.status == "ambiguo")
            && ambiguous_at.is_some_and(|t| t <= a.requested_us);
        if !ok {
            let mut lines = vec![a.line.clone()];
            lines.extend(ix.commands.get(original).map(|o| o.line.clone()));
            v.violations.push(violation(
                Invariant::CmdOnce,
                a.requested_us,
                format!(
                    "command {} was sent as a resend of {original}, which was not ambiguo \
                     before it",
                    a.command_id
                ),
                lines,
            ));
        }
    }
    // Per message, the commands that made it go out: a second one only as
    // a resend of the first (or of another resend of it).
    let mut out: BTreeMap<&str, Vec<(&str, &Call)>> = BTreeMap::new();
    for (id, calls) in &ix.calls {
        for call in calls.iter().filter(|c| c.acted) {
            out.entry(call.message.as_str())
                .or_default()
                .push((id.as_str(), call));
        }
    }
    for (message, mut sends) in out {
        if sends.len() < 2 {
            continue;
        }
        v.checked += 1;
        sends.sort_by_key(|(_, call)| call.t_us);
        let first = sends[0].0;
        for (id, call) in &sends[1..] {
            // Follow the resend chain back to the first command.
            let mut at = *id;
            let mut chained = false;
            for _ in 0..16 {
                match resends.get(at).and_then(|a| a.resend_of.as_deref()) {
                    Some(original) if original == first => {
                        chained = true;
                        break;
                    }
                    Some(original) => at = original,
                    None => break,
                }
            }
            if !chained {
                v.violations.push(violation(
                    Invariant::CmdOnce,
                    call.t_us,
                    format!(
                        "message {message} went out twice (commands {first} and {id}) and {id} \
                         is no person's resend of an ambiguo {first}"
                    ),
                    vec![sends[0].1.line.clone(), call.line.clone()],
                ));
            }
        }
    }
    v
}

fn provider(ix: &Index) -> Verdict {
    let mut v = Verdict::default();
    for c in ix.commands.values() {
        v.checked += 1;
        let calls = ix.calls_of(&c.id);
        let last = calls.last();
        let acted = calls.iter().find(|call| call.acted);
        let mut lines = vec![c.line.clone()];
        lines.extend(calls.iter().map(|call| call.line.clone()));
        let complaint: Option<String> = match c.status.as_str() {
            "enviado" | "completado" => match last {
                Some(l) if l.acted && (l.behaviour == "accept" || l.behaviour == "slow") => {
                    if c.status == "enviado" && c.provider_message_id != l.provider_message_id {
                        Some(format!(
                            "is enviado with provider_message_id {:?}, but the provider answered \
                             {:?}",
                            c.provider_message_id, l.provider_message_id
                        ))
                    } else {
                        None
                    }
                }
                Some(l) => Some(format!(
                    "is {} but the provider's last call was {}",
                    c.status, l.behaviour
                )),
                None => Some(format!("is {} but never reached the provider", c.status)),
            },
            "fallido" if c.stage.as_deref() == Some("servidor") => match last {
                Some(l) if l.behaviour == "refuse" => None,
                Some(l) => Some(format!(
                    "failed at the server but the provider's last call was {}",
                    l.behaviour
                )),
                None => Some("failed at the server but never reached the provider".into()),
            },
            "fallido" | "cancelado" => acted.map(|a| {
                format!(
                    "is {} ({:?}) but the provider acted on it ({})",
                    c.status, c.error_code, a.behaviour
                )
            }),
            "ambiguo" if c.error_code.as_deref() == Some(LEASE_EXPIRED) => {
                // The sweeper ended a lease nobody reported under: only a
                // kill of an executor or of the API leaves one behind.
                let lease_end = c.updated_us;
                let explained = ix.kills.iter().any(|k| {
                    (k.target.starts_with("exec") || k.target == "api" || k.target == "all")
                        && k.start_us - SWEEP_SLACK_US <= lease_end
                        && lease_end <= k.end_us + ix.lease_us + SWEEP_SLACK_US
                });
                (!explained).then(|| {
                    format!(
                        "was made ambiguo by the sweeper ({LEASE_EXPIRED}) at {lease_end} with no \
                         kill of an executor or of the API within a lease ({} ms) before",
                        ix.lease_us / 1000
                    )
                })
            }
            "ambiguo" => match last {
                Some(l) if l.behaviour == "timeout" || l.behaviour == "late" => None,
                Some(l) => Some(format!(
                    "was reported ambiguo ({:?}) but the provider's last call was {}",
                    c.error_code, l.behaviour
                )),
                None => Some(format!(
                    "was reported ambiguo ({:?}) but never reached the provider",
                    c.error_code
                )),
            },
            _ => None,
        };
        if let Some(complaint) = complaint {
            v.violations.push(violation(
                Invariant::CmdProvider,
                c.updated_us,
                format!("command {} {complaint}", c.id),
                lines,
            ));
        }
    }
    v
}
