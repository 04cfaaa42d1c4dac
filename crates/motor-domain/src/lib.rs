//! Motor's domain: the envelope, typed ids, `seq`, scopes and the rules that
//! turn user input into values the rest of Motor can trust. Pure: no I/O, no
//! sqlx, rdkafka or axum. The store, the bus and the API build on these types.

pub mod alert;
pub mod apikey;
pub mod delivery;
pub mod destination;
pub mod envelope;
pub mod error;
pub mod event;
pub mod ids;
pub mod ledger;
pub mod operator;
pub mod principal;
pub mod replay;
pub mod scope;
pub mod seal;
pub mod secret;
pub mod settings;
pub mod signature;
pub mod subscription;
pub mod time;

pub use envelope::Envelope;
pub use error::FieldError;
pub use event::{EventType, NewEvent, Origin};
pub use ids::{AppId, EventId, InstanceId};
pub use scope::Scope;

/// Number of outbox shards. The relay locks shards, never single rows, so
/// per-instance order holds however many relay processes run. Changing it
/// re-maps instances to shards: only do so with the outbox drained.
pub const OUTBOX_SHARDS: i32 = 32;

/// Shard of the outbox an instance's records go to.
pub fn outbox_shard(instance: InstanceId) -> i32 {
    // The low bits of both v4 and v7 uuids are random.
    (instance.as_uuid().as_u128() % OUTBOX_SHARDS as u128) as i32
}
