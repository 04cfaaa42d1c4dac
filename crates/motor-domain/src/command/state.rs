//! A command's status and the one state machine every change goes
//! through: [`step`] takes the current status and a [`Transition`] and
//! answers the next status and the event to append, or refuses. The store
//! turns it into a compare-and-set (`WHERE status = ANY(sources)`), so a
//! transition that is illegal here can never happen in the table.

use std::fmt;

use super::events::CommandEvent;

/// `status`, exactly as the seed's table names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandStatus {
    /// `aceptado`: stored; what every kind but a send is born as.
    Accepted,
    /// `en_cola`: stored and waiting for `next_try`; sends are born so,
    /// and a deferral puts a command back here.
    Queued,
    /// `ejecutando`: an executor claimed it and holds a lease.
    Executing,
    /// `enviado`: the provider's server accepted the message (not
    /// delivered, not read). Terminal.
    Sent,
    /// `completado`: a remote operation or a control command ended well.
    /// Terminal.
    Completed,
    /// `fallido`: it had no effect (`error_code`, `stage`). Terminal.
    Failed,
    /// `ambiguo`: it may or may not have had its effect; Motor never
    /// sends it again by itself. Terminal.
    Ambiguous,
    /// `cancelado`: cancelled before it went out. Terminal.
    Cancelled,
}

impl CommandStatus {
    pub const ALL: [CommandStatus; 8] = [
        CommandStatus::Accepted,
        CommandStatus::Queued,
        CommandStatus::Executing,
        CommandStatus::Sent,
        CommandStatus::Completed,
        CommandStatus::Failed,
        CommandStatus::Ambiguous,
        CommandStatus::Cancelled,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            CommandStatus::Accepted => "aceptado",
            CommandStatus::Queued => "en_cola",
            CommandStatus::Executing => "ejecutando",
            CommandStatus::Sent => "enviado",
            CommandStatus::Completed => "completado",
            CommandStatus::Failed => "fallido",
            CommandStatus::Ambiguous => "ambiguo",
            CommandStatus::Cancelled => "cancelado",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        CommandStatus::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// Whether no transition leaves it.
    pub fn is_terminal(self) -> bool {
        Transition::ALL.iter().all(|t| step(self, *t).is_err())
    }
}

impl fmt::Display for CommandStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `stage`: where a command failed or was left in doubt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// `previa`: it never went out.
    Before,
    /// `servidor`: the provider's server refused it (`server_code`).
    Server,
    /// `frontera`: it may have gone out (`ambiguo`).
    Boundary,
}

impl Stage {
    pub const ALL: [Stage; 3] = [Stage::Before, Stage::Server, Stage::Boundary];

    pub const fn as_str(self) -> &'static str {
        match self {
            Stage::Before => "previa",
            Stage::Server => "servidor",
            Stage::Boundary => "frontera",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Stage::ALL.into_iter().find(|e| e.as_str() == s)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an executor reported (the data each needs is in
/// [`Report`](super::Report); the machine only needs which one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// `enviado`.
    Sent,
    /// `completado`.
    Completed,
    /// `fallido`.
    Failed,
    /// `ambiguo`.
    Ambiguous,
    /// Back to `en_cola` with a `next_try`: the provider asked to wait.
    Deferred,
}

/// Everything that can happen to a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transition {
    /// The app cancels it (`POST /v1/commands/{id}/cancel`).
    Cancel,
    /// An executor takes it, with a lease.
    Claim,
    /// Its executor reports an outcome.
    Report(Outcome),
    /// Its executor's lease ran out before a report.
    LeaseExpired,
    /// Its `expires_at` passed before any executor claimed it.
    Expired,
}

impl Transition {
    pub const ALL: [Transition; 9] = [
        Transition::Cancel,
        Transition::Claim,
        Transition::Report(Outcome::Sent),
        Transition::Report(Outcome::Completed),
        Transition::Report(Outcome::Failed),
        Transition::Report(Outcome::Ambiguous),
        Transition::Report(Outcome::Deferred),
        Transition::LeaseExpired,
        Transition::Expired,
    ];

    /// The statuses it may leave from: the compare-and-set's condition.
    pub fn sources(self) -> Vec<CommandStatus> {
        CommandStatus::ALL
            .into_iter()
            .filter(|s| step(*s, self).is_ok())
            .collect()
    }

    /// The `stage` this transition itself decides (a report of `fallido`
    /// brings its own).
    pub const fn fixed_stage(self) -> Option<Stage> {
        match self {
            Transition::Expired => Some(Stage::Before),
            Transition::LeaseExpired | Transition::Report(Outcome::Ambiguous) => {
                Some(Stage::Boundary)
            }
            _ => None,
        }
    }
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Transition::Cancel => "cancel",
            Transition::Claim => "claim",
            Transition::Report(Outcome::Sent) => "report enviado",
            Transition::Report(Outcome::Completed) => "report completado",
            Transition::Report(Outcome::Failed) => "report fallido",
            Transition::Report(Outcome::Ambiguous) => "report ambiguo",
            Transition::Report(Outcome::Deferred) => "defer",
            Transition::LeaseExpired => "lose its lease",
            Transition::Expired => "expire",
        })
    }
}

/// A legal transition's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub to: CommandStatus,
    /// The event appended in the transaction that makes the change.
    pub event: Option<CommandEvent>,
}

/// A transition the current status does not allow (the API's 409).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a command that is {from} cannot {transition}")]
pub struct IllegalTransition {
    pub from: CommandStatus,
    pub transition: Transition,
}

/// The state machine. Cancel and expiry only before a claim (after it the
/// command may have had an effect outside); reports and the lease's end
/// only while `ejecutando`; nothing leaves a terminal status, so an
/// `ambiguo` command is never sent again by Motor.
pub fn step(from: CommandStatus, transition: Transition) -> Result<Step, IllegalTransition> {
    use CommandStatus as S;
    let open = matches!(from, S::Accepted | S::Queued);
    let executing = from == S::Executing;
    let (legal, to, event) = match transition {
        Transition::Cancel => (open, S::Cancelled, Some(CommandEvent::Cancelled)),
        Transition::Claim => (open, S::Executing, None),
        Transition::Expired => (open, S::Failed, Some(CommandEvent::Failed)),
        Transition::Report(Outcome::Sent) => (executing, S::Sent, Some(CommandEvent::MessageSent)),
        Transition::Report(Outcome::Completed) => (executing, S::Completed, None),
        Transition::Report(Outcome::Failed) => (executing, S::Failed, Some(CommandEvent::Failed)),
        Transition::Report(Outcome::Ambiguous) | Transition::LeaseExpired => {
            (executing, S::Ambiguous, Some(CommandEvent::Ambiguous))
        }
        Transition::Report(Outcome::Deferred) => (executing, S::Queued, None),
    };
    if legal {
        Ok(Step { to, event })
    } else {
        Err(IllegalTransition { from, transition })
    }
}

#[cfg(test)]
mod tests;
