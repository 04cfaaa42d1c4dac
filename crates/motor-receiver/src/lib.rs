//! Receive Motor webhooks: verify the signature of
//! each request, parse the event, and apply it exactly once.
//!
//! Motor delivers every event at least once, in order per instance, signed
//! with the subscription's secret under one of three profiles ([`Profile`]):
//! `mw-v1` (Motor's `X-MW-*` headers), `t-v1` (one `t=…,v1=…` header) and
//! `standard-webhooks`. This crate gives you:
//!
//! - [`mw_v1::verify`], [`t_v1::verify`], [`standard_webhooks::verify`]
//!   (or [`Profile::verify`] / [`Verifier`]): constant-time, every
//!   signature of a rotation tried, ±300 s symmetric window, a repeated
//!   signature header refused. Each [`VerifyError`] names the status to
//!   answer: 408 for a stale timestamp (Motor retries), 401 otherwise.
//! - feature `axum` (default): the [`Webhook`] extractor, which answers
//!   408/401 by itself.
//! - feature `sqlx` (default): the Postgres [`Inbox`], which records each
//!   `event_id` under a UNIQUE key in the same transaction as your effect
//!   and tells you to answer 204 after the commit, 204 to a duplicate
//!   (without running the effect) and 500 when anything failed.
//!
//! With `default-features = false` only verification is left: no tokio,
//! axum or sqlx.
//!
//! # A complete receiver
//!
//! ```no_run
//! use axum::{extract::{FromRef, State}, http::StatusCode, routing::post, Router};
//! use motor_receiver::{Inbox, Profile, Secret, Verifier, Webhook};
//!
//! #[derive(Clone, FromRef)]
//! struct App { verifier: Verifier, inbox: Inbox }
//!
//! async fn receive(State(inbox): State<Inbox>, webhook: Webhook) -> StatusCode {
//!     let event = &webhook.envelope;
//!     let applied = inbox.receive(event, async |tx| {
//!         sqlx::query("INSERT INTO messages (instance_id, seq, data) VALUES ($1, $2, $3)")
//!             .bind(event.instance_id).bind(event.seq).bind(event.data.to_string())
//!             .execute(tx).await.map(drop)
//!     });
//!     applied.await.status() // 204 once committed or already seen, 500 if not kept
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let env = |name| std::env::var(name);
//!     let pool = sqlx::postgres::PgPoolOptions::new().max_connections(3)
//!         .connect(&env("DATABASE_URL")?).await?;
//!     let inbox = Inbox::new(pool, "crm");
//!     inbox.create().await?; // CREATE TABLE IF NOT EXISTS motor_inbox …
//!     // During a rotation, give both secrets (key id, value).
//!     let secret = Secret::with_key_id(env("MOTOR_KEY_ID")?, env("MOTOR_WEBHOOK_SECRET")?);
//!     let verifier = Verifier::new(Profile::MwV1, [secret])?;
//!     let app = Router::new().route("/webhooks/motor", post(receive))
//!         .with_state(App { verifier, inbox });
//!     let listener = tokio::net::TcpListener::bind("0.0.0.0:8090").await?;
//!     axum::serve(listener, app).await?;
//!     Ok(())
//! }
//! ```
//!
//! Without axum, call the verifier with the raw body and the headers
//! (an [`http::HeaderMap`] or a list of name/value pairs):
//!
//! ```
//! use std::time::SystemTime;
//! use motor_receiver::{Profile, Secret};
//!
//! let headers = [("X-MW-Signature", "t=1,v1=00")];
//! let err = Profile::TV1
//!     .verify(&headers, b"{}", &[Secret::new("whsec_x")], SystemTime::now())
//!     .unwrap_err();
//! assert_eq!(err.status().as_u16(), 401);
//! ```

mod envelope;
mod error;
mod headers;
mod profile;
mod secret;
mod verify;

pub mod mw_v1;
pub mod standard_webhooks;
pub mod t_v1;

#[cfg(feature = "axum")]
mod axum;
#[cfg(feature = "sqlx")]
mod inbox;

#[cfg(feature = "axum")]
pub use crate::axum::{Webhook, WebhookRejection};
#[cfg(feature = "sqlx")]
pub use crate::inbox::{Inbox, InboxError, Received, SCHEMA as INBOX_SCHEMA};
pub use crate::{
    envelope::Envelope,
    error::{InvalidSecret, VerifyError},
    headers::Headers,
    profile::{Profile, Verified, TOLERANCE_SECS},
    secret::{Secret, SECRET_PREFIX},
    verify::Verifier,
};
/// The sqlx this crate's inbox is built on, for the effect's queries.
#[cfg(feature = "sqlx")]
pub use sqlx;
