//! The application's one error: what went wrong in terms every door can
//! answer (the HTTP API maps it to a status and code in one `From`, the
//! CLI prints that same body). Database text never travels in it beyond
//! `Internal`'s source, which is logged, not shown.

use motor_domain::FieldError;
use motor_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Input that breaks a rule, with the field at fault.
    #[error(transparent)]
    Invalid(#[from] FieldError),
    /// The caller may not touch this (a key restricted to other instances).
    #[error("{0}")]
    Forbidden(String),
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The request contradicts the current state (a deleted subscription,
    /// a stale version, an Idempotency-Key used with another request).
    #[error("{0}")]
    Conflict(String),
    /// The database cannot take the request now (its pool is exhausted or
    /// it is unreachable): worth retrying after a moment.
    #[error("the database is busy or unreachable")]
    Unavailable,
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl AppError {
    pub fn internal(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        AppError::Internal(Box::new(e))
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        AppError::Forbidden(message.into())
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        AppError::Conflict(message.into())
    }

    /// A database failure seen through a shared reference (a group
    /// commit's one error answers every caller of its batch).
    pub fn database(e: &sqlx::Error) -> Self {
        if motor_store::out_of_reach(e) {
            AppError::Unavailable
        } else {
            AppError::internal(std::io::Error::other(e.to_string()))
        }
    }

    /// [`database`](Self::database) for any store error seen by reference.
    pub fn store(e: &StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => AppError::NotFound(what),
            StoreError::Conflict(what) => AppError::Conflict(what.clone()),
            StoreError::Database(e) => AppError::database(e),
        }
    }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => AppError::NotFound(what),
            StoreError::Conflict(what) => AppError::Conflict(what),
            StoreError::Database(e) => e.into(),
        }
    }
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        if motor_store::out_of_reach(&e) {
            AppError::Unavailable
        } else {
            AppError::internal(e)
        }
    }
}

pub type Result<T, E = AppError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_out_of_reach_is_unavailable_and_anything_else_internal() {
        assert!(matches!(
            AppError::from(StoreError::Database(sqlx::Error::PoolTimedOut)),
            AppError::Unavailable
        ));
        assert!(matches!(
            AppError::from(sqlx::Error::Io(std::io::Error::from(
                std::io::ErrorKind::ConnectionRefused
            ))),
            AppError::Unavailable
        ));
        assert!(matches!(
            AppError::database(&sqlx::Error::RowNotFound),
            AppError::Internal(_)
        ));
        let leaked = AppError::from(sqlx::Error::Protocol("relation \"secret\"".into()));
        assert_eq!(leaked.to_string(), "internal error");
    }

    #[test]
    fn store_errors_keep_their_meaning() {
        assert!(matches!(
            AppError::from(StoreError::NotFound("app")),
            AppError::NotFound("app")
        ));
        let e = AppError::store(&StoreError::Conflict("taken".into()));
        assert!(matches!(e, AppError::Conflict(ref m) if m == "taken"));
        assert_eq!(AppError::NotFound("app").to_string(), "app not found");
    }
}
