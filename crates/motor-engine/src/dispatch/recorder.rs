//! Group commit of the hot finish. Attempts that ended `entregada` (most
//! claiming the next delivery of their chain) are queued and recorded by
//! one worker in batches — one statement for the whole batch
//! (`motor_store::deliveries::record_delivered_many`) — instead of one
//! commit each. At low load a batch is one attempt and adds no wait: the
//! worker takes what is queued and never waits for more. Every other
//! outcome (retry, failure, suspension) is rarer and recorded on its own.
//!
//! One batch in flight, as in the API's intake (its module says why): what
//! finishes while a batch commits makes the next one. Two workers sharing
//! the queue recorded smaller batches side by side; one recorder beside
//! one intake worker took 10–17 % less CPU an event at every rate of the
//! benchmark from 1,000/s up (docs/BENCHMARKS.md, 2026-12-02 10:40).

use motor_store::{
    deliveries::{self, Attempt, Claimed, Next, Recorded},
    Pool,
};
use tokio::sync::{mpsc, oneshot};

use crate::{EngineError, Result};

/// Attempts a batch records at most.
const MAX_BATCH: usize = 256;
const QUEUE: usize = 8_192;

struct Pending {
    claimed: Box<Claimed>,
    attempt: Attempt,
    next: Next,
    answer: oneshot::Sender<Result<Recorded>>,
}

pub(super) struct Recorder {
    queue: mpsc::Sender<Pending>,
}

impl Recorder {
    pub(super) fn start(pool: Pool) -> Self {
        let (queue, waiting) = mpsc::channel(QUEUE);
        tokio::spawn(work(pool, waiting));
        Self { queue }
    }

    /// Records `claimed`'s attempt as delivered, claiming the next delivery
    /// of its chain when `next` says so and one can be claimed now.
    pub(super) async fn delivered(
        &self,
        claimed: Box<Claimed>,
        attempt: Attempt,
        next: Next,
    ) -> Result<Recorded> {
        let (answer, answered) = oneshot::channel();
        let stopped = || EngineError::Batch("the recorder stopped".into());
        self.queue
            .send(Pending {
                claimed,
                attempt,
                next,
                answer,
            })
            .await
            .map_err(|_| stopped())?;
        answered.await.map_err(|_| stopped())?
    }
}

async fn work(pool: Pool, mut waiting: mpsc::Receiver<Pending>) {
    while let Some(first) = waiting.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match waiting.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        record(&pool, batch).await;
    }
}

async fn record(pool: &Pool, batch: Vec<Pending>) {
    let done: Vec<(&Claimed, &Attempt, Next)> = batch
        .iter()
        .map(|p| (p.claimed.as_ref(), &p.attempt, p.next))
        .collect();
    let result = deliveries::record_delivered_many(pool, &done).await;
    drop(done);
    match result {
        Ok(answers) => {
            for (pending, answer) in batch.into_iter().zip(answers) {
                let _ = pending.answer.send(Ok(answer));
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, attempts = batch.len(), "a batch of records failed");
            for pending in batch {
                let _ = pending.answer.send(Err(EngineError::Batch(e.to_string())));
            }
        }
    }
}
