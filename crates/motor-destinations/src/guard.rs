//! The connect-time address check the broker kinds share (the webhook's
//! resolver does the same inside reqwest): a name is resolved here, and
//! any answer containing a blocked or loopback address is refused whole, so
//! a broker is only ever reached on an address the allowed lists could
//! name. A literal IP in the URL passed the lists already; only a blocked
//! one is refused.

use std::net::{IpAddr, SocketAddr};

use motor_domain::{
    delivery::TransportFailure,
    destination::{canonical_ip, is_blocked_ip, is_loopback_ip, CanonicalHost},
};

use crate::resolve::Resolver;

/// The addresses to connect to for `host:port`, checked; a name is asked of
/// `resolver`.
pub(crate) async fn resolve(
    resolver: &dyn Resolver,
    host: &CanonicalHost,
    port: u16,
) -> Result<Vec<SocketAddr>, TransportFailure> {
    match host {
        CanonicalHost::Ip(ip) => {
            if is_blocked_ip(*ip) {
                return Err(TransportFailure::DestinationBlocked);
            }
            Ok(vec![SocketAddr::new(*ip, port)])
        }
        CanonicalHost::Domain(name) => {
            let addrs: Vec<SocketAddr> = resolver
                .lookup(name)
                .await
                .map_err(|_| TransportFailure::Dns)?
                .into_iter()
                .map(|ip| SocketAddr::new(canonical_ip(ip), port))
                .collect();
            if addrs.is_empty() {
                return Err(TransportFailure::Dns);
            }
            if addrs.iter().any(|a| refused_for_a_name(a.ip())) {
                return Err(TransportFailure::DestinationBlocked);
            }
            Ok(addrs)
        }
    }
}

fn refused_for_a_name(ip: IpAddr) -> bool {
    let ip = canonical_ip(ip);
    is_blocked_ip(ip) || is_loopback_ip(ip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::{Lookup, SystemResolver};

    #[tokio::test]
    async fn loopback_only_by_literal_ip() {
        let name = CanonicalHost::Domain("localhost".into());
        assert_eq!(
            resolve(&SystemResolver, &name, 5672).await,
            Err(TransportFailure::DestinationBlocked)
        );
        let ip = CanonicalHost::Ip("127.0.0.1".parse().unwrap());
        assert_eq!(resolve(&SystemResolver, &ip, 5672).await.unwrap().len(), 1);
        let metadata = CanonicalHost::Ip("169.254.169.254".parse().unwrap());
        assert_eq!(
            resolve(&SystemResolver, &metadata, 5672).await,
            Err(TransportFailure::DestinationBlocked)
        );
    }

    /// Answers every name with the same addresses.
    struct Fixed(Vec<IpAddr>);

    impl Resolver for Fixed {
        fn lookup(&self, _: &str) -> Lookup {
            let ips = self.0.clone();
            Box::pin(async move { Ok(ips) })
        }
    }

    #[tokio::test]
    async fn an_injected_answer_is_judged_like_the_systems() {
        let name = CanonicalHost::Domain("broker.example".into());
        let public = Fixed(vec!["203.0.113.7".parse().unwrap()]);
        assert_eq!(
            resolve(&public, &name, 5672).await,
            Ok(vec!["203.0.113.7:5672".parse().unwrap()])
        );
        // Cloud metadata through NAT64: refused whole, with the public one.
        let mixed = Fixed(vec![
            "203.0.113.7".parse().unwrap(),
            "64:ff9b::a9fe:a9fe".parse().unwrap(),
        ]);
        assert_eq!(
            resolve(&mixed, &name, 5672).await,
            Err(TransportFailure::DestinationBlocked)
        );
        assert_eq!(
            resolve(&Fixed(vec![]), &name, 5672).await,
            Err(TransportFailure::Dns)
        );
    }
}
