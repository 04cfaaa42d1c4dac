//! The soak (`scripts/soak`): the matrix's mixed workload at a steady rate
//! for N minutes on a primary and synchronous standby of its own, with a
//! failover a quarter of the way in and a kill -9 of the dispatching
//! process half way, while a follower per instance reads its ledger stream
//! (SSE, resuming with `desde=`). Every minute it prints what would show a
//! leak; at the end the checker judges the history, [`leaks`] judges the
//! samples and each follower is compared with the ledger.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use super::{bucket, flaky, front_and_back};
use crate::{
    check::Report,
    harness::{
        brokers::BrokerReceiver, services::PostgresPair, stream::StreamFollower, Behaviour,
        Incoming, Run, RunConfig,
    },
    history::{now_us, Record, HISTORY_FILE},
};

/// Per instance, every `PAUSE`: 4 instances × 5 events / 0.5 s ≈ 40 events/s
/// offered (less when the machine is slow: a batch waits for its answer).
const BATCH: usize = 5;
const PAUSE: Duration = Duration::from_millis(500);

/// The harness's own row in [`Sample::rss_kib`].
const HARNESS: &str = "harness";

/// One minute's sample.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub minute: u64,
    /// Resident set size in KiB per process (`harness`: this process,
    /// receivers and producers included).
    pub rss_kib: Vec<(String, u64)>,
    /// `pg_stat_activity` rows on the run's database (the harness's own
    /// two included).
    pub connections: i64,
    pub outbox_depth: i64,
    /// Sum of `motor_consumer_lag` over topics (the API process's
    /// sampler).
    pub consumer_lag: i64,
    /// p99 of produce-to-first-request over the minute, ms (webhooks and
    /// broker consumers; replayed copies are not first requests).
    pub p99_ms: u64,
    /// Table (heap + TOAST) and index bytes per table.
    pub sizes: Vec<(String, i64, i64)>,
}

impl Sample {
    fn size(&self, table: &str) -> (i64, i64) {
        self.sizes
            .iter()
            .find(|(t, _, _)| t == table)
            .map_or((0, 0), |(_, t, i)| (*t, *i))
    }

    /// The series the leak rule judges, by name, with the absolute floor
    /// a rise must also pass (noise on small numbers is not a leak).
    fn judged(&self) -> Vec<(String, f64, f64)> {
        // Motor's processes. The harness's own RSS is printed, not
        // judged: it holds the run's receivers, producers and followers,
        // and every minute's p99 reads the whole history file (tens of MB
        // by the hour's end), so it grows with the run by design (one
        // run: 24 → 117 MiB by minute 30; docs/FAULTS.md, "Soak").
        let mut v: Vec<(String, f64, f64)> = self
            .rss_kib
            .iter()
            .filter(|(n, _)| n != HARNESS)
            .map(|(n, k)| (format!("rss {n} KiB"), *k as f64, 16.0 * 1024.0))
            .collect();
        let (outbox_t, outbox_i) = self.size("outbox");
        v.extend([
            ("connections".into(), self.connections as f64, 4.0),
            ("outbox depth".into(), self.outbox_depth as f64, 500.0),
            ("consumer lag".into(), self.consumer_lag as f64, 500.0),
            ("p99 ms".into(), self.p99_ms as f64, 2000.0),
            (
                "outbox bytes".into(),
                (outbox_t + outbox_i) as f64,
                4.0 * 1024.0 * 1024.0,
            ),
        ]);
        v
    }
}

/// The leak rule: a judged series grows without bound when the mean of
/// its last third of samples exceeds the mean of its first third by more
/// than 50 % and by more than its floor. The ledger's tables (events,
/// deliveries, attempts) grow by design (retention keeps them): printed,
/// not judged. Fewer than 3 samples: nothing to judge.
pub fn leaks(samples: &[Sample]) -> Vec<String> {
    let n = samples.len();
    if n < 3 {
        return Vec::new();
    }
    let third = n / 3;
    let series: Vec<Vec<(String, f64, f64)>> = samples.iter().map(Sample::judged).collect();
    let mut found = Vec::new();
    for (k, (name, _, floor)) in series[0].iter().enumerate() {
        let mean = |rows: &[Vec<(String, f64, f64)>]| {
            rows.iter()
                .filter_map(|r| r.get(k).map(|x| x.1))
                .sum::<f64>()
                / rows.len() as f64
        };
        let first = mean(&series[..third]);
        let last = mean(&series[n - third..]);
        if last > first * 1.5 && last - first > *floor {
            found.push(format!(
                "{name}: first third's mean {first:.0}, last third's {last:.0}"
            ));
        }
    }
    found
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// p99 (ms) of produce-to-first-request for first requests arriving in
/// `from_us..to_us`, read from the live history.
fn p99_ms(run: &Run, from_us: i64, to_us: i64) -> u64 {
    let text = std::fs::read_to_string(run.dir.join(HISTORY_FILE)).unwrap_or_default();
    let mut produced: HashMap<String, i64> = HashMap::new();
    let mut seen: HashMap<(String, String), ()> = HashMap::new();
    let mut latencies = Vec::new();
    for line in text.lines() {
        match serde_json::from_str::<Record>(line) {
            Ok(Record::Produced { event_id, t_us, .. }) => {
                produced.entry(event_id).or_insert(t_us);
            }
            Ok(Record::Request {
                receiver,
                event_id,
                arrived_us,
                ..
            }) => {
                let first = seen.insert((receiver, event_id.clone()), ()).is_none();
                if first && (from_us..to_us).contains(&arrived_us) {
                    if let Some(p) = produced.get(&event_id) {
                        latencies.push((arrived_us - p).max(0));
                    }
                }
            }
            _ => {}
        }
    }
    if latencies.is_empty() {
        return 0;
    }
    latencies.sort_unstable();
    let i = ((latencies.len() as f64) * 0.99).ceil() as usize;
    (latencies[i.clamp(1, latencies.len()) - 1] / 1000) as u64
}

async fn consumer_lag(run: &Run) -> i64 {
    let Ok(r) = run
        .http
        .get(format!("http://{}/metrics", run.api))
        .send()
        .await
    else {
        return -1;
    };
    let text = r.text().await.unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with("motor_consumer_lag{"))
        .filter_map(|l| l.split_whitespace().last()?.parse::<f64>().ok())
        .sum::<f64>() as i64
}

async fn sample(run: &mut Run, minute: u64, from_us: i64) -> Sample {
    let mut s = Sample {
        minute,
        ..Sample::default()
    };
    for p in &mut run.processes {
        let rss = if p.running() { rss_kib(p.pid()) } else { 0 };
        s.rss_kib.push((p.name.clone(), rss));
    }
    s.rss_kib
        .push((HARNESS.into(), rss_kib(std::process::id())));
    s.connections = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()",
    )
    .fetch_one(&run.pool)
    .await
    .unwrap_or(-1);
    s.outbox_depth = sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(&run.pool)
        .await
        .unwrap_or(-1);
    s.sizes = sqlx::query_as(
        "SELECT relname::text, pg_table_size(oid), pg_indexes_size(oid) FROM pg_class \
         WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace ORDER BY relname",
    )
    .fetch_all(&run.pool)
    .await
    .unwrap_or_default();
    s.consumer_lag = consumer_lag(run).await;
    s.p99_ms = p99_ms(run, from_us, now_us());
    s
}

fn header(s: &Sample) -> String {
    let mut h = String::from("min");
    for (n, _) in &s.rss_kib {
        h += &format!(" {:>12}", format!("rss_{n}_MiB"));
    }
    h += "  conns  outbox    lag  p99_ms  events_MB deliv_MB attempts_MB outbox_kB tables_MB indexes_MB";
    h
}

fn row(s: &Sample) -> String {
    let mb = |b: i64| b as f64 / 1_048_576.0;
    let mut r = format!("{:>3}", s.minute);
    for (_, k) in &s.rss_kib {
        r += &format!(" {:>12.1}", *k as f64 / 1024.0);
    }
    let (et, ei) = s.size("events");
    let (dt, di) = s.size("deliveries");
    let (at, ai) = s.size("delivery_attempts");
    let (ot, oi) = s.size("outbox");
    let tables: i64 = s.sizes.iter().map(|x| x.1).sum();
    let indexes: i64 = s.sizes.iter().map(|x| x.2).sum();
    r += &format!(
        "  {:>5} {:>7} {:>6} {:>7} {:>10.1} {:>8.1} {:>11.1} {:>9} {:>9.1} {:>10.1}",
        s.connections,
        s.outbox_depth,
        s.consumer_lag,
        s.p99_ms,
        mb(et + ei),
        mb(dt + di),
        mb(at + ai),
        (ot + oi) / 1024,
        mb(tables),
        mb(indexes),
    );
    r
}

/// What a soak found: the checker's report, the leaks [`leaks`] found in
/// the samples, and what the stream followers missed (each instance's
/// ledger stream, followed over SSE through the failover and the kill,
/// must show every event once, in seq order).
pub struct Soak {
    pub report: Report,
    pub leaks: Vec<String>,
    pub streams: Vec<String>,
}

/// The soak for `minutes` (at least 3).
pub async fn soak(minutes: u64) -> anyhow::Result<Soak> {
    let minutes = minutes.max(3);
    let pair = PostgresPair::start_new(true);
    let mut config = RunConfig::new("soak");
    config.pg_server = pair.primary_server();
    let mut run = Run::start_with_url(config, |db| pair.url(db)).await?;
    // The sampler (outbox, lag, RSS gauges) every 5 s instead of 15.
    run.env
        .vars
        .push(("MOTOR_METRICS_SAMPLE_MS".into(), "5000".into()));
    front_and_back(&mut run).await?;
    run.setup_tenant(4).await?;

    // 5 % failing receivers: an ordered and an unordered webhook, a
    // RabbitMQ queue (ordered) and a JetStream stream (unordered).
    let ordered = run.receiver("ordered").await;
    ordered.script(flaky(5, 2));
    let ordered_sub = run.subscribe(&ordered, true, &[]).await?;
    let unordered = run.receiver("unordered").await;
    unordered.script(|i: &Incoming| {
        if i.previous == 0 && bucket(&i.delivery_id, 0) < 5 {
            Behaviour::Status(503)
        } else {
            Behaviour::Delay(30, 204)
        }
    });
    run.subscribe(&unordered, false, &[]).await?;
    let rabbit =
        BrokerReceiver::rabbit(&format!("{}-rabbit", run.prefix), run.recorder.clone()).await?;
    run.subscribe_broker(&rabbit, true).await?;
    let nats = BrokerReceiver::nats(&format!("{}-nats", run.prefix), run.recorder.clone()).await?;
    run.subscribe_broker(&nats, false).await?;

    // A stream follower per instance: SSE from the first event, resuming
    // by itself with `desde=` whenever the stream drops.
    let followers: Vec<StreamFollower> = run
        .tenant()
        .instances
        .iter()
        .map(|i| {
            let api = format!("http://{}", run.api);
            StreamFollower::start(run.http.clone(), &api, &run.tenant().token, i)
        })
        .collect();

    // Steady producers until the end of the last minute.
    let total = Duration::from_secs(minutes * 60);
    let started = Instant::now();
    let producer = run.producer();
    let producers: Vec<_> = run
        .tenant()
        .instances
        .clone()
        .into_iter()
        .map(|instance| {
            let producer = producer.clone();
            tokio::spawn(async move {
                while started.elapsed() < total {
                    producer
                        .produce(&instance, BATCH, BATCH, Duration::from_secs(90))
                        .await?;
                    tokio::time::sleep(PAUSE).await;
                }
                anyhow::Ok(())
            })
        })
        .collect();

    let first_instance = run.tenant().instances[0].clone();
    // The failover a quarter of the way in, the kill -9 at half way: the
    // last third is free of faults, so what it shows is where the run
    // settled after both, not a recovery still under way.
    let failover_at = total / 4;
    let kill_at = total / 2;
    let mut samples = Vec::new();
    let mut window_from = now_us();
    let (mut failed_over, mut killed) = (false, false);
    for minute in 1..=minutes {
        let until = started + Duration::from_secs(minute * 60);
        if !failed_over && started + failover_at < until {
            tokio::time::sleep((started + failover_at).saturating_duration_since(Instant::now()))
                .await;
            let start = now_us();
            pair.stall_wal_sender();
            tokio::time::sleep(Duration::from_secs(2)).await;
            pair.kill_primary();
            tokio::time::sleep(Duration::from_secs(2)).await;
            pair.promote();
            run.fault("postgres-failover", "postgres-primary", start, now_us());
            run.repoint(&pair.standby_server()).await?;
            failed_over = true;
            eprintln!("[soak] minute {minute}: primary killed, standby promoted");
        }
        if !killed && started + kill_at < until {
            tokio::time::sleep((started + kill_at).saturating_duration_since(Instant::now())).await;
            run.kill9_and_restart("back", Duration::from_secs(1)).await;
            killed = true;
            eprintln!("[soak] minute {minute}: kill -9 of back (dispatch, retry), restarted");
        }
        // A replay each minute: the instance's first 20 events again to
        // the ordered webhook (its own lane, new delivery ids).
        if let Err(e) = run.replay(&ordered_sub, &first_instance, 1, 20).await {
            eprintln!("[soak] minute {minute}: replay: {e:#}");
        }
        tokio::time::sleep(until.saturating_duration_since(Instant::now())).await;
        let s = sample(&mut run, minute, window_from).await;
        window_from = now_us();
        if minute == 1 {
            println!("{}", header(&s));
        }
        println!("{}", row(&s));
        samples.push(s);
    }
    for p in producers {
        p.await??;
    }
    let found = leaks(&samples);
    let mut streams = Vec::new();
    for follower in followers {
        let (seen, connections) = follower.progress();
        eprintln!(
            "[soak] stream of {}: {seen} events so far, {connections} connections",
            follower.instance()
        );
        streams.extend(follower.verify(&run.pool, Duration::from_secs(120)).await?);
    }
    let report = run.finish(Duration::from_secs(180)).await;
    rabbit.close().await;
    nats.close().await;
    drop(pair);
    Ok(Soak {
        report: report?,
        leaks: found,
        streams,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(rss: u64, outbox: i64) -> Sample {
        Sample {
            rss_kib: vec![("back".into(), rss)],
            outbox_depth: outbox,
            ..Sample::default()
        }
    }

    #[test]
    fn a_steady_series_is_no_leak_and_a_rising_one_is() {
        let steady: Vec<_> = [60_000, 70_000, 65_000, 68_000, 66_000, 69_000]
            .into_iter()
            .map(|k| with(k, 10))
            .collect();
        assert_eq!(leaks(&steady), Vec::<String>::new());
        let rising: Vec<_> = [60_000, 80_000, 100_000, 120_000, 140_000, 160_000]
            .into_iter()
            .map(|k| with(k, 10))
            .collect();
        let found = leaks(&rising);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("rss back KiB"), "{found:?}");
        // Above 50 % but under the floor (outbox 10 → 400): noise.
        let small: Vec<_> = [10, 10, 200, 400]
            .into_iter()
            .map(|o| with(60_000, o))
            .collect();
        assert_eq!(leaks(&small), Vec::<String>::new());
        let outbox: Vec<_> = [10, 10, 2000, 4000]
            .into_iter()
            .map(|o| with(60_000, o))
            .collect();
        assert_eq!(leaks(&outbox).len(), 1);
    }

    #[test]
    fn the_harness_rss_is_printed_not_judged() {
        let growing: Vec<_> = [30_000, 60_000, 90_000, 120_000, 150_000, 180_000]
            .into_iter()
            .map(|k| Sample {
                rss_kib: vec![("back".into(), 60_000), (HARNESS.into(), k)],
                ..Sample::default()
            })
            .collect();
        assert_eq!(leaks(&growing), Vec::<String>::new());
        assert!(row(&growing[5]).contains("175.8"), "{}", row(&growing[5]));
    }
}
