//! The application layer against a real Postgres: each test makes its own
//! database (`motor_test_app_*`, dropped with the others by scripts/test)
//! and calls the operations as every door does.

mod admin;
mod commands;
mod events;
mod subscriptions;

use motor_app::apps::{self, NewApp};
use motor_domain::operator::App;
use motor_store::Pool;

/// A fresh, migrated database on `MOTOR_TEST_DATABASE_URL`.
pub async fn db() -> Pool {
    let server = std::env::var("MOTOR_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into());
    let url = format!("{server}/motor_test_app_{}", uuid::Uuid::new_v4().simple());
    motor_store::migrate(&url)
        .await
        .expect("postgres must be running (see scripts/services)");
    motor_store::connect(&url, 5).await.unwrap()
}

/// An app that may deliver to loopback.
pub async fn app(pool: &Pool, name: &str) -> App {
    let input = NewApp {
        name: name.into(),
        allowed_destinations: vec!["127.0.0.1".into()],
        destination_policy: None,
        contract: None,
    };
    apps::create(pool, input).await.unwrap()
}
