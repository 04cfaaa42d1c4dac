//! motor-receiver's integration tests: the verify tables of each profile,
//! the Standard Webhooks published vectors, the axum extractor and the
//! Postgres inbox (real server: MOTOR_TEST_DATABASE_URL).

mod garbage;
mod mw_v1;
mod standard_webhooks;
mod support;
mod t_v1;

#[cfg(feature = "axum")]
mod extractor;
#[cfg(feature = "sqlx")]
mod inbox;
