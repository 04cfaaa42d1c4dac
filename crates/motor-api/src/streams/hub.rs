//! The live tail of one process: a single poller reads the ledger of every
//! instance some client follows here — one statement per round, whatever
//! the number of clients — and fans the new events out in memory through
//! one broadcast ring per instance. The ring's capacity is each client's
//! buffer: a client that falls further behind is cut off (see `follow`).

use std::{collections::HashMap, sync::Arc, time::Duration};

use motor_domain::InstanceId;
use motor_store::{
    deliveries::{AfterCommit, Handed, Taking},
    ledger::stream::{self, StreamEvent},
    Pool, StoreError,
};
use tokio::sync::{broadcast, Notify, OnceCell, OwnedSemaphorePermit, Semaphore};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

/// Events one poll reads per instance at most (more: it polls again at once).
const POLL_LIMIT: i64 = 1_000;

/// Knobs of the streams of one process.
#[derive(Debug, Clone)]
pub struct StreamsConfig {
    /// Open streams at most; beyond, 503 with `Retry-After`.
    pub max_connections: usize,
    /// Events a client may fall behind the live tail before it is cut off.
    pub buffer: usize,
    /// SSE `: ping` comments and WebSocket pings.
    pub heartbeat: Duration,
    /// How often the tail polls the ledger when nothing wakes it.
    pub poll_interval: Duration,
}

impl Default for StreamsConfig {
    fn default() -> Self {
        Self {
            max_connections: 10_000,
            buffer: 4_096,
            heartbeat: Duration::from_secs(15),
            poll_interval: Duration::from_millis(25),
        }
    }
}

/// One followed instance.
struct Followed {
    ring: broadcast::Sender<Arc<StreamEvent>>,
    /// The instance's `last_seq` when it was first followed: the tail
    /// sends every event after it. Set before any follower catches up.
    start: Arc<OnceCell<i64>>,
    /// The last seq the tail sent.
    sent: Option<i64>,
}

struct Inner {
    pool: Pool,
    config: StreamsConfig,
    followed: std::sync::Mutex<HashMap<InstanceId, Followed>>,
    wake: Notify,
    connections: Arc<Semaphore>,
    shutdown: CancellationToken,
    /// WebSocket connections (upgraded: the HTTP server no longer tracks them).
    sockets: TaskTracker,
}

/// The streams of this process: admission, the live tail, shutdown.
#[derive(Clone)]
pub struct Hub(Arc<Inner>);

impl Hub {
    /// Starts the tail; it stops, and every stream ends, on `shutdown`.
    pub fn start(pool: Pool, config: StreamsConfig, shutdown: CancellationToken) -> Self {
        let hub = Hub(Arc::new(Inner {
            pool,
            connections: Arc::new(Semaphore::new(config.max_connections)),
            config,
            followed: Default::default(),
            wake: Notify::new(),
            shutdown,
            sockets: TaskTracker::new(),
        }));
        tokio::spawn(tail(hub.clone()));
        hub
    }

    pub fn config(&self) -> &StreamsConfig {
        &self.0.config
    }

    pub fn pool(&self) -> &Pool {
        &self.0.pool
    }

    pub fn shutdown(&self) -> &CancellationToken {
        &self.0.shutdown
    }

    /// A connection slot, or `None` when every slot is taken.
    pub fn admit(&self) -> Option<OwnedSemaphorePermit> {
        self.0.connections.clone().try_acquire_owned().ok()
    }

    /// Open streams now.
    pub fn open(&self) -> usize {
        self.0.config.max_connections - self.0.connections.available_permits()
    }

    /// Something committed in this process: poll now rather than at the
    /// next interval.
    pub fn committed(&self) {
        self.0.wake.notify_one();
    }

    /// Subscribes to `instance`'s live events. Every event after the
    /// instance's `last_seq` read *after* this returns will come through
    /// the receiver (until it lags), so a follower that catches up from
    /// the ledger to such a read misses nothing.
    pub async fn follow(
        &self,
        instance: InstanceId,
    ) -> Result<broadcast::Receiver<Arc<StreamEvent>>, StoreError> {
        let (receiver, start) = {
            let mut followed = self.0.followed.lock().expect("not poisoned");
            let entry = followed.entry(instance).or_insert_with(|| Followed {
                ring: broadcast::channel(self.0.config.buffer).0,
                start: Arc::default(),
                sent: None,
            });
            (entry.ring.subscribe(), entry.start.clone())
        };
        start
            .get_or_try_init(|| async {
                stream::last_seq(&self.0.pool, instance)
                    .await?
                    .ok_or(StoreError::NotFound("instance"))
            })
            .await?;
        self.0.wake.notify_one();
        Ok(receiver)
    }

    /// Runs a WebSocket connection so that shutdown waits for its close.
    pub fn spawn_socket<F>(&self, connection: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.0.sockets.spawn(connection);
    }

    /// Waits until every WebSocket connection ended (after shutdown).
    pub async fn drained(&self) {
        self.0.sockets.close();
        self.0.sockets.wait().await;
    }
}

/// Wakes the tail after each commit of this process, then hands the
/// commit to the roles that follow it (`inner`).
pub struct WakeStreams {
    pub hub: Hub,
    pub inner: Option<Arc<dyn AfterCommit>>,
}

impl AfterCommit for WakeStreams {
    fn taking(&self) -> Option<Taking> {
        self.inner.as_ref().and_then(|inner| inner.taking())
    }

    fn committed(&self, handed: Handed) {
        self.hub.committed();
        if let Some(inner) = &self.inner {
            inner.committed(handed);
        }
    }
}

/// The one tail of this process.
async fn tail(hub: Hub) {
    let inner = &hub.0;
    loop {
        // With no instance followed there is nothing to poll for: only a
        // commit or a `follow` (which notifies once it is registered) wakes
        // the tail, instead of 40 timers a second in an idle process.
        let followed = !inner.followed.lock().expect("not poisoned").is_empty();
        tokio::select! {
            _ = inner.shutdown.cancelled() => return,
            _ = tokio::time::sleep(inner.config.poll_interval), if followed => {}
            _ = inner.wake.notified() => {}
        }
        loop {
            let positions = positions(inner);
            if positions.is_empty() {
                break;
            }
            let read = tokio::select! {
                _ = inner.shutdown.cancelled() => return,
                read = stream::read_after_many(&inner.pool, &positions, POLL_LIMIT) => read,
            };
            let events = match read {
                Ok(events) => events,
                Err(e) => {
                    tracing::warn!(error = %e, "stream tail: reading the ledger failed");
                    break;
                }
            };
            if !fan_out(inner, events) {
                break;
            }
        }
    }
}

/// Where the tail stands for each followed instance (forgetting those no
/// client follows any more).
fn positions(inner: &Inner) -> Vec<(InstanceId, i64)> {
    let mut followed = inner.followed.lock().expect("not poisoned");
    followed.retain(|_, f| f.ring.receiver_count() > 0);
    followed
        .iter_mut()
        .filter_map(|(id, f)| {
            if f.sent.is_none() {
                f.sent = f.start.get().copied();
            }
            f.sent.map(|sent| (*id, sent))
        })
        .collect()
}

/// Sends what the tail read; whether some instance had more to read.
fn fan_out(inner: &Inner, events: Vec<(InstanceId, StreamEvent)>) -> bool {
    let mut counts: HashMap<InstanceId, i64> = HashMap::new();
    let mut followed = inner.followed.lock().expect("not poisoned");
    for (instance, event) in events {
        *counts.entry(instance).or_default() += 1;
        let Some(f) = followed.get_mut(&instance) else {
            continue;
        };
        if f.sent.is_some_and(|sent| event.seq <= sent) {
            continue;
        }
        f.sent = Some(event.seq);
        // No receiver left is fine: the entry goes at the next round.
        let _ = f.ring.send(Arc::new(event));
    }
    counts.values().any(|n| *n >= POLL_LIMIT)
}
