//! The last hour of samples, in memory: what the console's charts draw
//! (rates and lag over time) without a time-series database. One point per
//! sampler pass; the oldest fall off.

use std::{collections::VecDeque, sync::Mutex};

/// Points kept: an hour at the default 15 s sampling period.
pub const HISTORY_POINTS: usize = 240;

/// One sample.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Point {
    /// Unix seconds.
    pub at: i64,
    /// Counters since start (rates are their differences).
    pub accepted: u64,
    pub delivered: u64,
    pub failed: u64,
    /// Backlogs at `at`.
    pub pending: i64,
    pub dlq: i64,
    pub outbox_depth: i64,
    pub outbox_oldest_seconds: f64,
}

#[derive(Debug, Default)]
pub struct History(Mutex<VecDeque<Point>>);

impl History {
    pub fn push(&self, point: Point) {
        let mut points = self.0.lock().expect("not poisoned");
        if points.len() == HISTORY_POINTS {
            points.pop_front();
        }
        points.push_back(point);
    }

    /// Every point, oldest first.
    pub fn points(&self) -> Vec<Point> {
        self.0
            .lock()
            .expect("not poisoned")
            .iter()
            .copied()
            .collect()
    }
}
