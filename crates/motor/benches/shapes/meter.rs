//! CPU by process for the shapes benchmark: [`crate::cpu`]'s groups, with
//! this process split in two — the receivers (every thread of the
//! runtime named [`RECEIVER_THREADS`], read from `/proc/self/task`) and
//! the load generator (the rest of this process: its runtime, the waits,
//! the setup).

use std::fs;

use crate::cpu::{Processes, Sample, Usage};

/// The name of the receivers' runtime threads.
pub const RECEIVER_THREADS: &str = "receiver";

/// The groups a phase's CPU is reported by, in order.
pub const GROUPS: [&str; 5] = ["motor", "postgres", "broker", "load", "receiver"];

pub struct Meter {
    processes: Processes,
    ticks_per_second: f64,
}

pub struct Snapshot {
    sample: Sample,
    receiver_ticks: u64,
}

/// CPU seconds by [`GROUPS`], and the wall time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spent {
    pub seconds: [f64; 5],
    pub wall: f64,
}

impl Spent {
    pub fn total(&self) -> f64 {
        self.seconds.iter().sum()
    }
}

impl Meter {
    pub fn new(motor: u32) -> Self {
        Self {
            processes: Processes::new(motor),
            // USER_HZ, as cpu.rs assumes when `getconf` is missing.
            ticks_per_second: 100.0,
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            receiver_ticks: receiver_ticks(),
            sample: self.processes.sample(),
        }
    }

    pub fn since(&self, before: &Snapshot) -> Spent {
        let receiver_ticks = receiver_ticks().saturating_sub(before.receiver_ticks);
        let usage: Usage = self.processes.since(&before.sample);
        let receiver = receiver_ticks as f64 / self.ticks_per_second;
        let [motor, postgres, broker, bench] = usage.seconds;
        Spent {
            seconds: [
                motor,
                postgres,
                broker,
                (bench - receiver).max(0.0),
                receiver,
            ],
            wall: usage.wall,
        }
    }
}

/// utime + stime of this process's receiver threads.
fn receiver_ticks() -> u64 {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| fs::read_to_string(t.ok()?.path().join("stat")).ok())
        .filter_map(|stat| {
            let comm = &stat[stat.find('(')? + 1..stat.rfind(')')?];
            if comm != RECEIVER_THREADS {
                return None;
            }
            let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace().skip(11);
            Some(fields.next()?.parse::<u64>().ok()? + fields.next()?.parse::<u64>().ok()?)
        })
        .sum()
}

/// The load average (1, 5, 15 minutes) as /proc/loadavg says it.
pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
