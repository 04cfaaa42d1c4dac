//! The checker's contract identity rules (issue 33) against doctored
//! histories: a small Visito + Asixto history that keeps every rule
//! passes, with each contract request resolved to its delivery; each
//! history doctored the way a wrong renderer would behave (a Visito retry
//! or manual retry with another `eventId`, a header that disagrees with
//! the body, an Asixto retry with another `id`, a replay that keeps the
//! first `id` or names the wrong `replay_of`, a first delivery carrying
//! `replay_of`) is caught as `contract_identity`, naming its lines.

use motor_system_tests::{
    check::{check, Invariant, Report},
    history::{Answer, ContractSeen, History, Record, Row, Settings},
};

const T0: i64 = 1_700_000_000_000_000;

fn ms(t: i64) -> i64 {
    T0 + t * 1000
}

struct Doc {
    records: Vec<Record>,
    rows: Vec<Row>,
}

fn ev(seq: i64) -> String {
    format!("ev-a-{seq}")
}

impl Doc {
    fn new() -> Self {
        let mut d = Doc {
            records: vec![Record::Meta {
                scenario: "doctored-contracts".into(),
                started_us: ms(-2000),
                settings: Settings {
                    retry_schedule_ms: [100, 200, 400, 800, 1600, 3200],
                    jitter_percent: 20,
                    give_up_ms: 60_000,
                    retry_after_cap_ms: 3_600_000,
                    timeout_ms: 1000,
                    unordered_in_flight: 8,
                    late_slack_ms: 1000,
                    recovery_ms: 5000,
                    command_lease_ms: 0,
                },
            }],
            rows: Vec::new(),
        };
        for seq in 1..=2 {
            d.records.push(Record::Produced {
                event_id: ev(seq),
                instance_id: "a".into(),
                seq,
                source_id: format!("src-{seq}"),
                t_us: ms(0),
            });
            d.rows.push(Row::Event {
                instance_id: "a".into(),
                seq,
                event_id: ev(seq),
                received_us: ms(0),
                orden_clave: None,
            });
        }
        for (id, ordenado) in [("visito", false), ("asixto", true)] {
            d.rows.push(Row::Subscription {
                id: format!("s-{id}"),
                url: format!("http://127.0.0.1:1/r/{id}"),
                ordenado,
                orden_por_clave: false,
                estado: "activa".into(),
                instancias: vec![],
                creada_us: ms(-1000),
            });
        }
        d
    }

    #[allow(clippy::too_many_arguments)]
    fn delivery(
        &mut self,
        id: &str,
        sub: &str,
        seq: i64,
        lane: &str,
        end: (&str, i64),
        created: i64,
    ) {
        let (estado, error) = match end.0 {
            "entregada" => ("entregada", None),
            error => ("fallida", Some(error.to_owned())),
        };
        self.rows.push(Row::Delivery {
            id: id.into(),
            subscription_id: format!("s-{sub}"),
            instance_id: "a".into(),
            event_id: ev(seq),
            seq,
            lane: lane.into(),
            estado: estado.into(),
            intentos: 0,
            ultimo_status: None,
            ultimo_error: error,
            creada_us: ms(created),
            actualizada_us: ms(end.1),
            entregada_us: (estado == "entregada").then(|| ms(end.1)),
            cancelada_us: None,
        });
    }

    /// A request the `receiver` answered `status` at [arrived, arrived+2],
    /// carrying `body_id` (and `replay_of`), for the event `seq`; Motor
    /// recorded it as attempt `numero` of `delivery`.
    #[allow(clippy::too_many_arguments)]
    fn request(
        &mut self,
        receiver: &str,
        delivery: &str,
        numero: i32,
        seq: i64,
        body_id: &str,
        replay_of: Option<&str>,
        arrived: i64,
        status: u16,
    ) {
        self.records.push(Record::Request {
            receiver: receiver.into(),
            pid: Some(100),
            conn: 1,
            delivery_id: String::new(),
            event_id: replay_of.unwrap_or(body_id).into(),
            instance_id: String::new(),
            seq: -1,
            key_ids: vec![],
            verified: true,
            timestamp: ms(arrived) / 1_000_000,
            arrived_us: ms(arrived),
            answering_us: None,
            ended_us: ms(arrived + 2),
            answer: Answer::Status,
            status: Some(status),
            retry_after_ms: None,
            contract: Some(ContractSeen {
                name: receiver.into(),
                body_id: body_id.into(),
                header_id: (receiver == "visito").then(|| body_id.to_owned()),
                replay_of: replay_of.map(str::to_owned),
                source: format!("src-{seq}"),
            }),
        });
        self.rows.push(Row::Attempt {
            delivery_id: delivery.into(),
            numero,
            iniciado_us: ms(arrived - 1),
            duracion_ms: 4,
            status: Some(status as i32),
            error: (status >= 300).then(|| format!("http_{status}")),
        });
    }

    fn history(&self) -> History {
        History::from_parts(self.records.clone(), self.rows.clone())
    }

    /// The `n`-th contract request's `ContractSeen`.
    fn seen(&mut self, n: usize) -> &mut ContractSeen {
        self.records
            .iter_mut()
            .filter_map(|r| match r {
                Record::Request {
                    contract: Some(seen),
                    ..
                } => Some(seen),
                _ => None,
            })
            .nth(n)
            .expect("such a request")
    }
}

/// Visito: event 1 refused 422 (ends `fallida`), retried by hand as `vr1`
/// (same eventId); event 2 a 503 then a 204 on its schedule. Asixto: an
/// ordered lane of two, the first answered 503 then 204; a replay of
/// event 1 (`ar1`, its own id, `replay_of` the first id).
fn valid() -> Doc {
    let mut d = Doc::new();
    d.replay("rp-v", "visito");
    d.replay("rp-a", "asixto");
    // Visito (requests 0..4).
    d.delivery("v1", "visito", 1, "live", ("http_422", 13), 0);
    d.request("visito", "v1", 1, 1, &ev(1), None, 10, 422);
    d.delivery("v2", "visito", 2, "live", ("entregada", 125), 0);
    d.request("visito", "v2", 1, 2, &ev(2), None, 10, 503);
    d.request("visito", "v2", 2, 2, &ev(2), None, 120, 204);
    d.delivery("vr1", "visito", 1, "rp-v", ("entregada", 505), 400);
    d.request("visito", "vr1", 1, 1, &ev(1), None, 500, 204);
    // Asixto (requests 4..8).
    d.delivery("a1", "asixto", 1, "live", ("entregada", 125), 0);
    d.request("asixto", "a1", 1, 1, &ev(1), None, 10, 503);
    d.request("asixto", "a1", 2, 1, &ev(1), None, 120, 204);
    d.delivery("a2", "asixto", 2, "live", ("entregada", 135), 0);
    d.request("asixto", "a2", 1, 2, &ev(2), None, 130, 204);
    d.delivery("ar1", "asixto", 1, "rp-a", ("entregada", 505), 400);
    d.request("asixto", "ar1", 1, 1, "ar1", Some(&ev(1)), 500, 204);
    d
}

impl Doc {
    fn replay(&mut self, id: &str, sub: &str) {
        self.rows.push(Row::Replay {
            id: id.into(),
            subscription_id: format!("s-{sub}"),
        });
    }
}

fn caught(d: &Doc, needle: &str) -> Report {
    let report = check(&d.history()).unwrap();
    println!("{report}");
    let found = report.violations(Invariant::ContractIdentity);
    assert!(!found.is_empty(), "contract_identity not caught");
    assert!(
        found.iter().any(|v| v.message.contains(needle)),
        "no violation says {needle:?}"
    );
    assert!(
        found
            .iter()
            .all(|v| v.to_string().contains("history.jsonl:")),
        "each violation cites its history lines"
    );
    report
}

#[test]
fn a_valid_contract_history_passes_with_every_request_resolved() {
    let report = check(&History::from_parts(valid().records, valid().rows)).unwrap();
    println!("{report}");
    assert!(report.ok(), "{report}");
    for invariant in [
        Invariant::ContractIdentity,
        Invariant::NoLoss,
        Invariant::LaneOrder,
        Invariant::Duplicates,
        Invariant::Concurrency,
        Invariant::RetryNotEarly,
        Invariant::RetryNotLate,
        Invariant::Signatures,
    ] {
        assert_eq!(report.cell(invariant), "ok", "{}", invariant.name());
    }
}

#[test]
fn a_visito_retry_with_another_event_id() {
    let mut d = valid();
    d.seen(2).body_id = "ev-other".into();
    d.seen(2).header_id = Some("ev-other".into());
    caught(&d, "a retry of delivery v2 carries eventId ev-other");
}

#[test]
fn a_visito_manual_retry_with_a_new_event_id() {
    let mut d = valid();
    d.seen(3).body_id = "vr1".into();
    d.seen(3).header_id = Some("vr1".into());
    caught(&d, "eventId vr1 is not its event's id ev-a-1");
}

#[test]
fn a_visito_header_that_disagrees_with_the_body() {
    let mut d = valid();
    d.seen(1).header_id = None;
    caught(&d, "X-Visito-Event-Id (absent) is not the body's eventId");
}

#[test]
fn an_asixto_retry_with_another_id() {
    let mut d = valid();
    d.seen(5).body_id = "a1-again".into();
    caught(&d, "a retry of delivery a1 carries id a1-again");
}

#[test]
fn an_asixto_replay_that_keeps_the_first_id() {
    let mut d = valid();
    // The replay's own id, as its delivery, but no new id in the body:
    // it names no delivery with `replay_of` set and the first id.
    d.seen(7).body_id = ev(1);
    caught(&d, "is no delivery of its subscription");
}

#[test]
fn an_asixto_replay_with_the_wrong_replay_of() {
    let mut d = valid();
    d.seen(7).replay_of = Some("ev-a-2".into());
    caught(&d, "replay delivery ar1 carries replay_of ev-a-2");
}

#[test]
fn an_asixto_first_delivery_that_carries_replay_of() {
    let mut d = valid();
    // a2's request names itself as its id and a replay_of: it resolves
    // (by id) to no delivery of a replay.
    d.seen(6).replay_of = Some(ev(2));
    caught(&d, "is no delivery of its subscription");
}
