//! Typed ids. Each wraps a uuid so an instance id cannot be passed where an
//! app id is expected.

/// Declares a uuid newtype with the same shape everywhere: serde as the
/// bare uuid, `Display`/`FromStr` as the uuid's text, `new()` time-ordered
/// (v7), and an OpenAPI schema of a uuid string. Used for every id type.
macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord,
            ::serde::Serialize, ::serde::Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(::uuid::Uuid);

        impl $name {
            /// A new, time-ordered id.
            pub fn new() -> Self {
                Self(::uuid::Uuid::now_v7())
            }

            pub const fn from_uuid(uuid: ::uuid::Uuid) -> Self {
                Self(uuid)
            }

            pub const fn as_uuid(&self) -> &::uuid::Uuid {
                &self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                self.0.fmt(f)
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = ::uuid::Error;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                ::uuid::Uuid::parse_str(s).map(Self)
            }
        }

        impl From<$name> for ::uuid::Uuid {
            fn from(id: $name) -> ::uuid::Uuid {
                id.0
            }
        }
    };
}

pub(crate) use uuid_id;

uuid_id!(
    /// An application: the tenant that owns instances, keys and subscriptions.
    AppId
);
uuid_id!(
    /// An instance: one ledger with its own gapless `seq`.
    InstanceId
);
uuid_id!(
    /// An event in the ledger; the same on every delivery and replay of it.
    EventId
);
