//! CPU time by process, from `/proc/<pid>/stat` (utime + stime, every
//! thread of the process): Motor, the whole Postgres server (every process
//! named `postgres`), the broker (every process named `tansu`) and this
//! benchmark (receiver and load generator). On a machine shared with other
//! servers, `MOTOR_BENCH_POSTGRES_PID` (the postmaster of the benchmark's
//! server: it and its children count) and `MOTOR_BENCH_BROKER_PID` (the
//! broker's process) keep the others' processes out.
//!
//! Also the context switches of each group (voluntary and not, every
//! thread, from `/proc/<pid>/task/<tid>/status`): a process that waits for
//! a message and is woken for it switches once, so at a low rate they
//! count the wake-ups an event costs.

use std::{collections::HashMap, fs, time::Instant};

/// The processes a phase's CPU is split by, in the order they print.
pub const GROUPS: [&str; 4] = ["motor", "postgres", "tansu", "bench"];

/// Where to find each group's processes.
pub struct Processes {
    pub motor: u32,
    ticks_per_second: f64,
    /// The postmaster whose processes are `postgres` (all when `None`).
    postgres: Option<u32>,
    /// The broker's process (every `tansu` when `None`).
    broker: Option<u32>,
}

/// CPU ticks and context switches of every process of every group at one
/// instant.
pub struct Sample {
    at: Instant,
    per_group: [HashMap<u32, (u64, u64)>; 4],
}

/// CPU seconds each group spent between two samples, its context
/// switches, and the wall time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    pub seconds: [f64; 4],
    pub switches: [u64; 4],
    pub wall: f64,
}

impl Usage {
    pub fn total(&self) -> f64 {
        self.seconds.iter().sum()
    }

    /// CPU seconds of Motor and the broker (what idles when nothing is sent).
    pub fn motor_and_broker(&self) -> f64 {
        self.seconds[0] + self.seconds[2]
    }
}

impl Processes {
    pub fn new(motor: u32) -> Self {
        // USER_HZ: 100 on every Linux this runs on; `getconf` says for sure.
        let ticks_per_second = std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0);
        let pid = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().parse().unwrap_or_else(|_| panic!("{name}: a pid")))
        };
        Self {
            motor,
            ticks_per_second,
            postgres: pid("MOTOR_BENCH_POSTGRES_PID"),
            broker: pid("MOTOR_BENCH_BROKER_PID"),
        }
    }

    pub fn sample(&self) -> Sample {
        let mut per_group: [HashMap<u32, (u64, u64)>; 4] = Default::default();
        for (pid, stat) in all_stats() {
            let group = if pid == self.motor {
                0
            } else if pid == std::process::id() {
                3
            } else {
                match comm(&stat) {
                    Some("postgres")
                        if self
                            .postgres
                            .is_none_or(|pm| pid == pm || parent(&stat) == Some(pm)) =>
                    {
                        1
                    }
                    Some("tansu") if self.broker.is_none_or(|b| pid == b) => 2,
                    _ => continue,
                }
            };
            if let Some(ticks) = cpu_ticks(&stat) {
                per_group[group].insert(pid, (ticks, switches(pid)));
            }
        }
        Sample {
            at: Instant::now(),
            per_group,
        }
    }

    /// CPU since `before`. A process that started in between counts whole;
    /// one that exited in between is lost (Motor's and Postgres's
    /// connections live through a run).
    pub fn since(&self, before: &Sample) -> Usage {
        let now = self.sample();
        let mut seconds = [0.0; 4];
        let mut switches = [0; 4];
        for (group, pids) in now.per_group.iter().enumerate() {
            let (mut ticks, mut switched) = (0, 0);
            for (pid, (t, s)) in pids {
                let (t0, s0) = before.per_group[group].get(pid).unwrap_or(&(0, 0));
                ticks += t.saturating_sub(*t0);
                switched += s.saturating_sub(*s0);
            }
            seconds[group] = ticks as f64 / self.ticks_per_second;
            switches[group] = switched;
        }
        Usage {
            seconds,
            switches,
            wall: (now.at - before.at).as_secs_f64(),
        }
    }
}

fn all_stats() -> impl Iterator<Item = (u32, String)> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            Some((pid, fs::read_to_string(format!("/proc/{pid}/stat")).ok()?))
        })
}

/// The command name, between the first `(` and the last `)`.
fn comm(stat: &str) -> Option<&str> {
    Some(&stat[stat.find('(')? + 1..stat.rfind(')')?])
}

/// The parent's pid: field 4, the 2nd after the `)`.
fn parent(stat: &str) -> Option<u32> {
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Context switches (voluntary and not) of every thread of `pid` so far.
fn switches(pid: u32) -> u64 {
    fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .filter_map(|task| fs::read_to_string(task.ok()?.path().join("status")).ok())
        .map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// utime + stime: fields 14 and 15, the 12th and 13th after the `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace().skip(11);
    Some(fields.next()?.parse::<u64>().ok()? + fields.next()?.parse::<u64>().ok()?)
}
