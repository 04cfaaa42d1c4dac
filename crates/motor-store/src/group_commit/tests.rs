//! The worker's batching: what arrives during a commit, gather, pace,
//! linger and hurry, weight and failure.

use std::sync::Mutex;

use super::*;

/// The batches a [`Recording`] was given.
type Seen = Arc<Mutex<Vec<Vec<u32>>>>;

/// Records the batches it was given; fails a batch holding a 0. With
/// `hold`, the first batch waits for it, so that the rest queue up.
struct Recording {
    seen: Seen,
    hold: Option<Arc<tokio::sync::Notify>>,
}

impl Batch for Recording {
    type Job = u32;
    type Answer = u32;

    async fn commit(&mut self, jobs: &[u32]) -> Result<Vec<u32>, StoreError> {
        let first = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(jobs.to_vec());
            seen.len() == 1
        };
        if let (true, Some(hold)) = (first, &self.hold) {
            hold.notified().await;
        }
        if jobs.contains(&0) {
            return Err(StoreError::Conflict("zero".into()));
        }
        Ok(jobs.iter().map(|j| j * 10).collect())
    }

    fn weight(job: &u32) -> usize {
        *job as usize
    }

    /// Jobs from 100 up may linger.
    fn patient(job: &u32) -> bool {
        *job >= 100
    }
}

type Answer = tokio::task::JoinHandle<Result<u32, GroupCommitError>>;

fn submit(worker: &GroupCommit<Recording>, job: u32) -> Answer {
    let w = worker.clone();
    tokio::spawn(async move { w.submit(job).await })
}

/// A worker whose first batch (job 1) is held in its commit until
/// `release`, with `queued` submitted behind it in this order (each in
/// the queue before the next is sent).
struct Held {
    worker: GroupCommit<Recording>,
    seen: Seen,
    release: Arc<tokio::sync::Notify>,
    first: Answer,
    later: Vec<Answer>,
}

impl Held {
    async fn start(limits: Limits, queued: &[u32]) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let release = Arc::new(tokio::sync::Notify::new());
        let recording = Recording {
            seen: seen.clone(),
            hold: Some(release.clone()),
        };
        let worker = GroupCommit::start(recording, limits);
        let first = submit(&worker, 1);
        while seen.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        let mut later = Vec::new();
        for &job in queued {
            later.push(submit(&worker, job));
            while worker.queue.capacity() + later.len() > limits.queue {
                tokio::task::yield_now().await;
            }
        }
        Self {
            worker,
            seen,
            release,
            first,
            later,
        }
    }
}

#[tokio::test]
async fn what_arrives_during_a_commit_makes_the_next_batch_within_limits() {
    let limits = Limits {
        max_jobs: 3,
        max_weight: 100,
        queue: 16,
        gather: None,
        pace: None,
        linger: None,
    };
    // Queued while the first batch is in flight, in this order.
    let held = Held::start(limits, &[2, 3, 4, 5]).await;
    held.release.notify_one();
    assert_eq!(held.first.await.unwrap().unwrap(), 10);
    let mut answers = Vec::new();
    for task in held.later {
        answers.push(task.await.unwrap().unwrap());
    }
    assert_eq!(answers, [20, 30, 40, 50], "each caller gets its own answer");
    assert_eq!(
        *held.seen.lock().unwrap(),
        [vec![1], vec![2, 3, 4], vec![5]]
    );
}

/// With `gather`, jobs that queued together wait once for more (here
/// job 4, sent once job 1 is answered: the single-threaded test
/// runtime runs it only after the worker took 2 and 3 and began its
/// wait); a lone job is answered without waiting.
#[tokio::test]
async fn jobs_queued_together_gather_more_and_a_lone_job_never_waits() {
    let limits = Limits {
        max_jobs: 10,
        max_weight: 100,
        queue: 16,
        gather: Some(Duration::from_secs(2)),
        pace: None,
        linger: None,
    };
    let Held {
        worker,
        seen,
        release,
        first,
        mut later,
    } = Held::start(limits, &[2, 3]).await;
    release.notify_one();
    assert_eq!(first.await.unwrap().unwrap(), 10);
    later.push(submit(&worker, 4));
    for (task, answer) in later.into_iter().zip([20, 30, 40]) {
        assert_eq!(task.await.unwrap().unwrap(), answer);
    }
    assert_eq!(*seen.lock().unwrap(), [vec![1], vec![2, 3, 4]]);

    // Alone, it is not held for the gather (two seconds would pass
    // the timeout).
    let lone = tokio::time::timeout(Duration::from_secs(1), worker.submit(5)).await;
    assert_eq!(lone.expect("a lone job does not wait").unwrap(), 50);
}

/// A worker whose batches start at least `every` apart, unless `enough`
/// jobs are there.
fn pacing(every: Duration, enough: usize) -> (GroupCommit<Recording>, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let limits = Limits {
        max_jobs: 10,
        max_weight: 100,
        queue: 16,
        gather: None,
        pace: Some(Pace { every, enough }),
        linger: None,
    };
    let recording = Recording {
        seen: seen.clone(),
        hold: None,
    };
    (GroupCommit::start(recording, limits), seen)
}

/// With `pace`, a job that comes sooner than that after the last
/// batch started waits for it, and what arrives meanwhile joins its
/// batch; the first job, and one that comes later, go at once.
#[tokio::test]
async fn a_job_within_the_pace_waits_with_what_arrives_and_a_later_one_goes_at_once() {
    let pace = Duration::from_millis(400);
    let (worker, seen) = pacing(pace, 10);
    let started = tokio::time::Instant::now();
    let first = tokio::time::timeout(pace / 2, worker.submit(1)).await;
    assert_eq!(first.expect("the first job does not wait").unwrap(), 10);
    let second = submit(&worker, 2);
    tokio::time::sleep(pace / 4).await;
    let third = submit(&worker, 3);
    assert_eq!(second.await.unwrap().unwrap(), 20);
    assert_eq!(third.await.unwrap().unwrap(), 30);
    assert!(
        started.elapsed() >= pace,
        "the second batch waited for the pace"
    );
    assert_eq!(*seen.lock().unwrap(), [vec![1], vec![2, 3]]);

    tokio::time::sleep(pace).await;
    let later = tokio::time::timeout(pace / 2, worker.submit(4)).await;
    assert_eq!(
        later.expect("a job past the pace does not wait").unwrap(),
        40
    );
}

/// With `pace`, a batch that reaches `enough` jobs while it waits goes
/// at once: callers that come together are not slowed by the pace.
#[tokio::test]
async fn a_paced_batch_goes_at_once_with_enough_jobs() {
    let pace = Duration::from_secs(30);
    let (worker, seen) = pacing(pace, 3);
    assert_eq!(
        worker.submit(1).await.unwrap(),
        10,
        "the first job goes at once"
    );
    let second = submit(&worker, 2);
    let third = submit(&worker, 3);
    let fourth = submit(&worker, 4);
    let answers = tokio::time::timeout(Duration::from_secs(5), async {
        (second.await, third.await, fourth.await)
    })
    .await
    .expect("three jobs, enough: no wait for the pace");
    assert_eq!(answers.0.unwrap().unwrap(), 20);
    assert_eq!(answers.1.unwrap().unwrap(), 30);
    assert_eq!(answers.2.unwrap().unwrap(), 40);
    assert_eq!(*seen.lock().unwrap(), [vec![1], vec![2, 3, 4]]);
}

fn lingering(linger: Duration, max_jobs: usize) -> (GroupCommit<Recording>, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let limits = Limits {
        max_jobs,
        max_weight: 10_000,
        queue: 16,
        gather: Some(Duration::from_millis(1)),
        pace: None,
        linger: Some(linger),
    };
    let recording = Recording {
        seen: seen.clone(),
        hold: None,
    };
    (GroupCommit::start(recording, limits), seen)
}

/// With `linger`, patient jobs share a batch: the first waits the
/// linger from its arrival (not from the last job's), with whatever
/// arrives meanwhile.
#[tokio::test]
async fn patient_jobs_linger_together_from_the_first_ones_arrival() {
    let linger = Duration::from_millis(600);
    let (worker, seen) = lingering(linger, 10);
    let started = tokio::time::Instant::now();
    let first = submit(&worker, 100);
    tokio::time::sleep(linger / 2).await;
    let second = submit(&worker, 101);
    assert_eq!(first.await.unwrap().unwrap(), 1000);
    assert_eq!(second.await.unwrap().unwrap(), 1010);
    let took = started.elapsed();
    assert!(took >= linger, "the batch waited the linger: {took:?}");
    assert!(
        took < linger * 3 / 2,
        "from the first job's arrival: {took:?}"
    );
    assert_eq!(*seen.lock().unwrap(), [vec![100, 101]]);
}

/// A patient batch goes at once when a job that is not patient joins
/// it, when it fills, or when the worker is hurried.
#[tokio::test]
async fn a_lingering_batch_goes_for_an_impatient_job_a_full_batch_or_a_hurry() {
    let linger = Duration::from_secs(5);
    let soon = Duration::from_secs(2);
    let (worker, seen) = lingering(linger, 3);

    let patient = submit(&worker, 100);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let impatient = tokio::time::timeout(soon, worker.submit(7)).await;
    assert_eq!(
        impatient
            .expect("an impatient job does not linger")
            .unwrap(),
        70
    );
    assert_eq!(patient.await.unwrap().unwrap(), 1000);

    let jobs: Vec<Answer> = [101, 102, 103]
        .iter()
        .map(|&j| submit(&worker, j))
        .collect();
    for (task, answer) in jobs.into_iter().zip([1010, 1020, 1030]) {
        let done = tokio::time::timeout(soon, task).await;
        assert_eq!(
            done.expect("a full batch does not linger")
                .unwrap()
                .unwrap(),
            answer
        );
    }

    let hurried = submit(&worker, 104);
    tokio::time::sleep(Duration::from_millis(50)).await;
    worker.hurry();
    let done = tokio::time::timeout(soon, hurried).await;
    assert_eq!(
        done.expect("a hurried batch does not linger")
            .unwrap()
            .unwrap(),
        1040
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [vec![100, 7], vec![101, 102, 103], vec![104]]
    );
}

/// Without patient jobs, `linger` changes nothing: a lone job goes at
/// once.
#[tokio::test]
async fn a_job_that_is_not_patient_never_lingers() {
    let (worker, _) = lingering(Duration::from_secs(5), 10);
    let lone = tokio::time::timeout(Duration::from_secs(2), worker.submit(5)).await;
    assert_eq!(lone.expect("not patient: at once").unwrap(), 50);
}

#[tokio::test]
async fn weight_closes_a_batch_and_a_failure_answers_every_job_of_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let limits = Limits {
        max_jobs: 10,
        max_weight: 5,
        queue: 16,
        gather: None,
        pace: None,
        linger: None,
    };
    let recording = Recording {
        seen: seen.clone(),
        hold: None,
    };
    let worker = GroupCommit::start(recording, limits);
    let mut tasks = Vec::new();
    for job in [4, 0, 7, 1] {
        let w = worker.clone();
        tasks.push(tokio::spawn(async move { w.submit(job).await }));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    let batches = seen.lock().unwrap().clone();
    // Whatever the timing, every job is in one batch, and no batch
    // passes the weight by more than its last job.
    let mut flat: Vec<u32> = batches.iter().flatten().copied().collect();
    flat.sort();
    assert_eq!(flat, [0, 1, 4, 7]);
    for b in &batches {
        let before_last: u32 = b[..b.len() - 1].iter().sum();
        assert!((before_last as usize) < limits.max_weight, "{batches:?}");
    }
    let batch_of_zero = batches.iter().find(|b| b.contains(&0)).unwrap();
    for (job, result) in [4, 0, 7, 1].iter().zip(&results) {
        if batch_of_zero.contains(job) {
            assert!(matches!(result, Err(GroupCommitError::Failed(_))), "{job}");
        } else {
            assert_eq!(*result.as_ref().unwrap(), job * 10);
        }
    }
    drop(worker);
}
