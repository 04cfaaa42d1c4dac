//! Ids of deliveries and replays, and the lane a delivery belongs to.

use std::{fmt, str::FromStr};

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

use crate::ids::uuid_id;

uuid_id!(
    /// One (event, subscription) delivery: `X-MW-Delivery-Id`, the same on
    /// every retry of it. A replay makes new ones.
    DeliveryId
);
uuid_id!(
    /// One replay request: its deliveries form their own ordered lane.
    ReplayId
);

/// Which ordered lane of a (subscription, instance) a delivery is in: the
/// live lane, or the lane of one replay. Lanes never wait for each other.
///
/// On the wire it is the string `"live"` or the replay's uuid, so a job stays
/// one flat JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    Live,
    Replay(ReplayId),
}

impl Lane {
    const LIVE: &'static str = "live";

    /// The replay whose lane this is; `None` for the live lane (how the store
    /// keeps it: a nullable `replay_id`).
    pub const fn replay_id(self) -> Option<ReplayId> {
        match self {
            Lane::Live => None,
            Lane::Replay(id) => Some(id),
        }
    }
}

impl From<Option<ReplayId>> for Lane {
    fn from(replay: Option<ReplayId>) -> Self {
        replay.map_or(Lane::Live, Lane::Replay)
    }
}

impl fmt::Display for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lane::Live => f.write_str(Lane::LIVE),
            Lane::Replay(id) => id.fmt(f),
        }
    }
}

impl FromStr for Lane {
    type Err = uuid::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == Lane::LIVE {
            Ok(Lane::Live)
        } else {
            s.parse().map(Lane::Replay)
        }
    }
}

impl Serialize for Lane {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Lane {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|_| de::Error::custom("a lane is \"live\" or a replay id (uuid)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPLAY: &str = "7d1e4b90-0000-4000-8000-0000000000f1";

    #[test]
    fn lanes_travel_as_one_string() {
        let replay = Lane::Replay(REPLAY.parse().unwrap());
        assert_eq!(serde_json::to_string(&Lane::Live).unwrap(), r#""live""#);
        assert_eq!(
            serde_json::to_string(&replay).unwrap(),
            format!("\"{REPLAY}\"")
        );
        for lane in [Lane::Live, replay] {
            let json = serde_json::to_string(&lane).unwrap();
            assert_eq!(serde_json::from_str::<Lane>(&json).unwrap(), lane);
            assert_eq!(lane.to_string().parse::<Lane>().unwrap(), lane);
        }
    }

    #[test]
    fn other_lane_strings_are_refused() {
        for bad in [r#""Live""#, r#""""#, r#""replay""#, r#"null"#, r#"1"#] {
            assert!(serde_json::from_str::<Lane>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_lane_maps_to_a_nullable_replay_id() {
        let id: ReplayId = REPLAY.parse().unwrap();
        assert_eq!(Lane::from(None), Lane::Live);
        assert_eq!(Lane::from(Some(id)), Lane::Replay(id));
        assert_eq!(Lane::Live.replay_id(), None);
        assert_eq!(Lane::Replay(id).replay_id(), Some(id));
    }

    #[test]
    fn ids_are_plain_uuids_on_the_wire() {
        let id: DeliveryId = "3c9a7e55-0000-4000-8000-0000000000e1".parse().unwrap();
        assert_eq!(
            serde_json::to_string(&id).unwrap(),
            r#""3c9a7e55-0000-4000-8000-0000000000e1""#
        );
        assert_ne!(DeliveryId::new(), DeliveryId::new());
    }
}
