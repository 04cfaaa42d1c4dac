//! A delivery's state as the contract names it (`estado` in
//! `GET /v1/deliveries`). Only `pendiente` ever changes.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The state of one (event, subscription) delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// Two domain types are called `Estado`: each needs its own OpenAPI name.
#[cfg_attr(feature = "openapi", schema(as = DeliveryState))]
pub enum Estado {
    /// Waiting for its attempt (`proximo_intento_en`), its turn in its lane,
    /// or for its subscription to be active again.
    Pendiente,
    /// The receiver answered 2xx. Terminal.
    Entregada,
    /// Will not be retried on its own; it is in the DLQ and only a replay
    /// sends its event again. Terminal, and it unblocks its lane.
    Fallida,
}

impl Estado {
    pub const ALL: [Estado; 3] = [Estado::Pendiente, Estado::Entregada, Estado::Fallida];

    pub const fn as_str(self) -> &'static str {
        match self {
            Estado::Pendiente => "pendiente",
            Estado::Entregada => "entregada",
            Estado::Fallida => "fallida",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Estado::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// Whether the delivery is done: nothing more is sent for it and the
    /// next delivery of its lane may start.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Estado::Entregada | Estado::Fallida)
    }
}

impl fmt::Display for Estado {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_contracts() {
        let names: Vec<_> = Estado::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(names, ["pendiente", "entregada", "fallida"]);
        for e in Estado::ALL {
            assert_eq!(Estado::parse(e.as_str()), Some(e));
            assert_eq!(e.to_string(), e.as_str());
            assert_eq!(
                serde_json::to_value(e).unwrap(),
                serde_json::Value::String(e.as_str().to_owned())
            );
            assert_eq!(
                serde_json::from_value::<Estado>(serde_json::json!(e.as_str())).unwrap(),
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
            assert_eq!(Estado::parse(s), None, "{s:?}");
        }
        assert!(serde_json::from_str::<Estado>(r#""Entregada""#).is_err());
    }

    #[test]
    fn only_entregada_and_fallida_are_terminal() {
        assert!(!Estado::Pendiente.is_terminal());
        assert!(Estado::Entregada.is_terminal());
        assert!(Estado::Fallida.is_terminal());
    }
}
