//! CPU time by process, from `/proc/<pid>/stat` (utime + stime, every
//! thread of the process): Motor, the whole Postgres server (every process
//! named `postgres`), the broker (every process named `tansu`) and this
//! benchmark (receiver and load generator).

use std::{collections::HashMap, fs, time::Instant};

/// The processes a phase's CPU is split by, in the order they print.
pub const GROUPS: [&str; 4] = ["motor", "postgres", "tansu", "bench"];

/// Where to find each group's processes.
pub struct Processes {
    pub motor: u32,
    ticks_per_second: f64,
}

/// CPU ticks of every process of every group at one instant.
pub struct Sample {
    at: Instant,
    per_group: [HashMap<u32, u64>; 4],
}

/// CPU seconds each group spent between two samples, and the wall time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    pub seconds: [f64; 4],
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
        Self {
            motor,
            ticks_per_second,
        }
    }

    pub fn sample(&self) -> Sample {
        let mut per_group: [HashMap<u32, u64>; 4] = Default::default();
        for (pid, stat) in all_stats() {
            let group = if pid == self.motor {
                0
            } else if pid == std::process::id() {
                3
            } else {
                match comm(&stat) {
                    Some("postgres") => 1,
                    Some("tansu") => 2,
                    _ => continue,
                }
            };
            if let Some(ticks) = cpu_ticks(&stat) {
                per_group[group].insert(pid, ticks);
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
        for (group, pids) in now.per_group.iter().enumerate() {
            let ticks: u64 = pids
                .iter()
                .map(|(pid, t)| t.saturating_sub(*before.per_group[group].get(pid).unwrap_or(&0)))
                .sum();
            seconds[group] = ticks as f64 / self.ticks_per_second;
        }
        Usage {
            seconds,
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

/// utime + stime: fields 14 and 15, the 12th and 13th after the `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace().skip(11);
    Some(fields.next()?.parse::<u64>().ok()? + fields.next()?.parse::<u64>().ok()?)
}
