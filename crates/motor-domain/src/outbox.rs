//! What Motor publishes, named once: the topic vocabulary ([`Topic`]), the
//! outbox record ([`OutboxRecord`]) every writer builds — the fan-out,
//! replays and the sweeper (delivery jobs), an attempt's finish (retries,
//! the DLQ) and commands — and an event's headers ([`event_headers`]; the
//! ledger's events are recorded by reference, their envelopes read from the
//! ledger when they are published). The store inserts records, the relay
//! publishes them under `{prefix}.{topic}`; both stay ignorant of what a
//! record means.

use std::fmt;

use crate::{
    command::{CommandId, CommandKind},
    delivery::{DeliveryId, DeliveryJob, Lane, Tier},
    ids::{EventId, InstanceId},
    subscription::SubscriptionId,
    time::{self, Timestamp},
};

/// Number of outbox shards. The relay locks shards, never single rows, so
/// per-instance order holds however many relay processes run. Changing it
/// re-maps instances to shards: only do so with the outbox drained.
pub const OUTBOX_SHARDS: i32 = 32;

/// Shard of the outbox an instance's records go to.
pub fn outbox_shard(instance: InstanceId) -> i32 {
    // The low bits of both v4 and v7 uuids are random.
    (instance.as_uuid().as_u128() % OUTBOX_SHARDS as u128) as i32
}

/// One of Motor's topics, without the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Topic {
    /// `{prefix}.events`: every envelope, for direct consumption by users.
    Events,
    /// `{prefix}.deliveries`: jobs due now (first attempts, replays,
    /// released lanes, the sweeper's requeues).
    Deliveries,
    /// `{prefix}.retry.{1s,…}`: jobs waiting for their `due_at`.
    Retry(Tier),
    /// `{prefix}.dlq`: envelopes of deliveries that ended `fallida`.
    Dlq,
    /// `{prefix}.commands`: commands ready for executors (a pointer:
    /// the executor's claim answers the command itself).
    Commands,
}

impl Topic {
    /// Every topic Motor uses, in the order they are created.
    pub const ALL: [Topic; 10] = [
        Topic::Events,
        Topic::Deliveries,
        Topic::Retry(Tier::S1),
        Topic::Retry(Tier::S5),
        Topic::Retry(Tier::S30),
        Topic::Retry(Tier::M2),
        Topic::Retry(Tier::M10),
        Topic::Retry(Tier::H1),
        Topic::Dlq,
        Topic::Commands,
    ];

    /// The suffix after `{prefix}.`: what the outbox stores.
    pub const fn suffix(self) -> &'static str {
        match self {
            Topic::Events => "events",
            Topic::Deliveries => "deliveries",
            Topic::Retry(tier) => tier.suffix(),
            Topic::Dlq => "dlq",
            Topic::Commands => "commands",
        }
    }

    /// The topic a suffix names.
    pub fn from_suffix(suffix: &str) -> Option<Self> {
        Topic::ALL.into_iter().find(|t| t.suffix() == suffix)
    }

    /// The full name under `prefix`, e.g. `motor.retry.5s`.
    pub fn name(self, prefix: &str) -> String {
        format!("{prefix}.{}", self.suffix())
    }

    /// The topic a job goes to: [`Topic::Deliveries`] when it is due at
    /// `now`, else the delay tier of the wait (the largest tier not above
    /// it), so a job that must wait never sits at the head of the live topic.
    pub fn for_job(due_at: Timestamp, now: Timestamp) -> Self {
        match (due_at - now).to_std() {
            Ok(wait) if !wait.is_zero() => Topic::Retry(Tier::for_delay(wait)),
            _ => Topic::Deliveries,
        }
    }
}

impl fmt::Display for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.suffix())
    }
}

/// The Kafka headers of an event on `{prefix}.events` (its value is the
/// envelope's bytes as the ledger stores them). The outbox keeps an
/// event's record by reference, its instance and seq: the relay reads the
/// envelope and these from the ledger when it publishes.
pub fn event_headers(
    event_id: EventId,
    instance_id: InstanceId,
    seq: i64,
    event_type: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("event_id", event_id.to_string()),
        ("instance_id", instance_id.to_string()),
        ("seq", seq.to_string()),
        ("type", event_type.to_owned()),
    ]
}

/// A record bound for Kafka, as the outbox stores it: keyed by its
/// instance, so every record of an instance lands on one partition in the
/// order it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRecord {
    pub topic: Topic,
    pub instance: InstanceId,
    pub payload: Vec<u8>,
    /// Kafka headers, name and value.
    pub headers: Vec<(&'static str, String)>,
}

impl OutboxRecord {
    /// A delivery job, on the topic its `due_at` calls for at `now`.
    pub fn job(job: &DeliveryJob, now: Timestamp) -> Self {
        Self::job_on(job, Topic::for_job(job.due_at, now))
    }

    /// A delivery job on a given topic (a retry goes to the tier its
    /// schedule chose, which may differ from [`Topic::for_job`]).
    pub fn job_on(job: &DeliveryJob, topic: Topic) -> Self {
        Self {
            topic,
            instance: job.instance_id,
            payload: job.to_json(),
            headers: vec![
                ("delivery_id", job.delivery_id.to_string()),
                ("subscription_id", job.subscription_id.to_string()),
                ("seq", job.seq.to_string()),
                ("attempt", job.attempt.to_string()),
                ("due_at", time::format(&job.due_at)),
            ],
        }
    }

    /// A delivery that ended `fallida`, for `{prefix}.dlq`: its envelope,
    /// with the delivery's ids and its last error as headers.
    pub fn dead_letter(letter: DeadLetter<'_>) -> Self {
        Self {
            topic: Topic::Dlq,
            instance: letter.instance_id,
            payload: letter.envelope.as_bytes().to_vec(),
            headers: vec![
                ("delivery_id", letter.delivery_id.to_string()),
                ("subscription_id", letter.subscription_id.to_string()),
                ("event_id", letter.event_id.to_string()),
                ("seq", letter.seq.to_string()),
                ("lane", letter.lane.to_string()),
                ("ultimo_error", letter.error.to_owned()),
            ],
        }
    }

    /// A command for `{prefix}.commands`, keyed by its instance so an
    /// instance's commands reach executors in the order they were
    /// accepted. Only a pointer (`command_id`, `instance_id`, `tipo`,
    /// `next_try`): the content travels in the claim's answer, after the
    /// compare-and-set that makes one executor its owner.
    pub fn command(command: &CommandJob) -> Self {
        let next_try = command.next_try.as_ref().map(time::format);
        let payload = serde_json::json!({
            "command_id": command.command_id.to_string(),
            "instance_id": command.instance_id.to_string(),
            "tipo": command.kind.as_str(),
            "next_try": next_try,
        });
        let mut headers = vec![
            ("command_id", command.command_id.to_string()),
            ("instance_id", command.instance_id.to_string()),
            ("tipo", command.kind.as_str().to_owned()),
        ];
        if let Some(next_try) = next_try {
            headers.push(("next_try", next_try));
        }
        Self {
            topic: Topic::Commands,
            instance: command.instance_id,
            payload: payload.to_string().into_bytes(),
            headers,
        }
    }

    /// The outbox shard this record goes to.
    pub fn shard(&self) -> i32 {
        outbox_shard(self.instance)
    }
}

/// What a `{prefix}.commands` record says of its command: enough for an
/// executor to route it and know when it is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandJob {
    pub command_id: CommandId,
    pub instance_id: InstanceId,
    pub kind: CommandKind,
    /// When it may be claimed (`en_cola`); `None` for `aceptado`.
    pub next_try: Option<Timestamp>,
}

/// What a DLQ record says of its delivery.
#[derive(Debug, Clone)]
pub struct DeadLetter<'a> {
    pub delivery_id: DeliveryId,
    pub subscription_id: SubscriptionId,
    pub instance_id: InstanceId,
    pub event_id: EventId,
    pub seq: i64,
    pub lane: Lane,
    pub envelope: &'a str,
    /// The `ultimo_error` code.
    pub error: &'a str,
}

#[cfg(test)]
mod tests {
    use chrono::{TimeDelta, Utc};

    use super::*;

    #[test]
    fn every_topic_has_one_suffix_and_comes_back_from_it() {
        let suffixes: Vec<&str> = Topic::ALL.iter().map(|t| t.suffix()).collect();
        assert_eq!(
            suffixes,
            [
                "events",
                "deliveries",
                "retry.1s",
                "retry.5s",
                "retry.30s",
                "retry.2m",
                "retry.10m",
                "retry.1h",
                "dlq",
                "commands"
            ]
        );
        for topic in Topic::ALL {
            assert_eq!(Topic::from_suffix(topic.suffix()), Some(topic));
        }
        assert_eq!(Topic::from_suffix("retry.3s"), None);
        assert_eq!(Topic::Retry(Tier::S5).name("motor"), "motor.retry.5s");
    }

    #[test]
    fn a_command_record_is_a_pointer_keyed_by_its_instance() {
        let job = CommandJob {
            command_id: CommandId::new(),
            instance_id: InstanceId::new(),
            kind: CommandKind::Message,
            next_try: time::parse("2026-10-24T15:10:01Z"),
        };
        let record = OutboxRecord::command(&job);
        assert_eq!(record.topic.suffix(), "commands");
        assert_eq!(record.instance, job.instance_id);
        let payload: serde_json::Value = serde_json::from_slice(&record.payload).unwrap();
        assert_eq!(
            payload,
            serde_json::json!({
                "command_id": job.command_id.to_string(),
                "instance_id": job.instance_id.to_string(),
                "tipo": "mensaje",
                "next_try": "2026-10-24T15:10:01Z",
            })
        );
        let names: Vec<&str> = record.headers.iter().map(|(k, _)| *k).collect();
        assert_eq!(names, ["command_id", "instance_id", "tipo", "next_try"]);
        let accepted = OutboxRecord::command(&CommandJob {
            next_try: None,
            kind: CommandKind::Pause,
            ..job
        });
        assert_eq!(accepted.headers.len(), 3);
    }

    #[test]
    fn due_jobs_go_to_the_live_topic_and_waiting_ones_to_a_tier() {
        let now = Utc::now();
        assert_eq!(Topic::for_job(now, now), Topic::Deliveries);
        assert_eq!(
            Topic::for_job(now - TimeDelta::seconds(5), now),
            Topic::Deliveries
        );
        assert_eq!(
            Topic::for_job(now + TimeDelta::seconds(40), now),
            Topic::Retry(Tier::S30)
        );
        assert_eq!(
            Topic::for_job(now + TimeDelta::hours(3), now),
            Topic::Retry(Tier::H1)
        );
    }

    #[test]
    fn a_job_record_carries_the_job_and_its_pointer_headers() {
        let job = DeliveryJob {
            delivery_id: DeliveryId::new(),
            subscription_id: SubscriptionId::new(),
            instance_id: InstanceId::new(),
            lane: Lane::Live,
            seq: 7,
            attempt: 2,
            due_at: Utc::now(),
        };
        let record = OutboxRecord::job(&job, job.due_at);
        assert_eq!(record.topic, Topic::Deliveries);
        assert_eq!(record.instance, job.instance_id);
        assert_eq!(DeliveryJob::from_json(&record.payload).unwrap(), job);
        let names: Vec<&str> = record.headers.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            names,
            ["delivery_id", "subscription_id", "seq", "attempt", "due_at"]
        );
        assert_eq!(record.shard(), outbox_shard(job.instance_id));
    }
}
