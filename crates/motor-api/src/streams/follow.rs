//! One client's stream: catch up from the ledger, then follow the live
//! tail, with no gap and no duplicate at the hand-over. The client is
//! subscribed to the tail *before* the catch-up reads the ledger, so every
//! event is in one or the other (often both): live events at or below the
//! position are dropped, and a live event past the next expected seq is
//! preceded by the missing range, read from the ledger. The same handles a
//! tail that lagged while the client was still catching up; once live, a
//! client that falls a whole ring behind is cut off with its cursor.
//!
//! Every `.await` in [`Follower::next`] comes before the state changes, so
//! dropping a pending `next()` (a `select!` in the WebSocket loop) loses
//! nothing.

use std::{collections::VecDeque, sync::Arc};

use motor_domain::InstanceId;
use motor_store::ledger::stream::{self, StreamEvent};
use tokio::{
    sync::{broadcast, OwnedSemaphorePermit},
    time::{interval_at, Instant, Interval},
};

use super::hub::Hub;

/// Events one ledger read takes at most (what a catching-up client holds).
const PAGE: i64 = 100;
/// Live events taken together at most.
const BATCH: usize = 256;

/// What the stream sends next.
#[derive(Debug)]
pub enum Item {
    /// Events in seq order.
    Events(Vec<Arc<StreamEvent>>),
    /// Nothing happened for a heartbeat interval.
    Heartbeat,
    /// The stream ends; the client resumes after `cursor`.
    End { why: Why, cursor: i64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The client read too slowly: its buffer overflowed.
    Slow,
    /// The process is shutting down.
    Shutdown,
    /// Reading the ledger failed.
    Failed,
}

impl Why {
    /// The wire word (SSE comment, WebSocket close reason).
    pub fn as_str(self) -> &'static str {
        match self {
            Why::Slow => "lento",
            Why::Shutdown => "apagado",
            Why::Failed => "error",
        }
    }
}

enum Woke {
    Shutdown,
    Received(Result<Arc<StreamEvent>, broadcast::error::RecvError>),
    Heartbeat,
}

pub struct Follower {
    hub: Hub,
    instance: InstanceId,
    types: Vec<String>,
    live: broadcast::Receiver<Arc<StreamEvent>>,
    /// Every event up to here was sent or filtered out.
    position: i64,
    /// Read the ledger up to here before anything live.
    fill_to: Option<i64>,
    /// Live events received but not yet sent (behind a fill).
    held: VecDeque<Arc<StreamEvent>>,
    /// Whether the catch-up ended and the tail took over.
    following: bool,
    /// Read `last_seq` again and catch up to it (after a lag while
    /// catching up).
    resync: bool,
    heartbeat: Interval,
    ended: bool,
    _slot: OwnedSemaphorePermit,
}

impl Follower {
    /// A stream at `position` that first catches up to `last` (a
    /// `last_seq` read after `live` was subscribed).
    pub fn new(
        hub: Hub,
        instance: InstanceId,
        types: Vec<String>,
        position: i64,
        last: i64,
        live: broadcast::Receiver<Arc<StreamEvent>>,
        slot: OwnedSemaphorePermit,
    ) -> Self {
        let period = hub.config().heartbeat;
        Self {
            hub,
            instance,
            types,
            live,
            position,
            fill_to: (last > position).then_some(last),
            held: VecDeque::new(),
            following: false,
            resync: false,
            heartbeat: interval_at(Instant::now() + period, period),
            ended: false,
            _slot: slot,
        }
    }

    /// The cursor a client resumes from: every event up to it was sent or
    /// is not of its types.
    pub fn position(&self) -> i64 {
        self.position
    }

    fn wants(&self, event_type: &str) -> bool {
        self.types.is_empty() || self.types.iter().any(|t| t == event_type)
    }

    fn end(&mut self, why: Why) -> Option<Item> {
        self.ended = true;
        Some(Item::End {
            why,
            cursor: self.position,
        })
    }

    /// The next thing to send; `None` after the end.
    pub async fn next(&mut self) -> Option<Item> {
        loop {
            if self.ended {
                return None;
            }
            if self.hub.shutdown().is_cancelled() {
                return self.end(Why::Shutdown);
            }
            if self.resync {
                match stream::last_seq(self.hub.pool(), self.instance).await {
                    Ok(last) => {
                        self.resync = false;
                        if let Some(last) = last.filter(|last| *last > self.position) {
                            self.fill_to = Some(last);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "stream: reading the ledger failed");
                        return self.end(Why::Failed);
                    }
                }
            }
            if let Some(upto) = self.fill_to {
                match self.fill(upto).await {
                    Ok(Some(events)) => return Some(Item::Events(events)),
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "stream: reading the ledger failed");
                        return self.end(Why::Failed);
                    }
                }
            }
            if let Some(events) = self.release_held() {
                return Some(Item::Events(events));
            }
            if self.fill_to.is_some() {
                continue;
            }
            let woke = tokio::select! {
                biased;
                _ = self.hub.shutdown().cancelled() => Woke::Shutdown,
                received = self.live.recv() => Woke::Received(received),
                _ = self.heartbeat.tick() => Woke::Heartbeat,
            };
            let received = match woke {
                Woke::Shutdown => return self.end(Why::Shutdown),
                Woke::Heartbeat => return Some(Item::Heartbeat),
                Woke::Received(received) => received,
            };
            match received {
                Ok(event) => {
                    self.following = true;
                    self.held.push_back(event);
                    while self.held.len() < BATCH {
                        match self.live.try_recv() {
                            Ok(event) => self.held.push_back(event),
                            Err(broadcast::error::TryRecvError::Lagged(_)) => {
                                return self.end(Why::Slow)
                            }
                            Err(_) => break,
                        }
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) if !self.following => {
                    // The tail ran a whole ring ahead while this client
                    // caught up: catch up again, to a fresh end.
                    self.live = self.live.resubscribe();
                    self.resync = true;
                }
                Err(broadcast::error::RecvError::Lagged(_)) => return self.end(Why::Slow),
                Err(broadcast::error::RecvError::Closed) => return self.end(Why::Shutdown),
            }
        }
    }

    /// One page of the ledger after `position`, up to `upto`; `None` when
    /// the page held nothing of the client's types.
    async fn fill(&mut self, upto: i64) -> motor_store::Result<Option<Vec<Arc<StreamEvent>>>> {
        let types: Vec<&str> = self.types.iter().map(String::as_str).collect();
        let page = stream::read_range(
            self.hub.pool(),
            self.instance,
            self.position,
            upto,
            &types,
            PAGE,
        )
        .await?;
        if (page.len() as i64) < PAGE {
            self.position = upto;
            self.fill_to = None;
        } else {
            self.position = page.last().expect("a full page").seq;
        }
        Ok((!page.is_empty()).then(|| page.into_iter().map(Arc::new).collect()))
    }

    /// Held live events that follow `position` with no gap; at a gap, asks
    /// for a fill first.
    fn release_held(&mut self) -> Option<Vec<Arc<StreamEvent>>> {
        let mut out = Vec::new();
        while let Some(event) = self.held.front() {
            if event.seq <= self.position {
                self.held.pop_front();
                continue;
            }
            if event.seq > self.position + 1 {
                self.fill_to = Some(event.seq - 1);
                break;
            }
            let event = self.held.pop_front().expect("a front");
            self.position = event.seq;
            if self.wants(&event.event_type) {
                out.push(event);
            }
        }
        (!out.is_empty()).then_some(out)
    }
}
