//! The closed list of command kinds (`tipo`) and what each kind decides:
//! whether it appends `command.accepted`, and the status it is born with.

use std::fmt;

use super::state::CommandStatus;

/// A command's `tipo`. The list is closed: an unknown `tipo` is refused
/// with 422 rather than handed to an executor that cannot run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandKind {
    /// `mensaje`: a send (`chat` + `contenido`).
    Message,
    /// `grupos`: an operation on groups (join, leave, create…).
    Groups,
    /// `canales`: an operation on channels.
    Channels,
    /// `perfil`: the instance's own profile.
    Profile,
    /// `etiquetas`: labels.
    Labels,
    /// `llamadas`: calls (reject one, …).
    Calls,
    /// `historial`: history (request a sync, …).
    History,
    /// `reconectar`.
    Reconnect,
    /// `desconectar`.
    Disconnect,
    /// `pausar`.
    Pause,
    /// `reanudar`.
    Resume,
    /// `desvincular`: unlink the device (a new link bumps `generation`).
    Unlink,
    /// `archivar`.
    Archive,
}

/// The three families of kinds, which is all the rest of Motor needs to
/// know about a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindClass {
    /// A send: born `en_cola`, appends `command.accepted`, ends `enviado`.
    Send,
    /// A remote operation: born `aceptado`, appends `command.accepted`,
    /// ends `completado`.
    Remote,
    /// Instance control: born `aceptado`, appends no `command.accepted`
    /// (its effect is a `state.changed`), ends `completado`.
    Control,
}

impl CommandKind {
    pub const ALL: [CommandKind; 13] = [
        CommandKind::Message,
        CommandKind::Groups,
        CommandKind::Channels,
        CommandKind::Profile,
        CommandKind::Labels,
        CommandKind::Calls,
        CommandKind::History,
        CommandKind::Reconnect,
        CommandKind::Disconnect,
        CommandKind::Pause,
        CommandKind::Resume,
        CommandKind::Unlink,
        CommandKind::Archive,
    ];

    /// The wire spelling (`tipo`).
    pub const fn as_str(self) -> &'static str {
        match self {
            CommandKind::Message => "mensaje",
            CommandKind::Groups => "grupos",
            CommandKind::Channels => "canales",
            CommandKind::Profile => "perfil",
            CommandKind::Labels => "etiquetas",
            CommandKind::Calls => "llamadas",
            CommandKind::History => "historial",
            CommandKind::Reconnect => "reconectar",
            CommandKind::Disconnect => "desconectar",
            CommandKind::Pause => "pausar",
            CommandKind::Resume => "reanudar",
            CommandKind::Unlink => "desvincular",
            CommandKind::Archive => "archivar",
        }
    }

    /// The kind a `tipo` names, exactly as spelled (no trimming, no case
    /// folding: the stored `tipo` is what the fingerprint compares).
    pub fn parse(s: &str) -> Option<Self> {
        CommandKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub const fn class(self) -> KindClass {
        match self {
            CommandKind::Message => KindClass::Send,
            CommandKind::Groups
            | CommandKind::Channels
            | CommandKind::Profile
            | CommandKind::Labels
            | CommandKind::Calls
            | CommandKind::History => KindClass::Remote,
            CommandKind::Reconnect
            | CommandKind::Disconnect
            | CommandKind::Pause
            | CommandKind::Resume
            | CommandKind::Unlink
            | CommandKind::Archive => KindClass::Control,
        }
    }

    /// Whether storing it appends `command.accepted` in the same
    /// transaction (sends and remote operations do, control does not).
    pub const fn appends_accepted(self) -> bool {
        !matches!(self.class(), KindClass::Control)
    }

    /// The status it is stored with: `en_cola` for a send (its `next_try`
    /// is its acceptance), `aceptado` for everything else.
    pub const fn initial_status(self) -> CommandStatus {
        match self.class() {
            KindClass::Send => CommandStatus::Queued,
            KindClass::Remote | KindClass::Control => CommandStatus::Accepted,
        }
    }
}

impl fmt::Display for CommandKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_comes_back_from_its_spelling_and_nothing_else_parses() {
        for kind in CommandKind::ALL {
            assert_eq!(CommandKind::parse(kind.as_str()), Some(kind));
        }
        for other in ["", "Mensaje", " mensaje", "grupo", "send", "state.changed"] {
            assert_eq!(CommandKind::parse(other), None, "{other:?}");
        }
    }

    #[test]
    fn the_class_decides_the_accepted_event_and_the_birth_status() {
        let table: Vec<(&str, bool, CommandStatus)> = CommandKind::ALL
            .iter()
            .map(|k| (k.as_str(), k.appends_accepted(), k.initial_status()))
            .collect();
        use CommandStatus::{Accepted, Queued};
        assert_eq!(
            table,
            [
                ("mensaje", true, Queued),
                ("grupos", true, Accepted),
                ("canales", true, Accepted),
                ("perfil", true, Accepted),
                ("etiquetas", true, Accepted),
                ("llamadas", true, Accepted),
                ("historial", true, Accepted),
                ("reconectar", false, Accepted),
                ("desconectar", false, Accepted),
                ("pausar", false, Accepted),
                ("reanudar", false, Accepted),
                ("desvincular", false, Accepted),
                ("archivar", false, Accepted),
            ]
        );
    }
}
