//! The ledger events a command's life appends, and their `data`. Each is
//! written in the transaction that makes its transition, with the
//! command's id in the envelope's `command_id` and in `data`, and
//! `origin: operator` (the seed: "un comando del motor").

use serde_json::{Map, Value};

use super::{CommandId, CommandKind, Stage};
use crate::{
    event::{EventType, NewEvent, Origin},
    time::{self, Timestamp},
};

/// An event a command's transition appends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandEvent {
    /// `command.accepted`: a send or a remote operation was stored.
    Accepted,
    /// `message.sent`: the provider's server accepted a send.
    MessageSent,
    /// `command.failed`: it had no effect.
    Failed,
    /// `command.ambiguous`: it may or may not have had its effect.
    Ambiguous,
    /// `command.cancelled`: the app cancelled it before it went out.
    Cancelled,
}

impl CommandEvent {
    /// The event's `type`.
    pub const fn type_name(self) -> &'static str {
        match self {
            CommandEvent::Accepted => "command.accepted",
            CommandEvent::MessageSent => "message.sent",
            CommandEvent::Failed => "command.failed",
            CommandEvent::Ambiguous => "command.ambiguous",
            CommandEvent::Cancelled => "command.cancelled",
        }
    }

    /// The event for `facts`: `data` carries `command_id`, `tipo` and
    /// whichever of the facts are known (absent ones are left out, not
    /// `null`). `message.sent` happened when the server accepted the send
    /// (`occurred_at` = `aceptado_en`); the others when Motor recorded them.
    pub fn to_event(self, facts: &EventFacts<'_>) -> NewEvent {
        let mut data = Map::new();
        data.insert("command_id".into(), facts.command_id.to_string().into());
        data.insert("tipo".into(), facts.kind.as_str().into());
        let mut put = |name: &str, value: Option<Value>| {
            if let Some(value) = value {
                data.insert(name.into(), value);
            }
        };
        let text = |s: Option<&str>| s.map(|s| Value::String(s.to_owned()));
        put("chat", text(facts.chat));
        put("correlation_id", text(facts.correlation_id));
        put("provider_message_id", text(facts.provider_message_id));
        put(
            "aceptado_en",
            facts.accepted_at.map(|t| time::format(&t).into()),
        );
        put("error_code", text(facts.error_code));
        put("stage", facts.stage.map(|s| s.as_str().into()));
        put("server_code", text(facts.server_code));
        NewEvent {
            event_type: EventType::parse(self.type_name()).expect("a valid event type"),
            data: Value::Object(data),
            occurred_at: match self {
                CommandEvent::MessageSent => facts.accepted_at,
                _ => None,
            },
            origin: Origin::Operator,
            command_id: Some(facts.command_id.to_string()),
            source_id: None,
            environment: Default::default(),
            order_key: None,
        }
    }
}

/// What an event can say about its command.
#[derive(Debug, Clone, Copy)]
pub struct EventFacts<'a> {
    pub command_id: CommandId,
    pub kind: CommandKind,
    /// The command's `chat`, or for `message.sent` the one the executor
    /// reported (the provider's spelling of the destination).
    pub chat: Option<&'a str>,
    pub correlation_id: Option<&'a str>,
    pub provider_message_id: Option<&'a str>,
    pub accepted_at: Option<Timestamp>,
    pub error_code: Option<&'a str>,
    pub stage: Option<Stage>,
    pub server_code: Option<&'a str>,
}

impl<'a> EventFacts<'a> {
    /// Facts with only the command's identity.
    pub fn of(command_id: CommandId, kind: CommandKind) -> Self {
        Self {
            command_id,
            kind,
            chat: None,
            correlation_id: None,
            provider_message_id: None,
            accepted_at: None,
            error_code: None,
            stage: None,
            server_code: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn data_cites_the_command_and_leaves_unknown_facts_out() {
        let id = CommandId::new();
        let event = CommandEvent::Cancelled.to_event(&EventFacts::of(id, CommandKind::Pause));
        assert_eq!(event.event_type.as_str(), "command.cancelled");
        assert_eq!(event.origin, Origin::Operator);
        assert_eq!(event.command_id, Some(id.to_string()));
        assert_eq!(
            event.data,
            json!({"command_id": id.to_string(), "tipo": "pausar"})
        );
        assert_eq!(event.occurred_at, None);
    }

    #[test]
    fn message_sent_happened_when_the_server_accepted_it() {
        let id = CommandId::new();
        let at = time::parse("2026-10-24T15:10:01Z").unwrap();
        let facts = EventFacts {
            chat: Some("5491100000000@s.whatsapp.net"),
            provider_message_id: Some("wamid.1"),
            accepted_at: Some(at),
            ..EventFacts::of(id, CommandKind::Message)
        };
        let event = CommandEvent::MessageSent.to_event(&facts);
        assert_eq!(event.event_type.as_str(), "message.sent");
        assert_eq!(event.occurred_at, Some(at));
        assert_eq!(
            event.data,
            json!({
                "command_id": id.to_string(),
                "tipo": "mensaje",
                "chat": "5491100000000@s.whatsapp.net",
                "provider_message_id": "wamid.1",
                "aceptado_en": "2026-10-24T15:10:01Z",
            })
        );
    }

    #[test]
    fn every_event_type_parses() {
        for e in [
            CommandEvent::Accepted,
            CommandEvent::MessageSent,
            CommandEvent::Failed,
            CommandEvent::Ambiguous,
            CommandEvent::Cancelled,
        ] {
            let event = e.to_event(&EventFacts {
                error_code: Some("x"),
                stage: Some(Stage::Server),
                server_code: Some("131026"),
                ..EventFacts::of(CommandId::new(), CommandKind::Groups)
            });
            assert_eq!(event.event_type.as_str(), e.type_name());
            assert_eq!(event.data["stage"], "servidor");
        }
    }
}
