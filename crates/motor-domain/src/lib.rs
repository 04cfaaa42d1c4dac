//! Motor's domain: the envelope, typed ids, `seq`, scopes and the rules that
//! turn user input into values the rest of Motor can trust. Pure: no I/O, no
//! sqlx, rdkafka, axum or OpenAPI. Type names are English and their wire
//! spelling (the contract's Spanish) lives in serde renames and `as_str()`;
//! some struct fields still carry the wire's Spanish names (issue 11).
//!
//! Modules, by what they describe:
//! - events and the ledger: `event` (what producers send, parsed), `envelope`
//!   (the one JSON document of an event), `ledger` and `stream` (reading it),
//!   `time` (the contract's timestamps), `ids`;
//! - subscriptions: `subscription` (fields and their rules), `destination`
//!   (webhook URLs, brokers, the allowed-destinations policy), `credentials`,
//!   `secret`, `keyring` and `signature` (signing profiles and keys), `seal`
//!   (secrets at rest);
//! - delivery: `delivery` (states, outcomes, the retry policy and its tiers,
//!   jobs), `contract` (each product's webhook contract as data: envelope,
//!   headers, signing, retry ladder), `outbox` (the topic vocabulary),
//!   `replay`, `reconcile`;
//! - commands: `command` (kinds, the status machine, requests, executors'
//!   reports and the events they append);
//! - operators and callers: `operator` (apps, instances, keys), `apikey`,
//!   `scope`, `principal`, `settings`, `alert`;
//! - `error`: a rule broken by user input, with the field it names.
//!
//! Neighbours: every other crate builds on these types; this crate depends on
//! none of them.

pub mod alert;
pub mod apikey;
pub mod command;
pub mod contract;
pub mod credentials;
pub mod delivery;
pub mod destination;
pub mod envelope;
pub mod error;
pub mod event;
pub mod ids;
pub mod instance_state;
pub mod keyring;
pub mod ledger;
pub mod operator;
pub mod outbox;
pub mod principal;
pub mod read_scope;
pub mod reconcile;
pub mod replay;
pub mod scope;
pub mod seal;
pub mod secret;
pub mod settings;
pub mod signature;
pub mod stream;
pub mod stream_token;
pub mod subscription;
pub mod time;

pub use envelope::Envelope;
pub use error::FieldError;
pub use event::{EventType, NewEvent, Origin};
pub use ids::{AppId, EventId, InstanceId};
pub use outbox::{outbox_shard, OUTBOX_SHARDS};
pub use scope::Scope;
