//! The commands' checks against doctored histories: a small history of
//! the commands scenario that keeps every rule passes with each of the
//! five checks examining something, and each history doctored the way a
//! broken Motor would behave — a 202 lost, one key answered with two
//! commands, a double send, a resend of a command that was not ambiguous,
//! an event out of order, commands accepted out of order, a command left
//! open, two terminal events, `enviado` without the provider, a lease run
//! out with no kill to explain it, a message id that is not the
//! provider's — is caught as exactly that invariant, naming its lines.

use motor_system_tests::{
    check::{check, Invariant, Report},
    history::{History, Record, Row, Settings},
};

const T0: i64 = 1_700_000_000_000_000;
const INSTANCE: &str = "inst-0";
const LEASE_MS: u64 = 3_000;

fn ms(t: i64) -> i64 {
    T0 + t * 1000
}

const COMMANDS: [Invariant; 5] = [
    Invariant::CmdDurable,
    Invariant::CmdTerminal,
    Invariant::CmdLedger,
    Invariant::CmdOnce,
    Invariant::CmdProvider,
];

struct Doc {
    records: Vec<Record>,
    rows: Vec<Row>,
    seq: i64,
}

/// One command's story, for [`Doc::command`].
struct Story<'a> {
    id: &'a str,
    kind: &'a str,
    message: &'a str,
    /// (requested, answered) in ms.
    asked: (i64, i64),
    status: &'a str,
    error_code: Option<&'a str>,
    stage: Option<&'a str>,
    /// (behaviour, at ms) of each provider call.
    calls: &'a [(&'a str, i64)],
    /// The terminal event and when it was received (ms).
    end_event: Option<(&'a str, i64)>,
    resend_of: Option<&'a str>,
    updated: i64,
}

impl Doc {
    fn new() -> Self {
        Self {
            records: vec![Record::Meta {
                scenario: "commands".into(),
                started_us: T0,
                settings: Settings {
                    retry_schedule_ms: [100, 200, 400, 800, 1600, 3200],
                    jitter_percent: 20,
                    give_up_ms: 5000,
                    retry_after_cap_ms: 3_600_000,
                    timeout_ms: 1000,
                    unordered_in_flight: 8,
                    late_slack_ms: 2000,
                    recovery_ms: 5000,
                    command_lease_ms: LEASE_MS,
                },
            }],
            rows: Vec::new(),
            seq: 0,
        }
    }

    fn event(&mut self, event_type: &str, command_id: &str, at: i64) {
        self.seq += 1;
        self.rows.push(Row::Event {
            instance_id: INSTANCE.into(),
            seq: self.seq,
            event_id: format!("ev-{}", self.seq),
            received_us: ms(at),
            orden_clave: None,
        });
        self.rows.push(Row::CommandEvent {
            instance_id: INSTANCE.into(),
            seq: self.seq,
            event_type: event_type.into(),
            command_id: command_id.into(),
            received_us: ms(at),
        });
    }

    fn command(&mut self, s: Story<'_>) {
        let key = format!("key-{}", s.id);
        self.records.push(Record::CommandAccepted {
            command_id: s.id.into(),
            instance_id: INSTANCE.into(),
            key: key.clone(),
            tipo: s.kind.into(),
            message: s.message.into(),
            resend_of: s.resend_of.map(str::to_owned),
            requested_us: ms(s.asked.0),
            t_us: ms(s.asked.1),
        });
        self.event("command.accepted", s.id, s.asked.1);
        let mut pmid = None;
        for (i, (behaviour, at)) in s.calls.iter().enumerate() {
            let acted = matches!(*behaviour, "accept" | "slow" | "late");
            let id = acted.then(|| format!("wamid.{}.{i}", s.id));
            if acted {
                pmid = id.clone();
            }
            self.records.push(Record::ProviderCall {
                command_id: s.id.into(),
                reserva: format!("lease-{}-{i}", s.id),
                message: s.message.into(),
                behaviour: (*behaviour).into(),
                acted,
                provider_message_id: id,
                t_us: ms(*at),
            });
        }
        if let Some((kind, at)) = s.end_event {
            self.event(kind, s.id, at);
        }
        self.rows.push(Row::Command {
            id: s.id.into(),
            instance_id: INSTANCE.into(),
            tipo: s.kind.into(),
            status: s.status.into(),
            error_code: s.error_code.map(str::to_owned),
            stage: s.stage.map(str::to_owned),
            server_code: None,
            provider_message_id: (s.status == "enviado").then_some(pmid).flatten(),
            idempotency_key: Some(key),
            correlation_id: None,
            reclamos: s.calls.len().max(1) as i32,
            creada_us: ms(s.asked.0),
            actualizada_us: ms(s.updated),
        });
    }

    /// A run with every kind of end the scenario produces.
    fn valid() -> Self {
        let mut d = Doc::new();
        d.command(Story {
            id: "c1",
            kind: "mensaje",
            message: "m1",
            asked: (0, 10),
            status: "enviado",
            error_code: None,
            stage: None,
            calls: &[("accept", 50)],
            end_event: Some(("message.sent", 60)),
            resend_of: None,
            updated: 60,
        });
        d.command(Story {
            id: "c2",
            kind: "grupos",
            message: "m2",
            asked: (20, 30),
            status: "completado",
            error_code: None,
            stage: None,
            calls: &[("slow", 80)],
            end_event: None,
            resend_of: None,
            updated: 2000,
        });
        // Busy, deferred, claimed again, sent.
        d.command(Story {
            id: "c3",
            kind: "mensaje",
            message: "m3",
            asked: (40, 45),
            status: "enviado",
            error_code: None,
            stage: None,
            calls: &[("busy", 100), ("accept", 1200)],
            end_event: Some(("message.sent", 1210)),
            resend_of: None,
            updated: 1210,
        });
        // The executor was killed mid-call: the lease ran out.
        d.records.push(Record::Fault {
            kind: "kill9".into(),
            target: "exec-0".into(),
            start_us: ms(150),
            end_us: ms(1150),
        });
        d.command(Story {
            id: "c4",
            kind: "mensaje",
            message: "m4",
            asked: (60, 70),
            status: "ambiguo",
            error_code: Some("reserva_vencida"),
            stage: Some("frontera"),
            calls: &[("accept", 140)],
            end_event: Some(("command.ambiguous", 3300)),
            resend_of: None,
            updated: 3300,
        });
        // A person resent it.
        d.command(Story {
            id: "c5",
            kind: "mensaje",
            message: "m4",
            asked: (4000, 4010),
            status: "enviado",
            error_code: None,
            stage: None,
            calls: &[("accept", 4050)],
            end_event: Some(("message.sent", 4060)),
            resend_of: Some("c4"),
            updated: 4060,
        });
        // The executor gave up on the provider.
        d.command(Story {
            id: "c6",
            kind: "mensaje",
            message: "m6",
            asked: (4100, 4110),
            status: "ambiguo",
            error_code: Some("proveedor_sin_respuesta"),
            stage: Some("frontera"),
            calls: &[("timeout", 4150)],
            end_event: Some(("command.ambiguous", 4700)),
            resend_of: None,
            updated: 4700,
        });
        d.command(Story {
            id: "c7",
            kind: "mensaje",
            message: "m7",
            asked: (4200, 4210),
            status: "fallido",
            error_code: Some("rechazado"),
            stage: Some("servidor"),
            calls: &[("refuse", 4250)],
            end_event: Some(("command.failed", 4260)),
            resend_of: None,
            updated: 4260,
        });
        d.command(Story {
            id: "c8",
            kind: "mensaje",
            message: "m8",
            asked: (4300, 4310),
            status: "cancelado",
            error_code: None,
            stage: None,
            calls: &[],
            end_event: Some(("command.cancelled", 4320)),
            resend_of: None,
            updated: 4320,
        });
        d.records.push(Record::CommandCancel {
            command_id: "c8".into(),
            status: 200,
            t_us: ms(4321),
        });
        d
    }

    fn history(self) -> History {
        let mut records = self.records;
        records.push(Record::End {
            t_us: ms(10_000),
            settled: true,
        });
        History::from_parts(records, self.rows)
    }

    fn row_mut(&mut self, id: &str) -> &mut Row {
        self.rows
            .iter_mut()
            .find(|r| matches!(r, Row::Command { id: i, .. } if i == id))
            .expect("the command's row")
    }

    fn set_status(&mut self, id: &str, new: &str) {
        if let Row::Command { status, .. } = self.row_mut(id) {
            *status = new.into();
        }
    }
}

fn judge(doc: Doc) -> Report {
    check(&doc.history()).expect("a readable history")
}

/// Exactly `invariant` among the commands' checks is violated, and the
/// first violation's message contains `says`.
fn caught(doc: Doc, invariant: Invariant, says: &str) {
    let report = judge(doc);
    for other in COMMANDS {
        let found = report.violations(other);
        if other == invariant {
            assert!(!found.is_empty(), "{} not caught:\n{report}", other.name());
            let first = &found[0];
            assert!(
                first.message.contains(says),
                "{}: {:?} does not say {says:?}",
                other.name(),
                first.message
            );
            assert!(!first.lines.is_empty(), "no lines cited");
        } else {
            assert!(found.is_empty(), "{} also failed:\n{report}", other.name());
        }
    }
}

#[test]
fn a_valid_commands_history_passes_with_every_check_examining_something() {
    let report = judge(Doc::valid());
    assert!(report.ok(), "{report}");
    for invariant in COMMANDS {
        assert_eq!(
            report.cell(invariant),
            "ok",
            "{}:\n{report}",
            invariant.name()
        );
    }
}

#[test]
fn a_command_answered_202_and_missing_is_a_lost_202() {
    let mut d = Doc::valid();
    d.rows
        .retain(|r| !matches!(r, Row::Command { id, .. } if id == "c1"));
    d.rows
        .retain(|r| !matches!(r, Row::CommandEvent { command_id, .. } if command_id == "c1"));
    d.records
        .retain(|r| !matches!(r, Record::ProviderCall { command_id, .. } if command_id == "c1"));
    caught(
        d,
        Invariant::CmdDurable,
        "answered 202 but is not in the table",
    );
}

#[test]
fn one_key_answered_with_two_commands_is_caught() {
    let mut d = Doc::valid();
    d.records.push(Record::CommandAccepted {
        command_id: "c3".into(),
        instance_id: INSTANCE.into(),
        key: "key-c1".into(),
        tipo: "mensaje".into(),
        message: "m1".into(),
        resend_of: None,
        requested_us: ms(0),
        t_us: ms(5000),
    });
    let report = judge(d);
    let found = report.violations(Invariant::CmdDurable);
    assert!(
        found
            .iter()
            .any(|v| v.message.contains("answered with two commands")),
        "{report}"
    );
}

#[test]
fn a_double_send_is_caught() {
    let mut d = Doc::valid();
    d.records.push(Record::ProviderCall {
        command_id: "c1".into(),
        reserva: "lease-c1-again".into(),
        message: "m1".into(),
        behaviour: "accept".into(),
        acted: true,
        provider_message_id: Some("wamid.c1.again".into()),
        t_us: ms(70),
    });
    // Motor would have claimed it twice to do so.
    if let Row::Command { reclamos, .. } = d.row_mut("c1") {
        *reclamos = 2;
    }
    let report = judge(d);
    let found = report.violations(Invariant::CmdOnce);
    assert!(
        found.iter().any(|v| v
            .message
            .contains("reached the provider again after a call it answered accept")),
        "{report}"
    );
}

#[test]
fn a_message_out_twice_without_a_resend_is_caught() {
    let mut d = Doc::valid();
    // c5 carries c4's message but is nobody's resend.
    for r in &mut d.records {
        if let Record::CommandAccepted {
            command_id,
            resend_of,
            ..
        } = r
        {
            if command_id == "c5" {
                *resend_of = None;
            }
        }
    }
    caught(d, Invariant::CmdOnce, "went out twice");
}

#[test]
fn a_resend_of_a_command_that_was_not_ambiguous_is_caught() {
    let mut d = Doc::valid();
    // The person resent c4 before Motor said it was ambiguo.
    for r in &mut d.records {
        if let Record::CommandAccepted {
            command_id,
            requested_us,
            ..
        } = r
        {
            if command_id == "c5" {
                *requested_us = ms(3000);
            }
        }
    }
    caught(d, Invariant::CmdOnce, "which was not ambiguo before it");
}

#[test]
fn an_event_before_its_command_accepted_is_caught() {
    let mut d = Doc::valid();
    // c1's message.sent gets a seq below its command.accepted.
    for r in &mut d.rows {
        if let Row::CommandEvent {
            command_id,
            event_type,
            seq,
            ..
        } = r
        {
            if command_id == "c1" && event_type == "message.sent" {
                *seq = 0;
            }
        }
    }
    caught(d, Invariant::CmdLedger, "comes before its command.accepted");
}

#[test]
fn commands_accepted_out_of_order_are_caught() {
    let mut d = Doc::valid();
    // c3 was asked for after c2's 202, but its command.accepted sorts
    // first (seqs: c2's 3, c3's 4, swapped).
    for r in &mut d.rows {
        if let Row::CommandEvent {
            command_id,
            event_type,
            seq,
            ..
        } = r
        {
            if event_type == "command.accepted" && command_id == "c2" {
                *seq = 4;
            } else if event_type == "command.accepted" && command_id == "c3" {
                *seq = 3;
            }
        }
    }
    caught(
        d,
        Invariant::CmdLedger,
        "was answered 202 before command c3",
    );
}

#[test]
fn a_command_left_open_is_caught() {
    let mut d = Doc::valid();
    d.set_status("c2", "ejecutando");
    let report = judge(d);
    let found = report.violations(Invariant::CmdTerminal);
    assert!(
        found
            .iter()
            .any(|v| v.message.contains("not in a terminal status")),
        "{report}"
    );
}

#[test]
fn two_terminal_events_for_one_command_are_caught() {
    let mut d = Doc::valid();
    d.event("command.failed", "c1", 100);
    caught(d, Invariant::CmdTerminal, "its terminal events are");
}

#[test]
fn a_cancel_answered_200_that_did_not_cancel_is_caught() {
    let mut d = Doc::valid();
    d.records.push(Record::CommandCancel {
        command_id: "c7".into(),
        status: 200,
        t_us: ms(4215),
    });
    caught(
        d,
        Invariant::CmdTerminal,
        "was answered 200 but it ended fallido",
    );
}

#[test]
fn enviado_without_the_provider_is_caught() {
    let mut d = Doc::valid();
    d.records
        .retain(|r| !matches!(r, Record::ProviderCall { command_id, .. } if command_id == "c1"));
    caught(d, Invariant::CmdProvider, "never reached the provider");
}

#[test]
fn a_message_id_that_is_not_the_providers_is_caught() {
    let mut d = Doc::valid();
    if let Row::Command {
        provider_message_id,
        ..
    } = d.row_mut("c1")
    {
        *provider_message_id = Some("wamid.invented".into());
    }
    caught(d, Invariant::CmdProvider, "but the provider answered");
}

#[test]
fn a_lease_run_out_with_no_kill_to_explain_it_is_caught() {
    let mut d = Doc::valid();
    d.records.retain(|r| !matches!(r, Record::Fault { .. }));
    caught(
        d,
        Invariant::CmdProvider,
        "with no kill of an executor or of the API",
    );
}

#[test]
fn a_kill_long_before_the_lease_ran_out_does_not_excuse_it() {
    let mut d = Doc::valid();
    // The kill was over a minute before the sweeper acted: the lease it
    // cut would have ended long before.
    if let Row::Command { actualizada_us, .. } = d.row_mut("c4") {
        *actualizada_us = ms(70_000);
    }
    caught(d, Invariant::CmdProvider, "reserva_vencida");
}
