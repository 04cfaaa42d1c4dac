//! `motor tail --instance …`: follows an instance's ledger live through the
//! public stream (`GET /v1/instances/{id}/events/stream`, Server-Sent
//! Events), one line per event — readable, or the envelope as JSON with
//! `--json` — and resumes by itself after the last event it printed when
//! the stream ends (a server that shut down or restarted, a cut
//! connection, 45 s without even a heartbeat), so nothing is printed twice
//! and nothing is skipped.
//!
//! The stream is read by a few lines of its own rather than an SSE
//! library: resuming exactly needs the cursor the stream opens with (the
//! `: motor stream cursor=N` comment and the data-less `id: N` block) and
//! the one it ends with (`: fin motivo=… cursor=N`), which SSE clients
//! drop as comments or as blocks without data.

use std::{io::Write, process::ExitCode, time::Duration};

use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;

use crate::remote::{RemoteArgs, RemoteError};

/// Silence (not even the 15 s heartbeat) after which the connection is
/// taken for dead and opened again.
const SILENCE: Duration = Duration::from_secs(45);
/// The longest wait between two reconnections.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

#[derive(Debug, clap::Args)]
pub struct TailArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// The instance to follow.
    #[arg(long)]
    pub instance: Uuid,
    /// Only these event types (comma list, up to 20).
    #[arg(long)]
    pub types: Option<String>,
    /// Start after this cursor (a seq; 0 = from the first event still
    /// resumable). Without it: the events appended from now on.
    #[arg(long)]
    #[arg(long = "desde")]
    pub after: Option<i64>,
    /// Print each envelope as JSON, one per line.
    #[arg(long)]
    pub json: bool,
}

/// How one connection ended.
enum Ended {
    /// The server closed the stream (`: fin motivo=…`), or the connection
    /// ended or went silent; worth opening again.
    Dropped(String),
    /// A refusal that another try will not change.
    Refused(RemoteError),
}

pub async fn run(args: TailArgs) -> ExitCode {
    let client = reqwest::Client::new();
    let mut cursor = args.after;
    let mut backoff = Duration::from_millis(200);
    loop {
        let (ended, progressed) = follow(&client, &args, &mut cursor).await;
        match ended {
            Ended::Refused(e) => {
                eprintln!("motor tail: {e}");
                return ExitCode::FAILURE;
            }
            Ended::Dropped(why) => {
                if progressed {
                    backoff = Duration::from_millis(200);
                }
                let after = cursor.map_or("the start".to_owned(), |c| format!("seq {c}"));
                eprintln!(
                    "motor tail: {why}; resuming after {after} in {} ms",
                    backoff.as_millis()
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// One connection: opens the stream after `cursor`, prints what comes and
/// moves `cursor` along. Also says whether the stream opened.
async fn follow(
    client: &reqwest::Client,
    args: &TailArgs,
    cursor: &mut Option<i64>,
) -> (Ended, bool) {
    let mut request = client
        .get(
            args.remote
                .endpoint(&format!("/v1/instances/{}/events/stream", args.instance)),
        )
        .bearer_auth(&args.remote.token)
        .header("accept", "text/event-stream");
    if let Some(types) = &args.types {
        request = request.query(&[("types", types)]);
    }
    if let Some(after) = *cursor {
        request = request.query(&[("desde", after)]);
    }
    let mut response = match request.send().await {
        Ok(response) => response,
        Err(e) => return (Ended::Dropped(format!("no answer ({e})")), false),
    };
    if response.status() == StatusCode::GONE {
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if let Some(first) = body["primer_cursor"].as_i64() {
            eprintln!(
                "motor tail: cursor {} is past the resumption window (streams.retencion_horas); \
                 events up to seq {first} are not shown",
                cursor.unwrap_or(0)
            );
            *cursor = Some(first);
            return (Ended::Dropped("cursor_vencido".into()), true);
        }
        return (Ended::Dropped("410 without primer_cursor".into()), false);
    }
    if !response.status().is_success() {
        let e = RemoteError::from_response(response).await;
        return if e.is_passing() {
            (Ended::Dropped(e.to_string()), false)
        } else {
            (Ended::Refused(e), false)
        };
    }
    let mut parser = Parser::default();
    let stdout = std::io::stdout();
    let mut announced = false;
    loop {
        let chunk = match tokio::time::timeout(SILENCE, response.chunk()).await {
            Err(_) => return (Ended::Dropped("the stream went silent".into()), true),
            Ok(Err(e)) => return (Ended::Dropped(format!("connection lost ({e})")), true),
            Ok(Ok(None)) => {
                let why = parser
                    .end
                    .take()
                    .map_or("the server closed the stream".into(), |m| {
                        format!("the server ended the stream (motivo={m})")
                    });
                return (Ended::Dropped(why), true);
            }
            Ok(Ok(Some(chunk))) => chunk,
        };
        for item in parser.feed(&chunk) {
            match item {
                Item::Cursor(c) => {
                    if !announced {
                        eprintln!(
                            "motor tail: following instance {} after seq {c}",
                            args.instance
                        );
                        announced = true;
                    }
                    *cursor = Some(c);
                }
                Item::Event { id, data } => {
                    let mut out = stdout.lock();
                    let line = if args.json { data } else { pretty(&data) };
                    // A closed stdout (`| head`) ends the command.
                    if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                        std::process::exit(0);
                    }
                    if let Some(id) = id {
                        *cursor = Some(id);
                    }
                }
            }
        }
    }
}

/// One line for a person: seq, type, when, and the data.
fn pretty(envelope: &str) -> String {
    match serde_json::from_str::<Value>(envelope) {
        Ok(e) => format!(
            "#{} {} {} {}",
            e["seq"],
            e["type"].as_str().unwrap_or("?"),
            e["occurred_at"].as_str().unwrap_or("?"),
            e["data"]
        ),
        Err(_) => envelope.to_owned(),
    }
}

/// What the stream said that matters here.
#[derive(Debug, PartialEq, Eq)]
enum Item {
    /// A position with no event (the opening, the closing comment).
    Cursor(i64),
    /// An event: its `id` (seq) and `data` (the envelope).
    Event { id: Option<i64>, data: String },
}

/// The Server-Sent Events lines, fed as they arrive.
#[derive(Debug, Default)]
struct Parser {
    pending: Vec<u8>,
    id: Option<i64>,
    data: Option<String>,
    /// `motivo` of the server's closing comment.
    end: Option<String>,
}

impl Parser {
    fn feed(&mut self, bytes: &[u8]) -> Vec<Item> {
        self.pending.extend_from_slice(bytes);
        let mut items = Vec::new();
        while let Some(at) = self.pending.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = self.pending.drain(..=at).collect();
            let line = String::from_utf8_lossy(&raw[..raw.len() - 1]);
            let line = line.strip_suffix('\r').unwrap_or(&line);
            self.line(line, &mut items);
        }
        items
    }

    fn line(&mut self, line: &str, items: &mut Vec<Item>) {
        if line.is_empty() {
            match (self.data.take(), self.id.take()) {
                (Some(data), id) => items.push(Item::Event { id, data }),
                (None, Some(id)) => items.push(Item::Cursor(id)),
                (None, None) => {}
            }
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            let mut words = comment.split_whitespace();
            let first = words.next();
            let mut cursor = None;
            for word in words {
                if let Some(c) = word.strip_prefix("cursor=") {
                    cursor = c.parse().ok();
                }
                if let (Some("fin"), Some(m)) = (first, word.strip_prefix("motivo=")) {
                    self.end = Some(m.to_owned());
                }
            }
            if let (Some("motor" | "fin"), Some(c)) = (first, cursor) {
                items.push(Item::Cursor(c));
            }
            return;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => self.id = value.parse().ok(),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_as_motor_writes_it() {
        let mut p = Parser::default();
        let mut items =
            p.feed(b": motor stream cursor=7\nid: 7\n\nid: 8\nevent: a.b\ndata: {\"seq\":8}");
        assert_eq!(items, vec![Item::Cursor(7), Item::Cursor(7)]);
        items = p.feed(b"\n\n: ping\n\r\n: fin motivo=apagado cursor=8\n\n");
        assert_eq!(
            items,
            vec![
                Item::Event {
                    id: Some(8),
                    data: "{\"seq\":8}".into()
                },
                Item::Cursor(8)
            ]
        );
        assert_eq!(p.end.as_deref(), Some("apagado"));
    }

    #[test]
    fn pretty_lines_name_seq_and_type() {
        let line = pretty(r#"{"seq":3,"type":"x.y","occurred_at":"t","data":{"a":1}}"#);
        assert_eq!(line, r#"#3 x.y t {"a":1}"#);
        assert_eq!(pretty("not json"), "not json");
    }
}
