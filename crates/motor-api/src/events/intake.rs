//! Group commit for producer requests. Concurrent `POST
//! /v1/instances/{id}/events` requests to one process are queued and taken
//! by one worker in batches: one transaction appends every request of a
//! batch (`motor_store::ledger::append_batch`: instances locked in id
//! order, then one statement whatever the batch holds) and commits once;
//! then each request is answered with its own envelopes and seqs. Nothing
//! is answered before the commit. At low load a batch is one request and
//! adds no wait: the worker takes what is queued and never waits for more.
//! An instance's requests keep their order.
//!
//! One transaction in flight, not two: what arrives while a batch commits
//! makes the next batch, so batches grow with the load instead of two
//! smaller ones sharing it. On the 2-core benchmark machine one worker
//! took 16 % less CPU an accepted event than two (each with its own
//! instances, so that one could write while the other committed), and
//! with the dispatcher's recorder also down to one batch in flight the
//! fixed 1,000/s rate took 17 % less for every process together
//! (docs/BENCHMARKS.md, 2026-12-02 10:40).
//!
//! Requests with an `Idempotency-Key` do not come here: their stored answer
//! shares the append's transaction (see `events.rs`).

use std::sync::Arc;

use motor_domain::{InstanceId, NewEvent};
use motor_store::{
    deliveries::AfterCommit,
    ledger::{self, Appended, Request},
    Pool, StoreError,
};
use tokio::sync::{mpsc, oneshot};

use crate::ApiError;

/// Requests a batch takes at most.
const MAX_REQUESTS: usize = 256;
/// Events a batch takes at most (a request is never split: a batch may
/// pass this by one request).
const MAX_EVENTS: usize = 2_000;
/// Requests waiting at most; past it a request waits for room.
const QUEUE: usize = 4_096;

type Answer = Result<Appended, Arc<StoreError>>;

struct Pending {
    instance: InstanceId,
    events: Vec<NewEvent>,
    answer: oneshot::Sender<Answer>,
}

/// The queue of producer requests of this process.
#[derive(Clone)]
pub struct Intake {
    queue: mpsc::Sender<Pending>,
}

impl Intake {
    /// Starts the worker (it stops when every `Intake` is dropped).
    pub fn start(pool: Pool, after_commit: Option<Arc<dyn AfterCommit>>) -> Self {
        let (queue, waiting) = mpsc::channel(QUEUE);
        tokio::spawn(work(pool, after_commit, waiting));
        Self { queue }
    }

    /// Appends `events` to `instance`'s ledger in the next batch; answers
    /// once that batch committed.
    pub async fn append(
        &self,
        instance: InstanceId,
        events: Vec<NewEvent>,
    ) -> Result<Appended, ApiError> {
        let (answer, answered) = oneshot::channel();
        let pending = Pending {
            instance,
            events,
            answer,
        };
        let stopped = || ApiError::internal(std::io::Error::other("the intake stopped"));
        self.queue.send(pending).await.map_err(|_| stopped())?;
        answered
            .await
            .map_err(|_| stopped())?
            .map_err(|e| match &*e {
                StoreError::NotFound(what) => ApiError::NotFound(what),
                StoreError::Conflict(what) => ApiError::Conflict(what.clone()),
                StoreError::Database(e) => ApiError::database(e),
            })
    }
}

async fn work(
    pool: Pool,
    after_commit: Option<Arc<dyn AfterCommit>>,
    mut waiting: mpsc::Receiver<Pending>,
) {
    while let Some(first) = waiting.recv().await {
        let mut events = first.events.len();
        let mut batch = vec![first];
        while batch.len() < MAX_REQUESTS && events < MAX_EVENTS {
            match waiting.try_recv() {
                Ok(next) => {
                    events += next.events.len();
                    batch.push(next);
                }
                Err(_) => break,
            }
        }
        commit(&pool, after_commit.as_deref(), batch).await;
    }
}

/// Appends and commits one batch, then answers every request in it.
async fn commit(pool: &Pool, after_commit: Option<&dyn AfterCommit>, batch: Vec<Pending>) {
    let requests: Vec<Request<'_>> = batch
        .iter()
        .map(|p| Request {
            instance: p.instance,
            events: &p.events,
        })
        .collect();
    let lease = after_commit.and_then(|a| a.lease());
    let result = async {
        let mut tx = pool.begin().await?;
        let appended = ledger::append_batch(&mut tx, &requests, lease).await?;
        tx.commit().await?;
        Ok::<_, StoreError>(appended)
    }
    .await;
    drop(requests);
    match result {
        Ok((answers, handed)) => {
            if let Some(after_commit) = after_commit {
                after_commit.committed(handed);
            }
            for (pending, answer) in batch.into_iter().zip(answers) {
                let _ = pending.answer.send(Ok(answer));
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, requests = batch.len(), "an intake batch failed");
            let e = Arc::new(e);
            for pending in batch {
                let _ = pending.answer.send(Err(e.clone()));
            }
        }
    }
}
