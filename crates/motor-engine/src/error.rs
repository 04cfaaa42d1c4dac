//! The engine's one error type. Every role logs it and retries; a role
//! ends with one only when it cannot start.

use motor_bus::BusError;
use motor_store::{commands::CommandError, group_commit::GroupCommitError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Postgres(#[from] sqlx::Error),
    /// A command transition of the sweeper failed (a database error: the
    /// sweeper skips commands that changed meanwhile).
    #[error(transparent)]
    Command(#[from] CommandError),
    #[error(transparent)]
    Bus(#[from] BusError),
    /// A group commit this call was part of failed, or its worker stopped
    /// (the batch's error kept as the source).
    #[error("batch failed: {0}")]
    Batch(#[from] GroupCommitError),
    /// Kafka did not acknowledge some records of a relay round.
    #[error("{failed} records not acknowledged: {cause}")]
    NotAcknowledged { failed: usize, cause: String },
    /// A claim lost (its lease ran out and another took the delivery)
    /// before its attempt: the attempt was not made.
    #[error("the claim was lost before its attempt")]
    Lost,
    /// The attempt waited for a read of a value attempts share (settings,
    /// an app, a subscription's signing) that another made, and that read
    /// failed.
    #[error("a read of settings or a subscription this attempt waited for failed")]
    Waited,
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
