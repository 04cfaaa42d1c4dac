//! The checker against doctored histories: a small history that keeps
//! every invariant passes with nothing unexamined, and each history
//! doctored the way a broken build would behave (the lane check removed,
//! a retry early or late, a loss, a concurrent attempt, an illegal
//! duplicate, more than 8 in flight, exhaustion wrong, a bad signature) is
//! caught as exactly that invariant, naming its history lines. A late
//! retry is excused only by a disruption, a subscription with no free
//! slot or one held by `Retry-After` answers.

use motor_system_tests::{
    check::{check, Invariant, Report},
    history::{Answer, History, Record, Row, Settings},
};

const T0: i64 = 1_700_000_000_000_000;
const HORIZON_MS: i64 = 5_000;
const SCHEDULE: [u64; 6] = [100, 200, 400, 800, 1600, 3200];

fn ms(t: i64) -> i64 {
    T0 + t * 1000
}

/// A history under construction.
struct Doc {
    records: Vec<Record>,
    rows: Vec<Row>,
}

impl Doc {
    fn event(&mut self, instance: &str, seq: i64) -> String {
        let event_id = format!("ev-{instance}-{seq}");
        self.records.push(Record::Produced {
            event_id: event_id.clone(),
            instance_id: instance.into(),
            seq,
            source_id: format!("src-{instance}-{seq}"),
            t_us: ms(0),
        });
        self.rows.push(Row::Event {
            instance_id: instance.into(),
            seq,
            event_id: event_id.clone(),
            received_us: ms(0),
            orden_clave: None,
        });
        event_id
    }

    fn sub(&mut self, id: &str, ordenado: bool, instance: &str) {
        self.rows.push(Row::Subscription {
            id: id.into(),
            url: format!("http://127.0.0.1:1/r/{id}"),
            ordenado,
            orden_por_clave: false,
            estado: "activa".into(),
            instancias: vec![instance.into()],
            creada_us: ms(-1000),
        });
    }

    fn delivery(
        &mut self,
        id: &str,
        sub: &str,
        instance: &str,
        seq: i64,
        end: Option<(&str, i64)>,
    ) {
        let (estado, error, at) = match end {
            Some(("entregada", at)) => ("entregada", None, at),
            Some(("cancelada", at)) => ("cancelada", None, at),
            Some((error, at)) => ("fallida", Some(error.to_owned()), at),
            None => ("pendiente", None, 0),
        };
        self.rows.push(Row::Delivery {
            id: id.into(),
            subscription_id: sub.into(),
            instance_id: instance.into(),
            event_id: format!("ev-{instance}-{seq}"),
            seq,
            lane: "live".into(),
            estado: estado.into(),
            intentos: 0,
            ultimo_status: None,
            ultimo_error: error,
            creada_us: ms(0),
            actualizada_us: ms(at),
            entregada_us: (estado == "entregada").then(|| ms(at)),
            cancelada_us: (estado == "cancelada").then(|| ms(at)),
        });
    }

    /// A request the receiver answered with `status`, `numero` the attempt
    /// Motor recorded for it (none: an attempt that was never recorded).
    #[allow(clippy::too_many_arguments)]
    fn request(
        &mut self,
        delivery: &str,
        sub: &str,
        instance: &str,
        seq: i64,
        arrived: i64,
        ended: i64,
        status: u16,
        numero: Option<i32>,
        pid: u32,
    ) {
        self.records.push(Record::Request {
            receiver: sub.into(),
            pid: Some(pid),
            conn: 1,
            delivery_id: delivery.into(),
            event_id: format!("ev-{instance}-{seq}"),
            instance_id: instance.into(),
            seq,
            key_ids: vec!["whk_1".into()],
            verified: true,
            timestamp: ms(arrived) / 1_000_000,
            arrived_us: ms(arrived),
            answering_us: None,
            ended_us: ms(ended),
            answer: Answer::Status,
            status: Some(status),
            retry_after_ms: None,
            contract: None,
        });
        if let Some(numero) = numero {
            self.rows.push(Row::Attempt {
                delivery_id: delivery.into(),
                numero,
                iniciado_us: ms(arrived - 1),
                duracion_ms: ended - arrived + 1,
                status: Some(status as i32),
                error: (status >= 300).then(|| format!("http_{status}")),
            });
        }
    }

    fn history(&self) -> History {
        History::from_parts(self.records.clone(), self.rows.clone())
    }
}

fn meta() -> Record {
    Record::Meta {
        scenario: "doctored".into(),
        started_us: ms(-2000),
        settings: Settings {
            retry_schedule_ms: SCHEDULE,
            jitter_percent: 20,
            give_up_ms: HORIZON_MS as u64,
            retry_after_cap_ms: 3_600_000,
            timeout_ms: 1000,
            unordered_in_flight: 8,
            late_slack_ms: 1000,
            recovery_ms: 5000,
            command_lease_ms: 0,
        },
    }
}

/// Instance `i`: an ordered lane of 3 (the head fails once), instance `j`:
/// an ordered lane whose only delivery fails until the horizon, instance
/// `k`: 10 deliveries of an unordered subscription, 5 at a time.
fn valid() -> Doc {
    let mut d = Doc {
        records: vec![meta()],
        rows: Vec::new(),
    };
    d.sub("ord", true, "i");
    d.sub("dead", true, "j");
    d.sub("many", false, "k");
    for seq in 1..=3 {
        d.event("i", seq);
    }
    d.event("j", 1);
    for seq in 1..=10 {
        d.event("k", seq);
    }
    // The ordered lane: d1 fails once (503), then everything is 204.
    d.delivery("d1", "ord", "i", 1, Some(("entregada", 115)));
    d.request("d1", "ord", "i", 1, 10, 12, 503, Some(1), 100);
    d.request("d1", "ord", "i", 1, 112, 114, 204, Some(2), 100);
    d.delivery("d2", "ord", "i", 2, Some(("entregada", 123)));
    d.request("d2", "ord", "i", 2, 120, 122, 204, Some(1), 100);
    d.delivery("d3", "ord", "i", 3, Some(("entregada", 133)));
    d.request("d3", "ord", "i", 3, 130, 132, 204, Some(1), 100);
    // The dead lane: 503 on the schedule until the horizon.
    let mut t = 10;
    for numero in 1.. {
        d.request("x1", "dead", "j", 1, t, t + 1, 503, Some(numero), 100);
        if t + 1 >= HORIZON_MS {
            d.delivery("x1", "dead", "j", 1, Some(("http_503_agotada", t + 2)));
            break;
        }
        t = t + 1 + SCHEDULE[(numero as usize - 1).min(5)] as i64;
    }
    // The unordered subscription: two waves of five.
    for seq in 1..=10 {
        let id = format!("u{seq}");
        let wave = if seq <= 5 { 10 } else { 60 };
        d.delivery(&id, "many", "k", seq, Some(("entregada", wave + 41)));
        d.request(&id, "many", "k", seq, wave, wave + 40, 204, Some(1), 100);
    }
    // A subscription that cancels on deactivation, paused at 50: c1 was
    // delivered, c2's request was in flight (it arrives, unrecorded), c3
    // never went out.
    d.sub("gone", false, "c");
    for seq in 1..=3 {
        d.event("c", seq);
    }
    d.delivery("c1", "gone", "c", 1, Some(("entregada", 21)));
    d.request("c1", "gone", "c", 1, 10, 20, 204, Some(1), 100);
    d.delivery("c2", "gone", "c", 2, Some(("cancelada", 50)));
    d.request("c2", "gone", "c", 2, 51, 60, 204, None, 100);
    d.delivery("c3", "gone", "c", 3, Some(("cancelada", 50)));
    d
}

fn set_arrival(d: &mut Doc, delivery: &str, nth: usize, arrived: i64, ended: i64) {
    let request = d
        .records
        .iter_mut()
        .filter(|r| matches!(r, Record::Request { delivery_id, .. } if delivery_id == delivery))
        .nth(nth)
        .expect("such a request");
    let Record::Request {
        arrived_us,
        ended_us,
        ..
    } = request
    else {
        unreachable!()
    };
    *arrived_us = ms(arrived);
    *ended_us = ms(ended);
    let attempt = d
        .rows
        .iter_mut()
        .filter(|r| matches!(r, Row::Attempt { delivery_id, .. } if delivery_id == delivery))
        .nth(nth);
    if let Some(Row::Attempt {
        iniciado_us,
        duracion_ms,
        ..
    }) = attempt
    {
        *iniciado_us = ms(arrived - 1);
        *duracion_ms = ended - arrived + 1;
    }
}

/// Asserts that `invariant`, and only it, is violated, and that the
/// report names history lines.
fn caught(doc: &Doc, invariant: Invariant) -> Report {
    let report = check(&doc.history()).unwrap();
    println!("{report}");
    assert!(!report.ok(), "the doctored history passed");
    assert!(
        !report.violations(invariant).is_empty(),
        "{} not caught",
        invariant.name()
    );
    for other in Invariant::ALL {
        if other != invariant {
            assert!(
                report.violations(other).is_empty(),
                "{} also reported",
                other.name()
            );
        }
    }
    let first = report.first().unwrap();
    assert_eq!(first.invariant, invariant);
    assert!(!first.lines.is_empty(), "the violation names its lines");
    assert!(
        first.to_string().contains(".jsonl:"),
        "lines are cited as file:line"
    );
    report
}

#[test]
fn a_valid_history_passes_and_every_check_examined_something() {
    let report = check(&valid().history()).unwrap();
    println!("{report}");
    assert!(report.ok());
    // The delivery checks (the commands' have their own history in
    // checker_commands.rs).
    for invariant in &Invariant::ALL[..10] {
        assert_eq!(report.cell(*invariant), "ok", "{}", invariant.name());
    }
}

#[test]
fn lane_check_removed() {
    // d2 starts while d1 is waiting for its retry.
    let mut d = valid();
    set_arrival(&mut d, "d2", 0, 50, 52);
    caught(&d, Invariant::LaneOrder);
}

#[test]
fn retry_early() {
    // 38 ms after a 503, where the first retry waits 80 ms at the soonest.
    let mut d = valid();
    set_arrival(&mut d, "d1", 1, 50, 52);
    caught(&d, Invariant::RetryNotEarly);
}

#[test]
fn retry_late() {
    // 3 s after a 503, where the first retry waits 120 ms at the latest
    // and the slack is 1 s.
    caught(&late_d1(), Invariant::RetryNotLate);
}

#[test]
fn loss_a_delivery_left_pending() {
    let mut d = valid();
    d.records
        .retain(|r| !matches!(r, Record::Request { delivery_id, .. } if delivery_id == "d3"));
    d.rows.retain(|r| {
        !matches!(r, Row::Attempt { delivery_id, .. } | Row::Delivery { id: delivery_id, .. } if delivery_id == "d3")
    });
    d.delivery("d3", "ord", "i", 3, None);
    caught(&d, Invariant::NoLoss);
}

#[test]
fn loss_a_delivery_never_created() {
    let mut d = valid();
    d.records
        .retain(|r| !matches!(r, Record::Request { delivery_id, .. } if delivery_id == "d3"));
    d.rows.retain(|r| {
        !matches!(r, Row::Attempt { delivery_id, .. } | Row::Delivery { id: delivery_id, .. } if delivery_id == "d3")
    });
    caught(&d, Invariant::NoLoss);
}

#[test]
fn loss_an_accepted_event_missing_from_the_ledger() {
    let mut d = valid();
    d.rows
        .retain(|r| !matches!(r, Row::Event { event_id, .. } if event_id == "ev-k-10"));
    d.rows.retain(|r| {
        !matches!(r, Row::Attempt { delivery_id, .. } | Row::Delivery { id: delivery_id, .. } if delivery_id == "u10")
    });
    d.records
        .retain(|r| !matches!(r, Record::Request { delivery_id, .. } if delivery_id == "u10"));
    caught(&d, Invariant::Durable);
}

#[test]
fn concurrent_attempt() {
    // A second, unrecorded attempt of d2 while the first is open.
    let mut d = valid();
    d.request("d2", "ord", "i", 2, 121, 122, 204, None, 200);
    caught(&d, Invariant::Concurrency);
}

#[test]
fn illegal_duplicate() {
    // The receiver gets i#2 again under a delivery id Motor never made.
    let mut d = valid();
    d.request("d2-bis", "ord", "i", 2, 125, 126, 204, None, 100);
    caught(&d, Invariant::Duplicates);
}

#[test]
fn sent_again_after_it_was_delivered() {
    let mut d = valid();
    d.request("d3", "ord", "i", 3, 500, 501, 204, None, 100);
    caught(&d, Invariant::Duplicates);
}

#[test]
fn more_than_eight_in_flight() {
    let mut d = valid();
    for seq in 6..=10 {
        set_arrival(&mut d, &format!("u{seq}"), 0, 10, 50);
    }
    caught(&d, Invariant::InFlight);
}

#[test]
fn a_request_answered_the_instant_it_arrived_is_not_left_in_flight() {
    // u9 arrives and is answered in one microsecond (its end sorts
    // before its arrival), then eight are in flight at once: allowed.
    let mut d = valid();
    for seq in 6..=8 {
        set_arrival(&mut d, &format!("u{seq}"), 0, 10, 50);
    }
    set_arrival(&mut d, "u9", 0, 5, 5);
    assert!(check(&d.history()).unwrap().ok());
    // A ninth at once is still caught.
    set_arrival(&mut d, "u10", 0, 20, 30);
    caught(&d, Invariant::InFlight);
}

#[test]
fn eight_in_flight_from_each_of_two_processes_is_allowed() {
    let mut d = valid();
    for seq in 6..=10 {
        set_arrival(&mut d, &format!("u{seq}"), 0, 10, 50);
    }
    for r in &mut d.records {
        if let Record::Request {
            delivery_id, pid, ..
        } = r
        {
            if ["u6", "u7", "u8", "u9", "u10"].contains(&delivery_id.as_str()) {
                *pid = Some(200);
            }
        }
    }
    assert!(check(&d.history()).unwrap().ok());
}

#[test]
fn exhaustion_too_early() {
    // x1 gives up after its third attempt, long before the horizon.
    let mut d = valid();
    d.records.retain(|r| {
        !matches!(r, Record::Request { delivery_id, arrived_us, .. } if delivery_id == "x1" && *arrived_us > ms(400))
    });
    d.rows.retain(|r| {
        !matches!(r, Row::Attempt { delivery_id, numero, .. } if delivery_id == "x1" && *numero > 3)
    });
    for row in &mut d.rows {
        if let Row::Delivery {
            id, actualizada_us, ..
        } = row
        {
            if id == "x1" {
                *actualizada_us = ms(320);
            }
        }
    }
    caught(&d, Invariant::Exhaustion);
}

#[test]
fn exhaustion_ignored() {
    // x1 is retried once more after failing past its horizon.
    let mut d = valid();
    let last = d
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Request {
                delivery_id,
                ended_us,
                ..
            } if delivery_id == "x1" => Some(*ended_us),
            _ => None,
        })
        .max()
        .unwrap();
    let at = (last - T0) / 1000 + 3200;
    d.request("x1", "dead", "j", 1, at, at + 1, 204, Some(8), 100);
    for row in &mut d.rows {
        if let Row::Delivery {
            id,
            estado,
            ultimo_error,
            actualizada_us,
            entregada_us,
            ..
        } = row
        {
            if id == "x1" {
                *estado = "entregada".into();
                *ultimo_error = None;
                *actualizada_us = ms(at + 2);
                *entregada_us = Some(ms(at + 2));
            }
        }
    }
    caught(&d, Invariant::Exhaustion);
}

#[test]
fn a_signature_that_does_not_verify() {
    let mut d = valid();
    if let Some(Record::Request { verified, .. }) = d
        .records
        .iter_mut()
        .find(|r| matches!(r, Record::Request { .. }))
    {
        *verified = false;
    }
    caught(&d, Invariant::Signatures);
}

#[test]
fn the_binary_reads_a_directory_and_exits_non_zero_on_a_violation() {
    let dir = std::env::temp_dir().join(format!("motor-check-{}", std::process::id()));
    let good = dir.join("good");
    let bad = dir.join("bad");
    valid().history().write(&good).unwrap();
    let mut d = valid();
    set_arrival(&mut d, "d2", 0, 50, 52);
    d.history().write(&bad).unwrap();
    let run = |path: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_motor-check"))
            .arg(path)
            .output()
            .unwrap()
    };
    let ok = run(&good);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    let failed = run(&bad);
    let out = String::from_utf8_lossy(&failed.stdout);
    assert_eq!(failed.status.code(), Some(1), "{out}");
    assert!(
        out.contains("[lane_order]") && out.contains("history.jsonl:"),
        "{out}"
    );
    let missing = run(&dir.join("nothing-here"));
    assert_eq!(missing.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// d1's retry 3 s late (as in `retry_late`).
fn late_d1() -> Doc {
    let mut d = valid();
    for (i, id) in ["d1", "d2", "d3"].iter().enumerate() {
        let at = 3012 + 10 * i as i64;
        set_arrival(&mut d, id, if *id == "d1" { 1 } else { 0 }, at, at + 2);
    }
    for row in &mut d.rows {
        if let Row::Delivery {
            id,
            actualizada_us,
            entregada_us,
            ..
        } = row
        {
            if ["d1", "d2", "d3"].contains(&id.as_str()) {
                *entregada_us = Some(ms(3100));
                *actualizada_us = ms(3100);
            }
        }
    }
    d
}

#[test]
fn a_late_retry_is_excused_only_by_a_disruption_and_its_recovery() {
    // A fault while the retry waited: excused.
    let mut d = late_d1();
    d.records.push(Record::Fault {
        kind: "kill9".into(),
        target: "dispatch".into(),
        start_us: ms(50),
        end_us: ms(100),
    });
    assert!(check(&d.history()).unwrap().ok());
    // One whose recovery ended before the attempt failed: not excused.
    let mut d = late_d1();
    d.records.push(Record::Fault {
        kind: "kill9".into(),
        target: "dispatch".into(),
        start_us: ms(-9000),
        end_us: ms(-8000),
    });
    caught(&d, Invariant::RetryNotLate);
}

#[test]
fn a_late_unordered_retry_is_excused_only_while_its_subscription_has_no_free_slot() {
    // u1 fails (503) at 10 ms and is retried 3 s later.
    let late = || {
        let mut d = valid();
        d.records
            .retain(|r| !matches!(r, Record::Request { delivery_id, .. } if delivery_id == "u1"));
        d.rows
            .retain(|r| !matches!(r, Row::Attempt { delivery_id, .. } if delivery_id == "u1"));
        d.request("u1", "many", "k", 1, 10, 11, 503, Some(1), 100);
        d.request("u1", "many", "k", 1, 3000, 3001, 204, Some(2), 100);
        for row in &mut d.rows {
            if let Row::Delivery {
                id,
                actualizada_us,
                entregada_us,
                ..
            } = row
            {
                if id == "u1" {
                    *entregada_us = Some(ms(3002));
                    *actualizada_us = ms(3002);
                }
            }
        }
        d
    };
    caught(&late(), Invariant::RetryNotLate);
    // Eight slow requests of that process held every slot meanwhile.
    let mut d = late();
    for seq in 2..=9 {
        set_arrival(&mut d, &format!("u{seq}"), 0, 100, 2990);
    }
    for row in &mut d.rows {
        if let Row::Delivery {
            id,
            actualizada_us,
            entregada_us,
            ..
        } = row
        {
            if id.starts_with('u') && id != "u1" {
                *entregada_us = Some(ms(2995));
                *actualizada_us = ms(2995);
            }
        }
    }
    let report = check(&d.history()).unwrap();
    assert!(report.ok(), "{report}");
}

/// `late_d1`, with a second instance `h` on d1's subscription whose one
/// delivery is answered 429 with `Retry-After` at each of `holds` (the
/// request's arrival and end in ms, and the wait asked for), then 204 at
/// `delivered`: each answer holds the whole subscription.
fn late_d1_with_holds(holds: &[(i64, i64, u64)], delivered: i64) -> Doc {
    let mut d = late_d1();
    for row in &mut d.rows {
        if let Row::Subscription { id, instancias, .. } = row {
            if id == "ord" {
                instancias.push("h".into());
            }
        }
    }
    d.event("h", 1);
    d.delivery("h1", "ord", "h", 1, Some(("entregada", delivered + 3)));
    for (n, (arrived, ended, wait)) in holds.iter().enumerate() {
        d.request(
            "h1",
            "ord",
            "h",
            1,
            *arrived,
            *ended,
            429,
            Some(n as i32 + 1),
            100,
        );
        if let Some(Record::Request { retry_after_ms, .. }) = d.records.last_mut() {
            *retry_after_ms = Some(*wait);
        }
    }
    let numero = holds.len() as i32 + 1;
    d.request(
        "h1",
        "ord",
        "h",
        1,
        delivered,
        delivered + 2,
        204,
        Some(numero),
        100,
    );
    d
}

#[test]
fn a_late_retry_is_excused_only_while_its_subscription_is_held() {
    // d1's retry was due by 133 ms and came at 3,012 (slack 1 s). Its
    // subscription was held by `Retry-After` answers from 130 ms to
    // 1,030 and, from a second that came within a second of the first's
    // end, to 2,400: a claim then is deferred to the hold's end.
    let d = late_d1_with_holds(&[(120, 130, 900), (1040, 1050, 1350)], 2420);
    let report = check(&d.history()).unwrap();
    assert!(report.ok(), "{report}");
    // Held only from 2,001 ms, long after the retry was due: not excused.
    let d = late_d1_with_holds(&[(2000, 2001, 900)], 2950);
    caught(&d, Invariant::RetryNotLate);
    // A hold that ended long before the next one began does not bridge
    // the gap: held 130–1,030 ms, then from 2,200 (more than a second
    // later) to 2,900.
    let d = late_d1_with_holds(&[(120, 130, 900), (2190, 2200, 700)], 2950);
    caught(&d, Invariant::RetryNotLate);
}

/// A RabbitMQ ordered lane of 3 on instance `b`: each message taken off
/// the queue (`consumed`) at `arrivals[n]` ms, each delivery recorded
/// `entregada` 5 ms after its message arrived.
fn broker_lane(arrivals: [i64; 3]) -> Doc {
    let mut d = Doc {
        records: vec![meta()],
        rows: Vec::new(),
    };
    d.rows.push(Row::Subscription {
        id: "sb".into(),
        url: "amqp://127.0.0.1:5672/?exchange=amq.topic&routing_key=rabbit".into(),
        ordenado: true,
        orden_por_clave: false,
        estado: "activa".into(),
        instancias: vec!["b".into()],
        creada_us: ms(-1000),
    });
    for (n, arrived) in arrivals.into_iter().enumerate() {
        let seq = n as i64 + 1;
        let delivery = format!("b{seq}");
        d.event("b", seq);
        d.delivery(&delivery, "sb", "b", seq, Some(("entregada", arrived + 5)));
        d.records.push(Record::Request {
            receiver: "rabbit".into(),
            pid: None,
            conn: 0,
            delivery_id: delivery.clone(),
            event_id: format!("ev-b-{seq}"),
            instance_id: "b".into(),
            seq,
            key_ids: vec!["whk_1".into()],
            verified: true,
            timestamp: ms(arrived) / 1_000_000,
            arrived_us: ms(arrived),
            answering_us: None,
            ended_us: ms(arrived),
            answer: Answer::Consumed,
            status: None,
            retry_after_ms: None,
            contract: None,
        });
        d.rows.push(Row::Attempt {
            delivery_id: delivery,
            numero: 1,
            iniciado_us: ms(arrived - 2),
            duracion_ms: 4,
            status: None,
            error: None,
        });
    }
    d
}

#[test]
fn broker_messages_are_judged_by_the_routing_key_receiver() {
    let report = check(&broker_lane([10, 20, 30]).history()).unwrap();
    println!("{report}");
    assert!(report.ok());
    assert_eq!(report.cell(Invariant::LaneOrder), "ok");
    assert_eq!(report.cell(Invariant::NoLoss), "ok");
}

#[test]
fn broker_lane_out_of_order() {
    // seq 2 was published (and taken) before seq 1 was confirmed.
    let mut d = broker_lane([10, 20, 30]);
    set_arrival(&mut d, "b2", 0, 8, 8);
    caught(&d, Invariant::LaneOrder);
}

#[test]
fn broker_message_published_again_after_it_was_recorded() {
    let mut d = broker_lane([10, 20, 30]);
    // A second copy of b3 taken 2 s after Motor recorded it entregada
    // (a consumer's own lag is allowed up to 1 s).
    let mut again = d.records.last().cloned().unwrap();
    if let Record::Request {
        arrived_us,
        ended_us,
        ..
    } = &mut again
    {
        *arrived_us = ms(2_040);
        *ended_us = ms(2_040);
    }
    d.records.push(again);
    caught(&d, Invariant::Duplicates);
}

/// Sets when the receiver began to write the `nth` answer to `delivery`
/// (and when it finished, `ended`).
fn set_answering(d: &mut Doc, delivery: &str, nth: usize, answering: i64, ended: i64) {
    let request = d
        .records
        .iter_mut()
        .filter(|r| matches!(r, Record::Request { delivery_id, .. } if delivery_id == delivery))
        .nth(nth)
        .expect("such a request");
    if let Record::Request {
        answering_us,
        ended_us,
        ..
    } = request
    {
        *answering_us = Some(ms(answering));
        *ended_us = ms(ended);
    }
}

#[test]
fn a_starved_receiver_that_noted_its_answer_late_does_not_make_a_retry_early() {
    // d1's 503 was written at 11 ms but the receiver only noted the end at
    // 60 ms; the retry at 112 ms is 101 ms after the answer (at least 80).
    let mut d = valid();
    set_answering(&mut d, "d1", 0, 11, 60);
    let report = check(&d.history()).unwrap();
    assert!(report.ok(), "{report}");
    // Written at 40 ms, the same retry is early.
    set_answering(&mut d, "d1", 0, 40, 60);
    caught(&d, Invariant::RetryNotEarly);
}

#[test]
fn a_cancelled_delivery_sent_after_its_cancel() {
    // c3 was cancelled at 50 with nothing in flight; a request of it
    // arrives at 2000, past an attempt's timeout (1 s): a new attempt.
    let mut d = valid();
    d.request("c3", "gone", "c", 3, 2000, 2001, 204, None, 100);
    caught(&d, Invariant::Cancel);
}

#[test]
fn a_cancelled_delivery_sent_twice_after_its_cancel() {
    // c2's request in flight is allowed; a second one is not, however soon.
    let mut d = valid();
    d.request("c2", "gone", "c", 2, 70, 80, 204, None, 100);
    caught(&d, Invariant::Cancel);
}

#[test]
fn a_cancelled_delivery_is_not_a_loss() {
    // c3 never went out and never will: an accepted end (the valid
    // history), where a `pendiente` one on an active subscription is not.
    let report = check(&valid().history()).unwrap();
    assert!(report.violations(Invariant::NoLoss).is_empty(), "{report}");
    let mut d = valid();
    d.rows
        .retain(|r| !matches!(r, Row::Delivery { id, .. } if id == "c3"));
    d.delivery("c3", "gone", "c", 3, None);
    caught(&d, Invariant::NoLoss);
}

/// A `clave` subscription on instance `c`: seqs 1 and 3 carry key `a`,
/// seq 2 key `b`, seq 4 none. Key `b`'s delivery overlaps key `a`'s first
/// (keys run in parallel); key `a`'s second starts after its first ended;
/// the keyless one in the instance's lane overlaps both keys.
fn keyed_lanes() -> Doc {
    let mut d = Doc {
        records: vec![meta()],
        rows: Vec::new(),
    };
    d.rows.push(Row::Subscription {
        id: "conv".into(),
        url: "http://127.0.0.1:1/r/conv".into(),
        ordenado: true,
        orden_por_clave: true,
        estado: "activa".into(),
        instancias: vec!["c".into()],
        creada_us: ms(-1000),
    });
    for (seq, key) in [(1, Some("a")), (2, Some("b")), (3, Some("a")), (4, None)] {
        d.event("c", seq);
        if let Some(Row::Event { orden_clave, .. }) = d.rows.last_mut() {
            *orden_clave = key.map(str::to_owned);
        }
    }
    let timing = [(1, 10, 30), (2, 12, 32), (3, 40, 60), (4, 11, 33)];
    for (seq, arrived, ended) in timing {
        let id = format!("c{seq}");
        d.delivery(&id, "conv", "c", seq, Some(("entregada", ended + 1)));
        d.request(&id, "conv", "c", seq, arrived, ended, 204, Some(1), 100);
    }
    for row in &mut d.rows {
        if let Row::Delivery { seq, lane, .. } = row {
            *lane = match *seq {
                1 | 3 => "live/a",
                2 => "live/b",
                _ => "live",
            }
            .into();
        }
    }
    d
}

#[test]
fn keys_of_a_keyed_subscription_run_in_parallel_each_in_order() {
    let report = check(&keyed_lanes().history()).unwrap();
    println!("{report}");
    assert!(report.ok());
}

#[test]
fn keyed_lane_out_of_order() {
    // Key `a`'s second delivery starts while its first is in flight: an
    // order violation within the key, though seq 2 (key `b`) overlaps it
    // legitimately.
    let mut d = keyed_lanes();
    set_arrival(&mut d, "c3", 0, 20, 45);
    let report = caught(&d, Invariant::LaneOrder);
    assert!(
        report.first().unwrap().to_string().contains("live/a"),
        "the key's lane is named"
    );
}

#[test]
fn keyed_delivery_in_the_instances_lane_is_caught() {
    // Motor put a keyed event of a `clave` subscription in the instance's
    // lane: the order is judged by the key's lane, and the misplacement
    // is reported.
    let mut d = keyed_lanes();
    for row in &mut d.rows {
        if let Row::Delivery { id, lane, .. } = row {
            if id == "c2" {
                *lane = "live".into();
            }
        }
    }
    caught(&d, Invariant::LaneOrder);
}
