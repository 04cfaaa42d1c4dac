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
    /// Its subscription's contract cancels on deactivation (Visito) and
    /// the subscription was paused, suspended or deleted, or the API key it
    /// is bound to was revoked or expired; `motivo` says which
    /// ([`CancelReason`]). Nothing more is sent for it; a replay still
    /// can. Terminal.
    #[serde(rename = "cancelada")]
    Cancelled,
}

impl DeliveryState {
    pub const ALL: [DeliveryState; 4] = [
        DeliveryState::Pending,
        DeliveryState::Delivered,
        DeliveryState::Failed,
        DeliveryState::Cancelled,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pendiente",
            DeliveryState::Delivered => "entregada",
            DeliveryState::Failed => "fallida",
            DeliveryState::Cancelled => "cancelada",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        DeliveryState::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// Whether the delivery is done: nothing more is sent for it and the
    /// next delivery of its lane may start.
    pub const fn is_terminal(self) -> bool {
        !matches!(self, DeliveryState::Pending)
    }
}

/// Why a delivery ended `cancelada` (`motivo`, seed 001: "Una clave
/// revocada/vencida/sin permisos o una suscripción desactivada/eliminada
/// cancela entregas pendientes"). Its wire spelling is
/// [`CancelReason::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CancelReason {
    /// The subscription was paused (`estado: pausada`), or events reached
    /// it while it was.
    #[serde(rename = "suscripcion_pausada")]
    SubscriptionPaused,
    /// The engine suspended it (a 401/403, a destination refused, …).
    #[serde(rename = "suscripcion_suspendida")]
    SubscriptionSuspended,
    #[serde(rename = "suscripcion_eliminada")]
    SubscriptionDeleted,
    /// The API key it is bound to was revoked.
    #[serde(rename = "clave_revocada")]
    KeyRevoked,
    /// The API key it is bound to passed its `vence_en`.
    #[serde(rename = "clave_vencida")]
    KeyExpired,
    /// The API key it is bound to lacks the read scope the app's catalogue
    /// now maps a type it selects to (seed 001's "sin permisos").
    #[serde(rename = "clave_sin_permiso")]
    KeyUnderScoped,
}

impl CancelReason {
    pub const ALL: [CancelReason; 6] = [
        CancelReason::SubscriptionPaused,
        CancelReason::SubscriptionSuspended,
        CancelReason::SubscriptionDeleted,
        CancelReason::KeyRevoked,
        CancelReason::KeyExpired,
        CancelReason::KeyUnderScoped,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            CancelReason::SubscriptionPaused => "suscripcion_pausada",
            CancelReason::SubscriptionSuspended => "suscripcion_suspendida",
            CancelReason::SubscriptionDeleted => "suscripcion_eliminada",
            CancelReason::KeyRevoked => "clave_revocada",
            CancelReason::KeyExpired => "clave_vencida",
            CancelReason::KeyUnderScoped => "clave_sin_permiso",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        CancelReason::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for CancelReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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
        assert_eq!(names, ["pendiente", "entregada", "fallida", "cancelada"]);
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
    fn every_state_but_pending_is_terminal() {
        assert!(!DeliveryState::Pending.is_terminal());
        assert!(DeliveryState::Delivered.is_terminal());
        assert!(DeliveryState::Failed.is_terminal());
        assert!(DeliveryState::Cancelled.is_terminal());
    }

    #[test]
    fn cancel_reasons_are_the_wire_names() {
        let names: Vec<_> = CancelReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            names,
            [
                "suscripcion_pausada",
                "suscripcion_suspendida",
                "suscripcion_eliminada",
                "clave_revocada",
                "clave_vencida",
                "clave_sin_permiso"
            ]
        );
        for r in CancelReason::ALL {
            assert_eq!(CancelReason::parse(r.as_str()), Some(r));
            assert_eq!(
                serde_json::to_value(r).unwrap(),
                serde_json::json!(r.as_str())
            );
        }
        assert_eq!(CancelReason::parse("pausada"), None);
    }
}
