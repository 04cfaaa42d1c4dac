//! The message that moves a delivery through Kafka: on `{prefix}.deliveries`
//! (first attempts, replays, lanes released) and on the delay tiers
//! (retries). It is only a pointer: Postgres holds the delivery, and the
//! claim there (state, attempt number, lease, lane head) decides whether the
//! job still means anything, so a stale or duplicate job is dropped.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ids::{DeliveryId, Lane};
use crate::{
    ids::InstanceId,
    subscription::SubscriptionId,
    time::{serde_ts, Timestamp},
};

/// One job: "try attempt `attempt` of this delivery, not before `due_at`".
/// Its Kafka key is `instance_id`, like every record of an instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryJob {
    /// The delivery to attempt (`X-MW-Delivery-Id`).
    pub delivery_id: DeliveryId,
    /// Its subscription: whose URL, keys and state apply.
    pub subscription_id: SubscriptionId,
    /// The instance whose event it carries; the Kafka key.
    pub instance_id: InstanceId,
    /// Its ordered lane: `"live"` or a replay id.
    pub lane: Lane,
    /// The event's `seq`: its place in the lane.
    pub seq: i64,
    /// The number of the attempt this job asks for, from 1: the attempts
    /// already recorded plus one. A claim for any other number finds nothing.
    pub attempt: u32,
    /// Not to be handled before this instant (RFC 3339, UTC).
    #[serde(with = "serde_ts")]
    pub due_at: Timestamp,
}

impl DeliveryJob {
    /// How long a consumer must hold this job before handling it.
    pub fn hold(&self, now: Timestamp) -> Duration {
        time_until(self.due_at, now)
    }

    /// Whether the job may be handled at `now`.
    pub fn is_due(&self, now: Timestamp) -> bool {
        self.due_at <= now
    }

    /// The job for the next attempt of the same delivery, after a
    /// [`super::Decision::Retry`].
    pub fn retry(&self, next_attempt: u32, due_at: Timestamp) -> Self {
        Self {
            attempt: next_attempt,
            due_at,
            ..self.clone()
        }
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a job always serialises")
    }

    pub fn from_json(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

/// The time from `now` until `due_at`; zero once it has passed.
pub fn time_until(due_at: Timestamp, now: Timestamp) -> Duration {
    (due_at - now).to_std().unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::{delivery::ReplayId, time};

    fn job() -> DeliveryJob {
        DeliveryJob {
            delivery_id: "3c9a7e55-0000-4000-8000-0000000000e1".parse().unwrap(),
            subscription_id: "0f3b9d22-0000-4000-8000-0000000000d1".parse().unwrap(),
            instance_id: "8a1d2c3e-0000-4000-8000-0000000000a1".parse().unwrap(),
            lane: Lane::Live,
            seq: 1187,
            attempt: 3,
            due_at: time::parse("2026-10-24T15:08:49Z").unwrap(),
        }
    }

    #[test]
    fn the_wire_form_is_one_flat_object() {
        let json = String::from_utf8(job().to_json()).unwrap();
        assert_eq!(
            json,
            r#"{"delivery_id":"3c9a7e55-0000-4000-8000-0000000000e1","subscription_id":"0f3b9d22-0000-4000-8000-0000000000d1","instance_id":"8a1d2c3e-0000-4000-8000-0000000000a1","lane":"live","seq":1187,"attempt":3,"due_at":"2026-10-24T15:08:49Z"}"#
        );
        assert_eq!(DeliveryJob::from_json(json.as_bytes()).unwrap(), job());
    }

    #[test]
    fn a_replay_job_round_trips_with_millisecond_due_at() {
        let replay: ReplayId = "7d1e4b90-0000-4000-8000-0000000000f1".parse().unwrap();
        let j = DeliveryJob {
            lane: Lane::Replay(replay),
            due_at: time::parse("2026-10-24T15:08:49.123Z").unwrap(),
            ..job()
        };
        let json: serde_json::Value = serde_json::from_slice(&j.to_json()).unwrap();
        assert_eq!(json["lane"], "7d1e4b90-0000-4000-8000-0000000000f1");
        assert_eq!(json["due_at"], "2026-10-24T15:08:49.123Z");
        assert_eq!(DeliveryJob::from_json(&j.to_json()).unwrap(), j);
    }

    #[test]
    fn broken_jobs_are_refused() {
        let good = serde_json::to_value(job()).unwrap();
        for (field, bad) in [
            ("due_at", serde_json::json!("mañana")),
            ("due_at", serde_json::json!(1_761_318_529)),
            ("attempt", serde_json::json!(-1)),
            ("lane", serde_json::json!("vivo")),
            ("delivery_id", serde_json::json!("e1")),
        ] {
            let mut v = good.clone();
            v[field] = bad;
            assert!(
                DeliveryJob::from_json(v.to_string().as_bytes()).is_err(),
                "{field}"
            );
        }
        let mut missing = good.clone();
        missing.as_object_mut().unwrap().remove("seq");
        assert!(DeliveryJob::from_json(missing.to_string().as_bytes()).is_err());
        assert!(DeliveryJob::from_json(b"not json").is_err());
    }

    #[test]
    fn a_job_is_held_until_due_and_never_after() {
        let j = job();
        let before = j.due_at - chrono::TimeDelta::milliseconds(1_500);
        assert_eq!(j.hold(before), Duration::from_millis(1_500));
        assert!(!j.is_due(before));
        assert!(!j.is_due(j.due_at - chrono::TimeDelta::nanoseconds(1)));
        assert_eq!(j.hold(j.due_at), Duration::ZERO);
        assert!(j.is_due(j.due_at));
        let late = j.due_at + chrono::TimeDelta::hours(5);
        assert_eq!(j.hold(late), Duration::ZERO);
        assert!(j.is_due(late));
    }

    #[test]
    fn a_retry_job_keeps_the_delivery_and_lane() {
        let due = time::parse("2026-10-24T16:00:00Z").unwrap();
        let next = job().retry(4, due);
        assert_eq!(next.attempt, 4);
        assert_eq!(next.due_at, due);
        assert_eq!(
            DeliveryJob {
                attempt: 3,
                due_at: job().due_at,
                ..next
            },
            job()
        );
    }

    proptest! {
        #[test]
        fn holding_then_handling_is_never_early(due_ms in 0i64..10_000_000_000, now_ms in 0i64..10_000_000_000) {
            let base = time::parse("2026-01-01T00:00:00Z").unwrap();
            let j = DeliveryJob { due_at: base + chrono::TimeDelta::milliseconds(due_ms), ..job() };
            let now = base + chrono::TimeDelta::milliseconds(now_ms);
            let held = j.hold(now);
            prop_assert_eq!(held.is_zero(), j.is_due(now));
            // Waiting exactly the hold makes the job due, never earlier.
            prop_assert!(j.is_due(now + chrono::TimeDelta::from_std(held).unwrap()));
            if !held.is_zero() {
                let just_before = now + chrono::TimeDelta::from_std(held).unwrap() - chrono::TimeDelta::milliseconds(1);
                prop_assert!(!j.is_due(just_before));
            }
        }
    }
}
