//! Addresses that carry an IPv4 address inside an IPv6 one, and the app
//! setting `politica_destinos`.
//!
//! An IPv6 address can reach an IPv4 host through a translator or a
//! tunnel: NAT64 (`64:ff9b::/96`, and the local-use `64:ff9b:1::/48`),
//! 6to4 (`2002::/16`), Teredo (`2001::/32`), and the IPv4-compatible
//! (`::a.b.c.d`) and -mapped (`::ffff:a.b.c.d`) forms. The blocking rules
//! read every IPv4 such an address may stand for ([`embedded_ipv4`]), so
//! `64:ff9b::a9fe:a9fe` is 169.254.169.254 and is refused like it.
//!
//! `politica_destinos` (seed 001): `estandar` (the default) is the
//! allowed-destination lists alone; `publica_https` also requires HTTPS on
//! port 443 to a name or address that is public IPv4 — no private,
//! reserved, loopback or IPv6-only destination, no broker. It is checked
//! when a subscription is created or changed (422 on `url`) and on every
//! connection (the resolved addresses; `destino_bloqueado`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use super::{canonical_ip, CanonicalHost, Destination};
use crate::error::FieldError;

/// Which destinations an app may deliver to, besides its allowed lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize, Deserialize)]
pub enum DestinationPolicy {
    /// The allowed-destination lists, and the addresses always blocked.
    #[default]
    #[serde(rename = "estandar")]
    Standard,
    /// Also: `https` on port 443, and public IPv4 addresses only.
    #[serde(rename = "publica_https")]
    PublicHttps,
}

impl DestinationPolicy {
    pub const fn as_str(self) -> &'static str {
        match self {
            DestinationPolicy::Standard => "estandar",
            DestinationPolicy::PublicHttps => "publica_https",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "estandar" => Some(DestinationPolicy::Standard),
            "publica_https" => Some(DestinationPolicy::PublicHttps),
            _ => None,
        }
    }

    /// Parses the setting as a request sends it; a 422 on `field`.
    pub fn parse_field(s: &str, field: &str) -> Result<Self, FieldError> {
        Self::parse(s)
            .ok_or_else(|| FieldError::invalid(field, "must be estandar or publica_https"))
    }

    /// Whether connections may only go to public IPv4 addresses.
    pub const fn public_ipv4_only(self) -> bool {
        matches!(self, DestinationPolicy::PublicHttps)
    }

    /// What can be told from the destination alone: under `publica_https`
    /// a webhook over `https` on port 443 whose host is a name or a public
    /// IPv4 address. A 422 on `field` otherwise.
    pub fn check(self, destination: &Destination, field: &str) -> Result<(), FieldError> {
        if self == DestinationPolicy::Standard {
            return Ok(());
        }
        let refuse = |m: &str| Err(FieldError::invalid(field, m));
        let Destination::Webhook(url) = destination else {
            return refuse(
                "the app's politica_destinos (publica_https) admits only https:// webhooks",
            );
        };
        if !url
            .as_str()
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
        {
            return refuse("the app's politica_destinos (publica_https) requires https://");
        }
        if url.port() != 443 {
            return refuse("the app's politica_destinos (publica_https) requires port 443");
        }
        match url.host() {
            CanonicalHost::Ip(ip) if !is_public_ipv4(*ip) => refuse(
                "the app's politica_destinos (publica_https) requires a public IPv4 destination",
            ),
            _ => Ok(()),
        }
    }
}

/// Every IPv4 address an IPv6 address may stand for: the mapped and
/// compatible forms, NAT64 (the well-known /96, and the local-use /48 at
/// each prefix length RFC 6052 allows), 6to4, and Teredo's server and
/// (obfuscated) client. Empty for an IPv4 address and for other IPv6.
pub fn embedded_ipv4(ip: IpAddr) -> Vec<Ipv4Addr> {
    let IpAddr::V6(v6) = ip else {
        return Vec::new();
    };
    let o = v6.octets();
    let s = v6.segments();
    let last = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    let mut out = Vec::new();
    if let Some(v4) = v6.to_ipv4_mapped() {
        out.push(v4);
    }
    // IPv4-compatible (deprecated): ::a.b.c.d, except :: and ::1.
    if s[..6].iter().all(|&x| x == 0) && u32::from(last) > 1 {
        out.push(last);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        out.push(last);
    }
    if s[..3] == [0x64, 0xff9b, 1] {
        // RFC 6052 §2.2: /48, /56, /64 skip octet 8 (u); /96 is the tail.
        out.push(Ipv4Addr::new(o[6], o[7], o[9], o[10]));
        out.push(Ipv4Addr::new(o[7], o[9], o[10], o[11]));
        out.push(Ipv4Addr::new(o[9], o[10], o[11], o[12]));
        out.push(last);
    }
    if s[0] == 0x2002 {
        out.push(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    if s[0] == 0x2001 && s[1] == 0 {
        out.push(Ipv4Addr::new(o[4], o[5], o[6], o[7]));
        out.push(Ipv4Addr::from(!u32::from(last)));
    }
    out
}

/// Loopback, also when reached through a translator or a tunnel.
pub fn is_loopback_ip(ip: IpAddr) -> bool {
    canonical_ip(ip).is_loopback() || embedded_ipv4(ip).iter().any(Ipv4Addr::is_loopback)
}

/// A public IPv4 address: not private, shared (CGNAT), loopback,
/// link-local, documentation, benchmarking, multicast, reserved or
/// "this network". An IPv6 address — whatever it embeds — is not.
pub fn is_public_ipv4(ip: IpAddr) -> bool {
    let IpAddr::V4(v4) = canonical_ip(ip) else {
        return false;
    };
    let [a, b, c, _] = v4.octets();
    !(v4.is_private()
        || v4.is_loopback()
        || v4.is_link_local()
        || v4.is_broadcast()
        || v4.is_documentation()
        || v4.is_multicast()
        || a == 0
        || a >= 240
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 88 && c == 99)
        || (a == 198 && (18..20).contains(&b)))
}

/// Whether `ip` may be connected to under `policy` (the blocked addresses
/// aside, which no policy admits).
pub fn policy_admits(policy: DestinationPolicy, ip: IpAddr) -> bool {
    !policy.public_ipv4_only() || is_public_ipv4(ip)
}

/// The IPv6 metadata endpoint of AWS (fd00:ec2::254).
pub(super) const AWS_V6_METADATA: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);
