//! Motor's domain: the envelope, typed ids, `seq`, scopes and the rules that
//! turn user input into values the rest of Motor can trust. Pure: no I/O, no
//! sqlx, rdkafka or axum. The store, the bus and the API build on these types.

pub mod alert;
pub mod apikey;
pub mod credentials;
pub mod delivery;
pub mod destination;
pub mod envelope;
pub mod error;
pub mod event;
pub mod ids;
pub mod keyring;
pub mod ledger;
pub mod operator;
pub mod outbox;
pub mod principal;
pub mod reconcile;
pub mod replay;
pub mod scope;
pub mod seal;
pub mod secret;
pub mod settings;
pub mod signature;
pub mod stream;
pub mod subscription;
pub mod time;

pub use envelope::Envelope;
pub use error::FieldError;
pub use event::{EventType, NewEvent, Origin};
pub use ids::{AppId, EventId, InstanceId};
pub use outbox::{outbox_shard, OUTBOX_SHARDS};
pub use scope::Scope;
