//! Name resolution, injected: every destination kind asks the [`Resolver`]
//! its [`crate::Destinations`] was made with. Production uses the system's
//! ([`SystemResolver`]); a test passes its own to re-point a name while
//! Motor runs, the way a DNS record changes under a subscription. Every
//! guard judges whatever addresses a resolver answers (blocked, loopback,
//! the app's policy), so no resolver can open a way round them.

use std::{future::Future, io, net::IpAddr, pin::Pin};

/// The answer to one lookup.
pub type Lookup = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>>;

/// Turns a host name into addresses.
pub trait Resolver: Send + Sync {
    /// The addresses of `name`, a host name as the URL spelled it (never an
    /// IP literal; possibly with a trailing dot). An empty answer or an
    /// error is a DNS failure.
    fn lookup(&self, name: &str) -> Lookup;
}

/// The operating system's resolver (`getaddrinfo` through Tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup(&self, name: &str) -> Lookup {
        let name = name.to_owned();
        Box::pin(async move {
            Ok(tokio::net::lookup_host((name.as_str(), 0))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_system_resolver_answers_for_localhost() {
        let ips = SystemResolver.lookup("localhost").await.unwrap();
        assert!(!ips.is_empty());
        assert!(ips.iter().all(|ip| ip.is_loopback()), "{ips:?}");
    }
}
