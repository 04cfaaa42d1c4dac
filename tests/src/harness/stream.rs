//! A follower of one instance's ledger stream (SSE), as a client that
//! must miss nothing would write it: it keeps the cursor (each event's
//! `id:`, the data-less opening block's too) and reconnects with
//! `desde=<cursor>` whenever the stream ends or fails (a failover, a kill,
//! a shutdown), 200 ms after. [`StreamFollower::verify`] then compares what
//! it saw with the ledger: every event of the instance, once, in seq order.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use sqlx::PgPool;
use tokio::task::JoinHandle;

/// What the follower saw: (seq, event id) in arrival order, and how many
/// times it (re)connected.
#[derive(Debug, Default)]
struct Seen {
    events: Vec<(i64, String)>,
    connections: u64,
}

pub struct StreamFollower {
    instance: String,
    seen: Arc<Mutex<Seen>>,
    task: JoinHandle<()>,
}

impl StreamFollower {
    /// Follows `instance`'s stream at `api` (`http://host:port`) from its
    /// first event.
    pub fn start(http: reqwest::Client, api: &str, token: &str, instance: &str) -> Self {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let url = format!("{api}/v1/instances/{instance}/events/stream");
        let (token, record) = (token.to_owned(), seen.clone());
        let task = tokio::spawn(async move {
            let mut cursor: i64 = 0;
            loop {
                let _ = follow_once(&http, &url, &token, &mut cursor, &record).await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Self {
            instance: instance.to_owned(),
            seen,
            task,
        }
    }

    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// How many events it saw and how many connections it took.
    pub fn progress(&self) -> (usize, u64) {
        let seen = self.seen.lock().expect("not poisoned");
        (seen.events.len(), seen.connections)
    }

    /// Waits (up to `within`) until it saw the instance's last event in
    /// the ledger at `pool`, stops, and names every difference: a gap, a
    /// repeat, an event out of order or not the ledger's.
    pub async fn verify(self, pool: &PgPool, within: Duration) -> anyhow::Result<Vec<String>> {
        let ledger: Vec<(i64, String)> = sqlx::query_as(
            "SELECT seq, event_id::text FROM events WHERE instance_id = $1::uuid ORDER BY seq",
        )
        .bind(&self.instance)
        .fetch_all(pool)
        .await?;
        let last = ledger.last().map_or(0, |(seq, _)| *seq);
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let reached = self
                .seen
                .lock()
                .expect("not poisoned")
                .events
                .last()
                .is_some_and(|(seq, _)| *seq >= last);
            if reached || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.task.abort();
        let seen = std::mem::take(&mut *self.seen.lock().expect("not poisoned"));
        let mut problems = Vec::new();
        let first = ledger.first().map_or(1, |(seq, _)| *seq);
        let mut expected = ledger.iter();
        let mut previous = first - 1;
        for (seq, id) in &seen.events {
            if *seq != previous + 1 {
                problems.push(format!(
                    "instance {}: seq {seq} came after {previous} (a gap, a repeat or out of order)",
                    self.instance
                ));
            }
            previous = *seq;
            match expected.find(|(s, _)| s == seq) {
                Some((_, ledger_id)) if ledger_id == id => {}
                Some((_, ledger_id)) => problems.push(format!(
                    "instance {}: seq {seq} was event {id}, the ledger holds {ledger_id}",
                    self.instance
                )),
                None => problems.push(format!(
                    "instance {}: seq {seq} ({id}) is not in the ledger",
                    self.instance
                )),
            }
            if problems.len() >= 20 {
                break;
            }
        }
        if previous < last && problems.len() < 20 {
            problems.push(format!(
                "instance {}: the stream stopped at seq {previous}, the ledger goes to {last}",
                self.instance
            ));
        }
        eprintln!(
            "[stream] instance {}: {} events seen over {} connections, ledger {first}..={last}",
            self.instance,
            seen.events.len(),
            seen.connections
        );
        Ok(problems)
    }
}

/// One connection: reads blocks until the stream ends or fails.
async fn follow_once(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    cursor: &mut i64,
    seen: &Mutex<Seen>,
) -> anyhow::Result<()> {
    let mut res = http
        .get(url)
        .query(&[("desde", cursor.to_string())])
        .bearer_auth(token)
        .header("accept", "text/event-stream")
        .timeout(Duration::from_secs(3600))
        .send()
        .await?;
    anyhow::ensure!(res.status().is_success(), "answered {}", res.status());
    seen.lock().expect("not poisoned").connections += 1;
    let mut buffer = String::new();
    // 45 s without a byte (the server pings every 15 s): a silent
    // connection, made again.
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(45), res.chunk()).await?? {
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut id = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().parse::<i64>().ok();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if !data.is_empty() {
                let envelope: serde_json::Value = serde_json::from_str(&data)?;
                let seq = envelope["seq"].as_i64().unwrap_or(-1);
                let event_id = envelope["event_id"].as_str().unwrap_or("").to_owned();
                seen.lock()
                    .expect("not poisoned")
                    .events
                    .push((seq, event_id));
            }
            if let Some(id) = id {
                *cursor = id;
            }
        }
    }
    Ok(())
}
