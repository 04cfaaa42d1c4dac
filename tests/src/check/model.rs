//! The history indexed for the checks: subscriptions, events, deliveries
//! and attempts from the dump; requests from the receivers, sorted per
//! delivery and matched to the attempts Motor recorded.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::history::{Answer, ContractSeen, History, Line, Record, Row, Settings};

/// A receiver that gave no answer saw the client leave at `ended_us`; the
/// client closed at most this much earlier (the time to notice a close).
pub const CLOSE_NOTICE_US: i64 = 50_000;
/// Clock and rounding tolerance between the receivers' clock and Motor's
/// (the same machine clock; timestamps rounded to µs or ms).
pub const CLOCK_US: i64 = 2_000;

#[derive(Debug, Clone)]
pub struct Request {
    pub receiver: String,
    pub pid: Option<u32>,
    pub delivery_id: String,
    pub event_id: String,
    pub instance_id: String,
    pub seq: i64,
    pub verified: bool,
    pub timestamp: i64,
    pub arrived_us: i64,
    pub answering_us: Option<i64>,
    pub ended_us: i64,
    pub answer: Answer,
    pub status: Option<u16>,
    pub retry_after_ms: Option<u64>,
    pub line: Line,
    /// The recorded attempt this request was (its `numero`), if any.
    pub number: Option<i32>,
    /// What a Visito or Asixto receiver read (`check::contracts`).
    pub contract: Option<ContractSeen>,
}

impl Request {
    /// The latest moment Motor's attempt surely lasted to: an answer was
    /// being written before Motor read it; a close was made before the
    /// receiver noticed it.
    pub fn end_lb(&self) -> i64 {
        if self.answer.answered() {
            self.answering_us.unwrap_or(self.ended_us)
        } else {
            (self.ended_us - CLOSE_NOTICE_US).max(self.arrived_us)
        }
    }

    /// Whether the answer may make Motor retry (408, 429, 5xx, no answer;
    /// a trickled body may count as a timeout whatever its status).
    pub fn retryable(&self) -> bool {
        match (self.answer, self.status) {
            (Answer::Status, Some(s)) => s == 408 || s == 429 || s >= 500,
            (Answer::Status, None) | (Answer::Consumed, _) => false,
            _ => true,
        }
    }

    /// Whether the receiver said 2xx (in full, or as a trickled head).
    pub fn is_2xx(&self) -> bool {
        self.answer == Answer::Consumed
            || matches!(self.answer, Answer::Status | Answer::Trickle)
                && self.status.is_some_and(|s| (200..300).contains(&s))
    }

    /// The error code Motor records for this answer, when the receiver can
    /// tell (`http_<status>`, `timeout`).
    pub fn expected_code(&self) -> Option<String> {
        match self.answer {
            Answer::Status => self.status.map(|s| format!("http_{s}")),
            Answer::Hang => Some("timeout".into()),
            Answer::Trickle | Answer::Reset | Answer::Consumed => None,
        }
    }
}

/// `live` or a replay's id: a lane up to its first `/` (a key's lane is
/// `<base>/<orden_clave>`).
pub fn base_lane(lane: &str) -> &str {
    lane.split_once('/').map_or(lane, |(base, _)| base)
}

/// The receiver a subscription's URL names: a webhook's last path segment
/// (`http://127.0.0.1:P/r/<receiver>`), a RabbitMQ destination's routing
/// key (`amqp://…?exchange=…&routing_key=<receiver>`), a NATS subject
/// (`nats://…/<receiver>`).
pub fn receiver_of(url: &str) -> String {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    if url.starts_with("amqp") {
        if let Some(key) = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("routing_key="))
        {
            return key.to_owned();
        }
    }
    path.rsplit('/').next().unwrap_or_default().to_owned()
}

#[derive(Debug, Clone)]
pub struct Subscription {
    pub id: String,
    pub receiver: String,
    pub ordered: bool,
    /// `orden: clave`: its lanes are split by the event's `orden_clave`.
    pub by_key: bool,
    pub state: String,
    pub instances: Vec<String>,
    pub created_us: i64,
    pub line: Line,
}

#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: String,
    pub subscription_id: String,
    pub instance_id: String,
    pub event_id: String,
    pub seq: i64,
    pub lane: String,
    pub state: String,
    pub last_error: Option<String>,
    pub created_us: i64,
    pub updated_us: i64,
    pub delivered_us: Option<i64>,
    /// When it ended `cancelada`.
    pub cancelled_us: Option<i64>,
    pub line: Line,
}

impl Delivery {
    pub fn terminal(&self) -> bool {
        self.state != "pendiente"
    }
}

#[derive(Debug, Clone)]
pub struct Attempt {
    pub number: i32,
    pub started_us: i64,
    pub duration_ms: i64,
    pub error: Option<String>,
    pub line: Line,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub instance_id: String,
    pub seq: i64,
    pub event_id: String,
    pub received_us: i64,
    /// `orden_clave`, if the producer gave one.
    pub order_key: Option<String>,
    pub line: Line,
}

/// A window in which Motor was disrupted on purpose (a fault, or a
/// subscription reactivated): retries due inside it may come late.
#[derive(Debug, Clone)]
pub struct Disruption {
    pub start_us: i64,
    pub end_us: i64,
}

#[derive(Debug, Default)]
pub struct Model {
    pub scenario: String,
    pub settings: Option<Settings>,
    pub produced: Vec<(String, String, i64, Line)>,
    pub requests: Vec<Request>,
    pub disruptions: Vec<Disruption>,
    pub subs: HashMap<String, Subscription>,
    pub events: Vec<Event>,
    pub replays: HashSet<String>,
    pub deliveries: HashMap<String, Delivery>,
    /// Per delivery, attempts by `numero`.
    pub attempts: HashMap<String, Vec<Attempt>>,
    /// Per delivery, indexes into `requests` by arrival.
    pub by_delivery: HashMap<String, Vec<usize>>,
    /// Per receiver of an unordered subscription, the windows in which
    /// one process had as many requests in flight to it as it may (a
    /// due retry waits for a slot there).
    pub saturated: HashMap<String, Vec<Disruption>>,
    /// Per receiver, the windows in which its subscription was held by an
    /// answer with `Retry-After` (429 or 503): from the answer to the time
    /// it asked for (capped). A claim in one defers its delivery to the
    /// hold's end, whatever the delivery's own schedule.
    pub held: HashMap<String, Vec<Disruption>>,
    pub ended: bool,
}

impl Model {
    pub fn build(history: &History) -> anyhow::Result<Self> {
        let mut m = Model::default();
        for (record, line) in &history.records {
            match record {
                Record::Meta {
                    scenario, settings, ..
                } => {
                    m.scenario = scenario.clone();
                    m.settings = Some(settings.clone());
                }
                Record::Produced {
                    event_id,
                    instance_id,
                    seq,
                    ..
                } => m
                    .produced
                    .push((event_id.clone(), instance_id.clone(), *seq, line.clone())),
                Record::Request {
                    receiver,
                    pid,
                    delivery_id,
                    event_id,
                    instance_id,
                    seq,
                    verified,
                    timestamp,
                    arrived_us,
                    answering_us,
                    ended_us,
                    answer,
                    status,
                    retry_after_ms,
                    contract,
                    ..
                } => m.requests.push(Request {
                    receiver: receiver.clone(),
                    pid: *pid,
                    delivery_id: delivery_id.clone(),
                    event_id: event_id.clone(),
                    instance_id: instance_id.clone(),
                    seq: *seq,
                    verified: *verified,
                    timestamp: *timestamp,
                    arrived_us: *arrived_us,
                    answering_us: *answering_us,
                    ended_us: *ended_us,
                    answer: *answer,
                    status: *status,
                    retry_after_ms: *retry_after_ms,
                    line: line.clone(),
                    number: None,
                    contract: contract.clone(),
                }),
                Record::Fault {
                    start_us, end_us, ..
                } => m.disruptions.push(Disruption {
                    start_us: *start_us,
                    end_us: *end_us,
                }),
                Record::Action { what, t_us, .. } if what == "reactivate" || what == "resume" => {
                    m.disruptions.push(Disruption {
                        start_us: *t_us,
                        end_us: *t_us,
                    })
                }
                Record::End { .. } => m.ended = true,
                // Commands are judged from the history itself (`commands`).
                Record::Process { .. }
                | Record::ProduceFailed { .. }
                | Record::Action { .. }
                | Record::CommandAccepted { .. }
                | Record::CommandRefused { .. }
                | Record::CommandCancel { .. }
                | Record::ProviderCall { .. } => {}
            }
        }
        if m.settings.is_none() {
            anyhow::bail!("the history has no meta line (history.jsonl is empty or truncated)");
        }
        for (row, line) in &history.rows {
            m.add_row(row, line);
        }
        super::contracts::resolve(&mut m, history);
        m.index_requests();
        m.find_saturation();
        m.find_holds();
        Ok(m)
    }

    fn add_row(&mut self, row: &Row, line: &Line) {
        match row {
            Row::Subscription {
                id,
                url,
                ordenado,
                orden_por_clave,
                estado,
                instancias,
                creada_us,
            } => {
                let receiver = receiver_of(url);
                self.subs.insert(
                    id.clone(),
                    Subscription {
                        id: id.clone(),
                        receiver,
                        ordered: *ordenado,
                        by_key: *ordenado && *orden_por_clave,
                        state: estado.clone(),
                        instances: instancias.clone(),
                        created_us: *creada_us,
                        line: line.clone(),
                    },
                );
            }
            Row::Event {
                instance_id,
                seq,
                event_id,
                received_us,
                orden_clave,
            } => self.events.push(Event {
                instance_id: instance_id.clone(),
                seq: *seq,
                event_id: event_id.clone(),
                received_us: *received_us,
                order_key: orden_clave.clone(),
                line: line.clone(),
            }),
            Row::Replay { id, .. } => {
                self.replays.insert(id.clone());
            }
            Row::Delivery {
                id,
                subscription_id,
                instance_id,
                event_id,
                seq,
                lane,
                estado,
                ultimo_error,
                creada_us,
                actualizada_us,
                entregada_us,
                cancelada_us,
                ..
            } => {
                self.deliveries.insert(
                    id.clone(),
                    Delivery {
                        id: id.clone(),
                        subscription_id: subscription_id.clone(),
                        instance_id: instance_id.clone(),
                        event_id: event_id.clone(),
                        seq: *seq,
                        lane: lane.clone(),
                        state: estado.clone(),
                        last_error: ultimo_error.clone(),
                        created_us: *creada_us,
                        updated_us: *actualizada_us,
                        delivered_us: *entregada_us,
                        cancelled_us: *cancelada_us,
                        line: line.clone(),
                    },
                );
            }
            Row::Attempt {
                delivery_id,
                numero,
                iniciado_us,
                duracion_ms,
                error,
                ..
            } => self
                .attempts
                .entry(delivery_id.clone())
                .or_default()
                .push(Attempt {
                    number: *numero,
                    started_us: *iniciado_us,
                    duration_ms: *duracion_ms,
                    error: error.clone(),
                    line: line.clone(),
                }),
            Row::Command { .. } | Row::CommandEvent { .. } => {}
        }
    }

    /// Sorts requests per delivery and matches each recorded attempt to
    /// the request that arrived inside it.
    fn index_requests(&mut self) {
        for attempts in self.attempts.values_mut() {
            attempts.sort_by_key(|a| a.number);
        }
        for (i, r) in self.requests.iter().enumerate() {
            self.by_delivery
                .entry(r.delivery_id.clone())
                .or_default()
                .push(i);
        }
        for list in self.by_delivery.values_mut() {
            list.sort_by_key(|i| self.requests[*i].arrived_us);
        }
        for (delivery, attempts) in &self.attempts {
            let Some(list) = self.by_delivery.get(delivery) else {
                continue;
            };
            let mut taken: HashSet<usize> = HashSet::new();
            for a in attempts {
                let from = a.started_us - CLOCK_US;
                let to = a.started_us + (a.duration_ms + 1) * 1000 + CLOCK_US;
                if let Some(i) = list.iter().copied().find(|i| {
                    let r = &self.requests[*i];
                    !taken.contains(i) && r.arrived_us >= from && r.arrived_us <= to
                }) {
                    taken.insert(i);
                    self.requests[i].number = Some(a.number);
                }
            }
        }
    }

    fn find_saturation(&mut self) {
        let limit = self.settings().unordered_in_flight;
        let unordered: HashSet<&str> = self
            .subs
            .values()
            .filter(|s| !s.ordered)
            .map(|s| s.receiver.as_str())
            .collect();
        // (receiver, process) → (+1 at arrival, -1 at the end).
        type Edges<'a> = HashMap<(&'a str, Option<u32>), Vec<(i64, i32)>>;
        let mut edges: Edges = HashMap::new();
        for r in &self.requests {
            if unordered.contains(r.receiver.as_str()) {
                let e = edges.entry((r.receiver.as_str(), r.pid)).or_default();
                e.push((r.arrived_us, 1));
                e.push((r.end_lb(), -1));
            }
        }
        let mut saturated: HashMap<String, Vec<Disruption>> = HashMap::new();
        for ((receiver, _), mut e) in edges {
            e.sort();
            let (mut open, mut since) = (0, None);
            for (t, delta) in e {
                open += delta;
                if open as usize >= limit && since.is_none() {
                    since = Some(t);
                } else if (open as usize) < limit {
                    if let Some(start_us) = since.take() {
                        saturated
                            .entry(receiver.to_owned())
                            .or_default()
                            .push(Disruption {
                                start_us,
                                end_us: t,
                            });
                    }
                }
            }
        }
        self.saturated = saturated;
    }

    fn find_holds(&mut self) {
        let cap = self.settings().retry_after_cap_ms;
        let mut held: HashMap<String, Vec<Disruption>> = HashMap::new();
        for r in &self.requests {
            if let (Some(ms), Some(429 | 503)) = (r.retry_after_ms, r.status) {
                held.entry(r.receiver.clone())
                    .or_default()
                    .push(Disruption {
                        start_us: r.end_lb(),
                        end_us: r.ended_us + ms.min(cap) as i64 * 1000,
                    });
            }
        }
        for windows in held.values_mut() {
            windows.sort_by_key(|w| w.start_us);
        }
        self.held = held;
    }

    /// Until when `receiver`'s subscription was held from `from` on: the
    /// end of the holds that began by `from` (or by the end of the one
    /// before, plus `gap`: a claim deferred to a hold's end comes a little
    /// later and may find the next one) and ended after it.
    pub fn held_until(&self, receiver: &str, from: i64, gap: i64) -> Option<i64> {
        let mut until = None;
        let mut t = from;
        for w in self.held.get(receiver)? {
            if w.start_us > t + gap {
                break;
            }
            if w.end_us > t {
                t = w.end_us;
                until = Some(t);
            }
        }
        until
    }

    /// The latest end of a window in which `receiver` was saturated that
    /// overlaps `from..to`.
    pub fn saturated_until(&self, receiver: &str, from: i64, to: i64) -> Option<i64> {
        self.saturated
            .get(receiver)?
            .iter()
            .filter(|d| d.start_us <= to && d.end_us >= from)
            .map(|d| d.end_us)
            .max()
    }

    pub fn settings(&self) -> &Settings {
        self.settings.as_ref().expect("checked in build")
    }

    /// Requests of one delivery, by arrival.
    pub fn requests_of(&self, delivery: &str) -> impl Iterator<Item = &Request> {
        self.by_delivery
            .get(delivery)
            .into_iter()
            .flatten()
            .map(|i| &self.requests[*i])
    }

    /// Deliveries per lane (subscription, instance, lane), by seq. The
    /// lane is worked out from the history, not taken from Motor: `live` or
    /// the replay's id (what Motor's lane starts with), and under `clave`
    /// ordering `/` and the event's `orden_clave` when it has one — so the
    /// order is judged per key for such subscriptions, and per instance
    /// for the others whatever Motor wrote ([`Self::lane_of`]).
    pub fn lanes(&self) -> BTreeMap<(String, String, String), Vec<&Delivery>> {
        let keys = self.order_keys();
        let mut lanes: BTreeMap<_, Vec<&Delivery>> = BTreeMap::new();
        for d in self.deliveries.values() {
            lanes
                .entry((
                    d.subscription_id.clone(),
                    d.instance_id.clone(),
                    self.lane_of(d, &keys),
                ))
                .or_default()
                .push(d);
        }
        for lane in lanes.values_mut() {
            lane.sort_by_key(|d| d.seq);
        }
        lanes
    }

    /// Each event's `orden_clave`, by event id.
    pub fn order_keys(&self) -> HashMap<&str, &str> {
        self.events
            .iter()
            .filter_map(|e| Some((e.event_id.as_str(), e.order_key.as_deref()?)))
            .collect()
    }

    /// The lane `d` belongs in: its base (`live` or a replay's id: Motor's
    /// lane up to the first `/`) and, when its subscription orders by key
    /// and its event has one, `/<orden_clave>`. `keys` is
    /// [`Self::order_keys`].
    pub fn lane_of(&self, d: &Delivery, keys: &HashMap<&str, &str>) -> String {
        let base = base_lane(&d.lane);
        let by_key = self.subs.get(&d.subscription_id).is_some_and(|s| s.by_key);
        match keys.get(d.event_id.as_str()) {
            Some(key) if by_key => format!("{base}/{key}"),
            _ => base.to_owned(),
        }
    }

    /// The latest end of a disruption that started before `to` and whose
    /// recovery (its end plus `recovery_ms`) reached past `from`, if any.
    pub fn disrupted_until(&self, from: i64, to: i64) -> Option<i64> {
        let recovery = self.settings().recovery_ms as i64 * 1000;
        self.disruptions
            .iter()
            .filter(|d| d.start_us <= to && d.end_us + recovery >= from)
            .map(|d| d.end_us)
            .max()
    }

    pub fn notes(&self) -> Vec<String> {
        let unmatched = self.requests.iter().filter(|r| r.number.is_none()).count();
        let unattributed = self.requests.iter().filter(|r| r.pid.is_none()).count();
        let terminal = self.deliveries.values().filter(|d| d.terminal()).count();
        vec![format!(
            "{} events produced, {} in the ledger, {} deliveries ({} terminal), {} requests \
             ({} not matched to a recorded attempt, {} not attributed to a process), {} \
             disruptions{}",
            self.produced.len(),
            self.events.len(),
            self.deliveries.len(),
            terminal,
            self.requests.len(),
            unmatched,
            unattributed,
            self.disruptions.len(),
            if self.ended {
                ""
            } else {
                "; the run did not reach its end line"
            }
        )]
    }
}
