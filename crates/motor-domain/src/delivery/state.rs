//! A delivery's state as the contract names it (`estado` in
//! `GET /v1/deliveries`). Only `pendiente` ever changes.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The state of one (event, subscription) delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeliveryState {
    /// Waiting for its attempt (`proximo_intento_en`), its turn in its lane,
    /// or for its subscription to be active again.
    #[serde(rename = "pendiente")]
    Pending,
    /// The receiver answered 2xx. Terminal.
    #[serde(rename = "entregada")]
    Delivered,
    /// Will not be retried on its own; it is in the DLQ and only a replay
    /// sends its event again. Terminal, and it unblocks its lane.
    #[serde(rename = "fallida")]
    Failed,
}

impl DeliveryState {
    pub const ALL: [DeliveryState; 3] = [
        DeliveryState::Pending,
        DeliveryState::Delivered,
        DeliveryState::Failed,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pendiente",
            DeliveryState::Delivered => "entregada",
            DeliveryState::Failed => "fallida",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        DeliveryState::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// Whether the delivery is done: nothing more is sent for it and the
    /// next delivery of its lane may start.
    pub const fn is_terminal(self) -> bool {
        matches!(self, DeliveryState::Delivered | DeliveryState::Failed)
    }
}

impl fmt::Display for DeliveryState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_contracts() {
        let names: Vec<_> = DeliveryState::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(names, ["pendiente", "entregada", "fallida"]);
        for e in DeliveryState::ALL {
            assert_eq!(DeliveryState::parse(e.as_str()), Some(e));
            assert_eq!(e.to_string(), e.as_str());
            assert_eq!(
                serde_json::to_value(e).unwrap(),
                serde_json::Value::String(e.as_str().to_owned())
            );
            assert_eq!(
                serde_json::from_value::<DeliveryState>(serde_json::json!(e.as_str())).unwrap(),
                e
            );
        }
    }

    #[test]
    fn other_spellings_are_refused() {
        for s in [
            "Pendiente",
            "PENDIENTE",
            "pending",
            "delivered",
            "",
            " fallida",
        ] {
            assert_eq!(DeliveryState::parse(s), None, "{s:?}");
        }
        assert!(serde_json::from_str::<DeliveryState>(r#""Entregada""#).is_err());
    }

    #[test]
    fn only_delivered_and_failed_are_terminal() {
        assert!(!DeliveryState::Pending.is_terminal());
        assert!(DeliveryState::Delivered.is_terminal());
        assert!(DeliveryState::Failed.is_terminal());
    }
}
