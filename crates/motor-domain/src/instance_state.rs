//! An instance's connection state as its executor reports it
//! (`POST /v1/executor/instances/{id}/state`), and the `state.changed`
//! event a change appends. The seed names the event and the control
//! commands whose effect it shows (reconectar, desconectar, pausar,
//! reanudar, desvincular, archivar) but no list of states: this closed
//! list is Motor's, one state per outcome of those commands plus the
//! link in progress.
//!
//! A relink (the instance was linked again, perhaps to another number)
//! bumps the instance's `generation`: commands sent with an older
//! `generacion_esperada` are refused from then on, and events keep the
//! generation they were born under.

use serde_json::{Map, Value};

use crate::{
    error::FieldError,
    event::{EventType, NewEvent, Origin},
};

/// The event a change of state appends.
pub const STATE_CHANGED: &str = "state.changed";

/// Longest `motivo`, in characters.
pub const MAX_REASON_CHARS: usize = 300;

/// Where an instance's link to its provider stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InstanceState {
    /// Linking: waiting for the phone (a QR code, a pairing code).
    Linking,
    /// Connected and working.
    Connected,
    /// Linked but not connected (a network cut, `desconectar`).
    Disconnected,
    /// Connected, its traffic held (`pausar`; `reanudar` leaves it).
    Paused,
    /// The link is gone (`desvincular`, or the phone removed it): a new
    /// link is a relink.
    Unlinked,
    /// Retired (`archivar`).
    Archived,
}

impl InstanceState {
    pub const ALL: [InstanceState; 6] = [
        InstanceState::Linking,
        InstanceState::Connected,
        InstanceState::Disconnected,
        InstanceState::Paused,
        InstanceState::Unlinked,
        InstanceState::Archived,
    ];

    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            InstanceState::Linking => "vinculando",
            InstanceState::Connected => "conectada",
            InstanceState::Disconnected => "desconectada",
            InstanceState::Paused => "pausada",
            InstanceState::Unlinked => "desvinculada",
            InstanceState::Archived => "archivada",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == s)
    }
}

impl std::fmt::Display for InstanceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state report's fields as they arrived.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawStateReport<'a> {
    /// `estado`.
    pub state: Option<&'a str>,
    /// `revinculada`: the instance was linked again (a new session,
    /// perhaps another number).
    pub relinked: Option<bool>,
    /// `motivo`.
    pub reason: Option<&'a str>,
}

/// A valid state report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateReport {
    pub state: InstanceState,
    /// Bumps the instance's `generation`; only with `conectada` (a link
    /// ends connected).
    pub relinked: bool,
    pub reason: Option<String>,
}

impl StateReport {
    pub fn parse(raw: RawStateReport<'_>) -> Result<Self, FieldError> {
        let state = raw
            .state
            .ok_or_else(|| FieldError::invalid("estado", "is required"))?;
        let state = InstanceState::parse(state).ok_or_else(|| {
            FieldError::invalid(
                "estado",
                "must be vinculando, conectada, desconectada, pausada, desvinculada or archivada",
            )
        })?;
        let relinked = raw.relinked.unwrap_or(false);
        if relinked && state != InstanceState::Connected {
            return Err(FieldError::invalid(
                "revinculada",
                "a relink ends conectada; report the state it reached",
            ));
        }
        let reason = raw
            .reason
            .map(|r| {
                let chars = r.chars().count();
                if chars == 0 || chars > MAX_REASON_CHARS || r.chars().any(char::is_control) {
                    Err(FieldError::invalid(
                        "motivo",
                        format!(
                            "must be 1 to {MAX_REASON_CHARS} characters, no control characters"
                        ),
                    ))
                } else {
                    Ok(r.to_owned())
                }
            })
            .transpose()?;
        Ok(Self {
            state,
            relinked,
            reason,
        })
    }

    /// Whether this report changes anything for an instance now in
    /// `current`: a relink always does, else only another state.
    pub fn changes(&self, current: Option<InstanceState>) -> bool {
        self.relinked || current != Some(self.state)
    }

    /// The `state.changed` event: `data` = `estado`, `estado_anterior`
    /// (left out when Motor knew none), `revinculada`, `motivo` (when
    /// given); `command_id` when a control command caused it. Origin
    /// `live`: it happened at the provider.
    pub fn to_event(&self, previous: Option<InstanceState>, command_id: Option<&str>) -> NewEvent {
        let mut data = Map::new();
        data.insert("estado".into(), self.state.as_str().into());
        if let Some(previous) = previous {
            data.insert("estado_anterior".into(), previous.as_str().into());
        }
        data.insert("revinculada".into(), self.relinked.into());
        if let Some(reason) = &self.reason {
            data.insert("motivo".into(), reason.clone().into());
        }
        if let Some(id) = command_id {
            data.insert("command_id".into(), id.into());
        }
        NewEvent {
            event_type: EventType::parse(STATE_CHANGED).expect("a valid event type"),
            data: Value::Object(data),
            occurred_at: None,
            origin: Origin::Live,
            command_id: command_id.map(str::to_owned),
            source_id: None,
            environment: Default::default(),
            order_key: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn raw(state: &str) -> RawStateReport<'_> {
        RawStateReport {
            state: Some(state),
            ..Default::default()
        }
    }

    #[test]
    fn every_state_comes_back_from_its_spelling() {
        for state in InstanceState::ALL {
            assert_eq!(InstanceState::parse(state.as_str()), Some(state));
        }
        for bad in ["", "Conectada", "conectado", "online"] {
            assert_eq!(InstanceState::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn bad_reports_name_their_field() {
        let cases: [(RawStateReport<'_>, &str); 5] = [
            (RawStateReport::default(), "estado"),
            (raw("online"), "estado"),
            (
                RawStateReport {
                    relinked: Some(true),
                    ..raw("pausada")
                },
                "revinculada",
            ),
            (
                RawStateReport {
                    reason: Some(""),
                    ..raw("pausada")
                },
                "motivo",
            ),
            (
                RawStateReport {
                    reason: Some("a\nb"),
                    ..raw("pausada")
                },
                "motivo",
            ),
        ];
        for (raw, field) in cases {
            assert_eq!(StateReport::parse(raw).unwrap_err().field, field, "{raw:?}");
        }
    }

    #[test]
    fn only_a_relink_or_another_state_is_a_change() {
        let same = StateReport::parse(raw("conectada")).unwrap();
        assert!(!same.changes(Some(InstanceState::Connected)));
        assert!(same.changes(Some(InstanceState::Paused)));
        assert!(same.changes(None));
        let relink = StateReport::parse(RawStateReport {
            relinked: Some(true),
            ..raw("conectada")
        })
        .unwrap();
        assert!(relink.changes(Some(InstanceState::Connected)));
    }

    #[test]
    fn the_event_tells_the_change() {
        let report = StateReport::parse(RawStateReport {
            reason: Some("el teléfono se desvinculó"),
            ..raw("desvinculada")
        })
        .unwrap();
        let event = report.to_event(Some(InstanceState::Connected), Some("c1"));
        assert_eq!(event.event_type.as_str(), "state.changed");
        assert_eq!(event.origin, Origin::Live);
        assert_eq!(event.command_id.as_deref(), Some("c1"));
        assert_eq!(
            event.data,
            json!({"estado": "desvinculada", "estado_anterior": "conectada",
                   "revinculada": false, "motivo": "el teléfono se desvinculó",
                   "command_id": "c1"})
        );
        let first = report.to_event(None, None);
        assert_eq!(
            first.data,
            json!({"estado": "desvinculada", "revinculada": false,
                   "motivo": "el teléfono se desvinculó"})
        );
    }
}
