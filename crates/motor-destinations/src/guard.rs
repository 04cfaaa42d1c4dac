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

/// The addresses to connect to for `host:port`, checked.
pub(crate) async fn resolve(
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
            let addrs: Vec<SocketAddr> = match crate::hosts::lookup(name) {
                Some(ips) => ips
                    .into_iter()
                    .map(|ip| SocketAddr::new(canonical_ip(ip), port))
                    .collect(),
                None => tokio::net::lookup_host((name.as_str(), port))
                    .await
                    .map_err(|_| TransportFailure::Dns)?
                    .map(|a| SocketAddr::new(canonical_ip(a.ip()), a.port()))
                    .collect(),
            };
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

    #[tokio::test]
    async fn loopback_only_by_literal_ip() {
        let name = CanonicalHost::Domain("localhost".into());
        assert_eq!(
            resolve(&name, 5672).await,
            Err(TransportFailure::DestinationBlocked)
        );
        let ip = CanonicalHost::Ip("127.0.0.1".parse().unwrap());
        assert_eq!(resolve(&ip, 5672).await.unwrap().len(), 1);
        let metadata = CanonicalHost::Ip("169.254.169.254".parse().unwrap());
        assert_eq!(
            resolve(&metadata, 5672).await,
            Err(TransportFailure::DestinationBlocked)
        );
    }
}
