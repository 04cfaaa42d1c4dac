//! API key scopes.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    #[serde(rename = "events:write")]
    EventsWrite,
    #[serde(rename = "events:read")]
    EventsRead,
    #[serde(rename = "subscriptions:manage")]
    SubscriptionsManage,
    #[serde(rename = "deliveries:replay")]
    DeliveriesReplay,
    /// Send messages and submit, cancel commands.
    #[serde(rename = "commands:write")]
    CommandsWrite,
    /// Read commands.
    #[serde(rename = "commands:read")]
    CommandsRead,
    /// Claim commands and report their outcomes (an executor).
    #[serde(rename = "commands:execute")]
    CommandsExecute,
}

impl Scope {
    pub const ALL: [Scope; 7] = [
        Scope::EventsWrite,
        Scope::EventsRead,
        Scope::SubscriptionsManage,
        Scope::DeliveriesReplay,
        Scope::CommandsWrite,
        Scope::CommandsRead,
        Scope::CommandsExecute,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::EventsWrite => "events:write",
            Scope::EventsRead => "events:read",
            Scope::SubscriptionsManage => "subscriptions:manage",
            Scope::DeliveriesReplay => "deliveries:replay",
            Scope::CommandsWrite => "commands:write",
            Scope::CommandsRead => "commands:read",
            Scope::CommandsExecute => "commands:execute",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown scope {0:?}; known: events:write, events:read, subscriptions:manage, deliveries:replay, commands:write, commands:read, commands:execute")]
pub struct UnknownScope(pub String);

impl FromStr for Scope {
    type Err = UnknownScope;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| UnknownScope(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for scope in Scope::ALL {
            assert_eq!(scope.as_str().parse::<Scope>().unwrap(), scope);
            assert_eq!(
                serde_json::to_string(&scope).unwrap(),
                format!("\"{}\"", scope.as_str())
            );
        }
        assert!("events:delete".parse::<Scope>().is_err());
    }
}
