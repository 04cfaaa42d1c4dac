//! The history of one run, as JSON lines: what the producers were told,
//! what every receiver saw and answered, what the harness did (processes,
//! faults, suspensions, rotations, replays), and a dump of Motor's tables
//! taken at the end. The harness writes it; the checker reads it back, and
//! knows nothing else about the run. docs/FAULTS.md describes every field.
//!
//! Two files in a run's directory: `history.jsonl` (written live) and
//! `dump.jsonl` (the tables, written once the run is over). Times are unix
//! microseconds of the machine's clock (the one Motor and Postgres use).

use std::{
    fs::File,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};

pub const HISTORY_FILE: &str = "history.jsonl";
pub const DUMP_FILE: &str = "dump.jsonl";

/// Now, in unix microseconds.
pub fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_micros() as i64
}

/// The settings the checker judges against (Motor's short test settings).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Settings {
    /// Nominal retry delays after the 1st..6th failed attempt (ms).
    pub retry_schedule_ms: [u64; 6],
    /// Jitter either way, in percent (the contract: 20).
    pub jitter_percent: u64,
    /// A delivery that fails again this long after its creation ends
    /// `fallida` with `<code>_agotada` (production: 72 h).
    pub give_up_ms: u64,
    /// `Retry-After` is honoured up to this (the contract: 1 h).
    pub retry_after_cap_ms: u64,
    /// Timeout of one attempt (`webhooks.timeout_segundos`).
    pub timeout_ms: u64,
    /// Requests in flight per unordered subscription per process.
    pub unordered_in_flight: usize,
    /// How late a retry may be beyond its latest due time when nothing
    /// was disrupted (faults and reactivations add their own windows).
    pub late_slack_ms: u64,
    /// How long after a disruption ends (a fault, a reactivation) Motor
    /// may take to bring retries back on time (re-joins, the sweeper's
    /// stale-job pass).
    #[serde(default)]
    pub recovery_ms: u64,
    /// An executor's lease on a claimed command (`MOTOR_EXECUTOR_LEASE_SECS`),
    /// for the commands scenario; 0 elsewhere.
    #[serde(default)]
    pub command_lease_ms: u64,
}

/// How a receiver answered one request.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// A full response with `status` (and maybe `retry_after_ms`).
    Status,
    /// No answer: the receiver held the request until the client left.
    Hang,
    /// Status line and headers (`status`) at once, then the body a byte
    /// at a time, slower than the timeout allows. The contract allows
    /// either reading: the status was answered, or the attempt timed out.
    Trickle,
    /// The connection was reset (RST) after the request was read.
    Reset,
    /// A message a broker destination's consumer took off its queue or
    /// stream: the broker stored it, which is what Motor's publish waits
    /// for (a RabbitMQ confirm, a JetStream ack); `arrived_us` =
    /// `ended_us` = when the consumer got it.
    Consumed,
}

impl Answer {
    /// Whether the receiver's `ended_us` is when it finished writing a
    /// response (the client can only have read it later); otherwise it is
    /// when the receiver saw the client leave or reset the connection.
    pub fn answered(self) -> bool {
        matches!(self, Answer::Status | Answer::Consumed)
    }
}

/// The identity a Visito or Asixto request carried, as its receiver
/// (written from the product's document) read it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct ContractSeen {
    /// `visito` or `asixto`.
    pub name: String,
    /// The body's id: Visito `eventId`, Asixto `id`.
    pub body_id: String,
    /// Visito's `X-Visito-Event-Id` (None: absent, or Asixto).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_id: Option<String>,
    /// Asixto's `replay_of`, when the body has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
    /// The producer's `data.s` (its source id): which event this is,
    /// whatever ids the request carries.
    pub source: String,
}

/// A line of `history.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "k", rename_all = "snake_case")]
pub enum Record {
    /// First line: the scenario and its settings.
    Meta {
        scenario: String,
        started_us: i64,
        settings: Settings,
    },
    /// A `motor serve` process started, was killed (-9) or stopped.
    Process {
        name: String,
        pid: u32,
        roles: String,
        what: String,
        t_us: i64,
    },
    /// A producer was told its event was stored (201/200 from the API).
    Produced {
        event_id: String,
        instance_id: String,
        seq: i64,
        source_id: String,
        t_us: i64,
    },
    /// A producer's request failed: these events may or may not exist.
    ProduceFailed {
        instance_id: String,
        source_ids: Vec<String>,
        error: String,
        t_us: i64,
    },
    /// One webhook request as a receiver saw it, or one broker message as
    /// its consumer took it (`answer` `consumed`, `conn` 0, no `pid`).
    Request {
        receiver: String,
        /// The Motor process that sent it (from the connection's owner),
        /// when the receiver could tell.
        pid: Option<u32>,
        conn: u64,
        delivery_id: String,
        event_id: String,
        instance_id: String,
        seq: i64,
        key_ids: Vec<String>,
        /// Every signature verified with a secret the receiver trusted.
        verified: bool,
        /// `X-MW-Timestamp`.
        timestamp: i64,
        arrived_us: i64,
        /// When the receiver began to write its answer (after any delay
        /// it was told to make): Motor cannot have read the answer before.
        /// `ended_us` is taken after the write, and a starved receiver may
        /// take it much later.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answering_us: Option<i64>,
        ended_us: i64,
        answer: Answer,
        status: Option<u16>,
        retry_after_ms: Option<u64>,
        /// What a Visito or Asixto receiver read (`delivery_id`,
        /// `instance_id` and `seq` are then empty: the checker resolves
        /// them, `check::contracts`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        contract: Option<ContractSeen>,
    },
    /// A fault was in force from `start_us` to `end_us` (a kill is an
    /// instant; its recovery is the restart, recorded as its end).
    Fault {
        kind: String,
        target: String,
        start_us: i64,
        end_us: i64,
    },
    /// Something the harness did to a subscription (`reactivate`,
    /// `rotate`, `replay`, …) at `t_us`.
    Action {
        what: String,
        subscription_id: String,
        detail: String,
        t_us: i64,
    },
    /// A producer was answered 202 with command `command_id` for its
    /// request under `key` (the Idempotency-Key) sent at `requested_us`
    /// (the first try of that key; a retry after a cut keeps it).
    /// `message` is the logical message (`m` in `contenido`/`parametros`,
    /// what the fake provider logs); `resend_of` the `ambiguo` command a
    /// person sent again as this new one.
    CommandAccepted {
        command_id: String,
        instance_id: String,
        key: String,
        tipo: String,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resend_of: Option<String>,
        requested_us: i64,
        t_us: i64,
    },
    /// A command request under `key` got no 202 (a cut, a 5xx): the
    /// command may or may not exist; the producer retries with the key.
    CommandRefused {
        instance_id: String,
        key: String,
        error: String,
        t_us: i64,
    },
    /// A producer asked to cancel `command_id`; Motor answered `status`
    /// (200 cancelled, 409 too late).
    CommandCancel {
        command_id: String,
        status: u16,
        t_us: i64,
    },
    /// The fake provider got a call for `command_id` under the claim's
    /// lease `reserva` and did `behaviour` (`accept`, `slow`, `late`,
    /// `refuse`, `busy`, `timeout`); `acted` when the message went out
    /// (`accept`, `slow`, `late`), with the `provider_message_id` it
    /// answered. Written when the call arrives.
    ProviderCall {
        command_id: String,
        reserva: String,
        message: String,
        behaviour: String,
        acted: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_message_id: Option<String>,
        t_us: i64,
    },
    /// Last line of a run that reached its end (everything settled or the
    /// run's time ran out).
    End { t_us: i64, settled: bool },
}

/// A line of `dump.jsonl`: Motor's tables once the run is over.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "k", rename_all = "snake_case")]
pub enum Row {
    Subscription {
        id: String,
        url: String,
        ordenado: bool,
        /// `orden: clave` (absent in older dumps: `false`).
        #[serde(default)]
        orden_por_clave: bool,
        estado: String,
        instancias: Vec<String>,
        creada_us: i64,
    },
    Event {
        instance_id: String,
        seq: i64,
        event_id: String,
        received_us: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        orden_clave: Option<String>,
    },
    Replay {
        id: String,
        subscription_id: String,
    },
    Delivery {
        id: String,
        subscription_id: String,
        instance_id: String,
        event_id: String,
        seq: i64,
        lane: String,
        estado: String,
        intentos: i32,
        ultimo_status: Option<i32>,
        ultimo_error: Option<String>,
        creada_us: i64,
        actualizada_us: i64,
        entregada_us: Option<i64>,
        /// When it ended `cancelada` (absent before that state existed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cancelada_us: Option<i64>,
    },
    Attempt {
        delivery_id: String,
        numero: i32,
        iniciado_us: i64,
        duracion_ms: i64,
        status: Option<i32>,
        error: Option<String>,
    },
    /// A command as it ended.
    Command {
        id: String,
        instance_id: String,
        tipo: String,
        status: String,
        error_code: Option<String>,
        stage: Option<String>,
        server_code: Option<String>,
        provider_message_id: Option<String>,
        idempotency_key: Option<String>,
        correlation_id: Option<String>,
        reclamos: i32,
        creada_us: i64,
        actualizada_us: i64,
    },
    /// A ledger event that cites a command (`command_id`), with its type.
    CommandEvent {
        instance_id: String,
        seq: i64,
        event_type: String,
        command_id: String,
        received_us: i64,
    },
}

/// Where a record came from, for the report: `history.jsonl:1234`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Line {
    pub file: &'static str,
    pub number: usize,
    pub text: String,
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.number, self.text)
    }
}

/// A history read back, each record with its line.
#[derive(Debug, Default, Clone)]
pub struct History {
    pub records: Vec<(Record, Line)>,
    pub rows: Vec<(Row, Line)>,
}

impl History {
    /// Reads `history.jsonl` and `dump.jsonl` from `dir`.
    pub fn read(dir: &Path) -> anyhow::Result<Self> {
        Ok(Self {
            records: read_lines(&dir.join(HISTORY_FILE), HISTORY_FILE)?,
            rows: read_lines(&dir.join(DUMP_FILE), DUMP_FILE)?,
        })
    }

    /// A history made in memory (the checker's own tests).
    pub fn from_parts(records: Vec<Record>, rows: Vec<Row>) -> Self {
        fn lines<T: Serialize>(items: Vec<T>, file: &'static str) -> Vec<(T, Line)> {
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    let text = serde_json::to_string(&item).expect("serialisable");
                    (
                        item,
                        Line {
                            file,
                            number: i + 1,
                            text,
                        },
                    )
                })
                .collect()
        }
        Self {
            records: lines(records, HISTORY_FILE),
            rows: lines(rows, DUMP_FILE),
        }
    }

    /// Writes both files into `dir` (the checker's own tests, and doctored
    /// copies of real histories).
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut h = File::create(dir.join(HISTORY_FILE))?;
        for (r, _) in &self.records {
            writeln!(h, "{}", serde_json::to_string(r)?)?;
        }
        let mut d = File::create(dir.join(DUMP_FILE))?;
        for (r, _) in &self.rows {
            writeln!(d, "{}", serde_json::to_string(r)?)?;
        }
        Ok(())
    }
}

fn read_lines<T: for<'de> Deserialize<'de>>(
    path: &Path,
    file: &'static str,
) -> anyhow::Result<Vec<(T, Line)>> {
    let reader =
        BufReader::new(File::open(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?);
    let mut out = Vec::new();
    for (i, text) in reader.lines().enumerate() {
        let text = text?;
        if text.trim().is_empty() {
            continue;
        }
        let item: T = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), i + 1))?;
        out.push((
            item,
            Line {
                file,
                number: i + 1,
                text,
            },
        ));
    }
    Ok(out)
}

/// Appends records to a run's `history.jsonl`; shared by the receivers,
/// producers and the scenario (one line per record, written at once).
#[derive(Clone)]
pub struct Recorder {
    dir: PathBuf,
    file: Arc<Mutex<File>>,
}

impl Recorder {
    pub fn create(dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let file = File::create(dir.join(HISTORY_FILE))?;
        Ok(Self {
            dir: dir.to_owned(),
            file: Arc::new(Mutex::new(file)),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn record(&self, record: &Record) {
        let line = serde_json::to_string(record).expect("serialisable");
        let mut file = self.file.lock().expect("not poisoned");
        writeln!(file, "{line}").expect("writing the history");
    }

    /// Writes the dump (once, at the end of the run).
    pub fn write_dump(&self, rows: &[Row]) -> anyhow::Result<()> {
        let mut d = std::io::BufWriter::new(File::create(self.dir.join(DUMP_FILE))?);
        for row in rows {
            writeln!(d, "{}", serde_json::to_string(row)?)?;
        }
        d.flush()?;
        Ok(())
    }
}
