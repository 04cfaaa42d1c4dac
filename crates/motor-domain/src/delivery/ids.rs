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

/// Largest `orden_clave`, in characters.
pub const MAX_ORDER_KEY_CHARS: usize = 200;

/// An event's ordering key (`orden_clave`, e.g. a conversation): 1–200
/// characters, no NUL. Under `clave` ordering a subscription's deliveries
/// of one instance go out one at a time per key, keys in parallel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrderKey(String);

impl OrderKey {
    /// The rule, the error naming `field`.
    pub fn parse(s: &str, field: &str) -> Result<Self, crate::error::FieldError> {
        let chars = s.chars().count();
        if chars == 0 || chars > MAX_ORDER_KEY_CHARS || s.contains('\0') {
            return Err(crate::error::FieldError::invalid(
                field,
                format!("must be 1 to {MAX_ORDER_KEY_CHARS} characters, no NUL"),
            ));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OrderKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which ordered lane of a (subscription, instance) a delivery is in: the
/// live lane, the lane of one replay, or — under `clave` ordering, for an
/// event with an `orden_clave` — one key's lane within either. Lanes never
/// wait for each other.
///
/// On the wire (and in `deliveries.lane`) it is one string: `"live"`, the
/// replay's uuid, or either followed by `/` and the key
/// (`"live/conv-42"`), so a job stays one flat JSON object and a lane is
/// still one column: every lane check compares it whole, whatever the
/// ordering.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Lane {
    Live,
    Replay(ReplayId),
    /// One key's lane within the live lane (`replay: None`) or a replay's.
    Keyed {
        replay: Option<ReplayId>,
        key: OrderKey,
    },
}

impl Lane {
    const LIVE: &'static str = "live";
    /// Between the lane a key's lane is part of and the key.
    pub const KEY_SEPARATOR: char = '/';

    /// The lane of a delivery in the live lane (`replay: None`) or a
    /// replay's, with its event's key when its subscription orders by key.
    pub fn of(replay: Option<ReplayId>, key: Option<OrderKey>) -> Self {
        match (replay, key) {
            (None, None) => Lane::Live,
            (Some(id), None) => Lane::Replay(id),
            (replay, Some(key)) => Lane::Keyed { replay, key },
        }
    }

    /// The replay whose lane this is (or whose lane a key's lane is part
    /// of); `None` for the live lane and its keys' lanes.
    pub fn replay_id(&self) -> Option<ReplayId> {
        match self {
            Lane::Live => None,
            Lane::Replay(id) => Some(*id),
            Lane::Keyed { replay, .. } => *replay,
        }
    }

    /// The key of a key's lane.
    pub fn key(&self) -> Option<&OrderKey> {
        match self {
            Lane::Keyed { key, .. } => Some(key),
            _ => None,
        }
    }

    /// The lane without its key: `live` or the replay's.
    pub fn base(&self) -> Lane {
        Lane::of(self.replay_id(), None)
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
            Lane::Keyed { replay, key } => {
                write!(f, "{}{}{key}", Lane::of(*replay, None), Lane::KEY_SEPARATOR)
            }
        }
    }
}

impl FromStr for Lane {
    type Err = uuid::Error;

    /// The base is split at the first `/` (neither `live` nor a uuid
    /// holds one); the key is the rest, whatever it holds.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (base, key) = match s.split_once(Lane::KEY_SEPARATOR) {
            Some((base, key)) => (base, Some(OrderKey(key.to_owned()))),
            None => (s, None),
        };
        let replay = if base == Lane::LIVE {
            None
        } else {
            Some(base.parse()?)
        };
        Ok(Lane::of(replay, key.filter(|k| !k.0.is_empty())))
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
    fn a_keys_lane_is_its_lane_a_slash_and_the_key() {
        let id: ReplayId = REPLAY.parse().unwrap();
        let key = OrderKey::parse("conv/42 ñ", "orden_clave").unwrap();
        let live = Lane::of(None, Some(key.clone()));
        let replay = Lane::of(Some(id), Some(key.clone()));
        assert_eq!(live.to_string(), "live/conv/42 ñ");
        assert_eq!(replay.to_string(), format!("{REPLAY}/conv/42 ñ"));
        for lane in [live.clone(), replay.clone()] {
            assert_eq!(lane.to_string().parse::<Lane>().unwrap(), lane);
            let json = serde_json::to_string(&lane).unwrap();
            assert_eq!(serde_json::from_str::<Lane>(&json).unwrap(), lane);
            assert_eq!(lane.key(), Some(&key));
        }
        assert_eq!((live.replay_id(), live.base()), (None, Lane::Live));
        assert_eq!(
            (replay.replay_id(), replay.base()),
            (Some(id), Lane::Replay(id))
        );
        assert_eq!(Lane::of(Some(id), None), Lane::Replay(id));
        assert_eq!(Lane::Live.key(), None);
        assert!("nope/k".parse::<Lane>().is_err());
    }

    #[test]
    fn an_order_key_is_1_to_200_characters_without_nul() {
        assert!(OrderKey::parse(&"ñ".repeat(MAX_ORDER_KEY_CHARS), "orden_clave").is_ok());
        for bad in [
            String::new(),
            "k".repeat(MAX_ORDER_KEY_CHARS + 1),
            "a\0b".to_owned(),
        ] {
            let e = OrderKey::parse(&bad, "[3].orden_clave").unwrap_err();
            assert_eq!(e.field, "[3].orden_clave", "{bad:?}");
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
