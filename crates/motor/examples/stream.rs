//! Follow an instance's events over Server-Sent Events, resuming after any
//! disconnect with `Last-Event-ID` — no Motor code involved, just HTTP.
//!
//!   cargo run -p motor --example stream -- --token $TOKEN --instance $INSTANCE \
//!       [--url http://127.0.0.1:8080] [--desde N] [--types a,b]
//!
//! Prints each envelope on its own line (stdout) and what happens to the
//! connection (stderr). The cursor is the `id:` of the last event received;
//! after a cut connection, a server shutdown (`: fin motivo=apagado
//! cursor=N`) or a slow-reader cut-off (`motivo=lento`) it reconnects with
//! `Last-Event-ID: <cursor>` and loses nothing. A 410 (`cursor_vencido`)
//! means the cursor left the resumption window: it says so and restarts at
//! `primer_cursor`.

use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let base = flag("--url").unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let token = flag("--token").ok_or("--token is required")?;
    let instance = flag("--instance").ok_or("--instance is required")?;
    let mut cursor: Option<i64> = flag("--desde").map(|d| d.parse()).transpose()?;
    let types = flag("--types");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let http = reqwest::Client::new();
        let mut url = format!("{base}/v1/instances/{instance}/events/stream");
        if let Some(types) = &types {
            url.push_str(&format!("?types={types}"));
        }
        let mut backoff = Duration::from_millis(200);
        loop {
            let mut req = http.get(&url).bearer_auth(&token);
            if let Some(cursor) = cursor {
                req = req.header("Last-Event-ID", cursor.to_string());
            }
            match req.send().await {
                Ok(res) if res.status() == 200 => {
                    backoff = Duration::from_millis(200);
                    eprintln!("connected (cursor {cursor:?})");
                    follow(res, &mut cursor).await;
                    eprintln!("disconnected; resuming after cursor {cursor:?}");
                }
                Ok(res) if res.status() == 410 => {
                    let body: serde_json::Value = res.json().await.unwrap_or_default();
                    let primer = body["primer_cursor"].as_i64().unwrap_or(0);
                    eprintln!(
                        "cursor {cursor:?} expired (cursor_vencido): events were lost; \
                         restarting at primer_cursor {primer}"
                    );
                    cursor = Some(primer);
                    continue;
                }
                Ok(res) => {
                    let status = res.status();
                    let body = res.text().await.unwrap_or_default();
                    if status.is_client_error() && status != 429 {
                        eprintln!("refused: {status} {body}");
                        return;
                    }
                    eprintln!("{status}; retrying in {backoff:?}");
                }
                Err(e) => eprintln!("cannot connect ({e}); retrying in {backoff:?}"),
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(10));
        }
    });
    Ok(())
}

/// Reads one connection's events, moving `cursor` with each `id:`.
async fn follow(mut res: reqwest::Response, cursor: &mut Option<i64>) {
    let mut buf = String::new();
    while let Ok(Some(chunk)) = res.chunk().await {
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let mut data = None;
            for line in block.lines() {
                if let Some(id) = line.strip_prefix("id: ") {
                    *cursor = id.parse().ok().or(*cursor);
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = Some(d.to_owned());
                } else if let Some(comment) = line.strip_prefix(": fin") {
                    eprintln!("the server ended the stream:{comment}");
                }
            }
            if let Some(data) = data {
                println!("{data}");
            }
        }
    }
}
