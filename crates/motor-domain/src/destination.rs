//! Where Motor may deliver: webhook URLs, broker addresses (`broker`) and
//! the allowed-destinations lists
//! they are checked against. A list entry is `host` (any port) or
//! `host:port` (that port only). Both sides are normalised the same way
//! before comparing — lower case, IDN to punycode, IPv4 in dotted form,
//! IPv4-mapped IPv6 as IPv4, no trailing dot — and then compared for
//! equality: no wildcards, no suffix matching. Cloud metadata addresses are
//! refused even when listed. The connect-time check of the resolved address
//! (by the delivery engine) uses [`is_blocked_ip`] too.

mod broker;
mod policy;

use std::net::{IpAddr, Ipv4Addr};

pub use broker::{
    is_publish_subject, nats_subject_char, parse_amqp, parse_nats, AmqpTarget, NatsTarget, Template,
};
pub use policy::{embedded_ipv4, is_loopback_ip, is_public_ipv4, policy_admits, DestinationPolicy};
use url::{Host, Url};

use crate::error::FieldError;

pub const MIN_URL_CHARS: usize = 8;
pub const MAX_URL_CHARS: usize = 2000;

/// Host names of cloud metadata services, refused whatever the lists say.
const BLOCKED_NAMES: [&str; 5] = [
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
];

/// A host as compared: a lower-case ASCII domain or an IP address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CanonicalHost {
    Domain(String),
    Ip(IpAddr),
}

impl CanonicalHost {
    fn from_host(host: Host<&str>) -> Self {
        match host {
            Host::Domain(d) => CanonicalHost::Domain(d.trim_end_matches('.').to_owned()),
            Host::Ipv4(v4) => CanonicalHost::Ip(IpAddr::V4(v4)),
            Host::Ipv6(v6) => CanonicalHost::Ip(canonical_ip(IpAddr::V6(v6))),
        }
    }

    fn is_blocked(&self) -> bool {
        match self {
            CanonicalHost::Domain(d) => BLOCKED_NAMES.contains(&d.as_str()),
            CanonicalHost::Ip(ip) => is_blocked_ip(*ip),
        }
    }

    fn is_loopback_name(&self) -> bool {
        matches!(self, CanonicalHost::Domain(d) if d == "localhost" || d.ends_with(".localhost"))
    }
}

/// IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is that IPv4 address.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// Addresses Motor never connects to: link-local (where cloud metadata
/// lives: 169.254.0.0/16, fe80::/10), the unspecified addresses, Alibaba's
/// and AWS's IPv6 metadata endpoints — also when written as an IPv6 address
/// that stands for a blocked IPv4 one (NAT64, 6to4, Teredo, the compatible
/// and mapped forms: [`embedded_ipv4`]).
pub fn is_blocked_ip(ip: IpAddr) -> bool {
    let blocked_v4 = |v4: Ipv4Addr| {
        v4.is_link_local()
            || v4.octets()[0] == 0
            || v4 == Ipv4Addr::new(100, 100, 100, 200)
            || v4.is_broadcast()
    };
    match canonical_ip(ip) {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => {
            (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6.is_unspecified()
                || v6 == policy::AWS_V6_METADATA
                || embedded_ipv4(ip).into_iter().any(blocked_v4)
        }
    }
}

/// One entry of an allowed-destinations list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedDestination {
    pub host: CanonicalHost,
    /// `None` = any port.
    pub port: Option<u16>,
}

impl AllowedDestination {
    /// Parses `host`, `host:port`, `[v6]` or `[v6]:port`. Wildcards are not
    /// a feature: `*` is refused.
    pub fn parse(entry: &str) -> Option<Self> {
        let entry = entry.trim();
        if entry.is_empty() || entry.contains(['*', '/', '@', '?', '#', ' ']) {
            return None;
        }
        let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
            let (v6, after) = rest.split_once(']')?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':')?),
            };
            (format!("[{v6}]"), port)
        } else {
            match entry.split_once(':') {
                Some((h, p)) if !p.contains(':') => (h.to_owned(), Some(p)),
                Some(_) => return None,
                None => (entry.to_owned(), None),
            }
        };
        let port = match port {
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => return None,
            },
            None => None,
        };
        let host = Host::parse(&host).ok()?;
        let host = CanonicalHost::from_host(match &host {
            Host::Domain(d) => Host::Domain(d.as_str()),
            Host::Ipv4(v4) => Host::Ipv4(*v4),
            Host::Ipv6(v6) => Host::Ipv6(*v6),
        });
        if let CanonicalHost::Domain(d) = &host {
            if d.is_empty() || !d.bytes().all(is_host_byte) {
                return None;
            }
        }
        Some(Self { host, port })
    }

    pub fn allows(&self, host: &CanonicalHost, port: u16) -> bool {
        self.host == *host && self.port.is_none_or(|p| p == port)
    }
}

/// Checks an entry for an allowed-destinations list (operator input).
pub fn parse_allowed_entry(raw: &str, field: &str) -> Result<String, FieldError> {
    AllowedDestination::parse(raw)
        .map(|_| raw.trim().to_lowercase())
        .ok_or_else(|| {
            FieldError::invalid(
                field,
                "must be host, host:port, [ipv6] or [ipv6]:port (no scheme, path or wildcard)",
            )
        })
}

fn is_host_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'_')
}

/// A webhook URL that passed every rule of the contract. It keeps the text
/// the user sent (what the API shows back) and the parsed form, which the
/// sender hands to its client as it is (parsing it again was 1 % of
/// Motor's CPU in a fan-out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookUrl {
    raw: String,
    url: Url,
    host: CanonicalHost,
    port: u16,
}

impl WebhookUrl {
    /// `http`/`https`, 8–2000 characters, no user or password, no fragment,
    /// a host that is not a metadata address nor a loopback name.
    pub fn parse(raw: &str, field: &str) -> Result<Self, FieldError> {
        let invalid = |m: &str| FieldError::invalid(field, m);
        let chars = raw.chars().count();
        if !(MIN_URL_CHARS..=MAX_URL_CHARS).contains(&chars) {
            return Err(invalid(&format!(
                "must be {MIN_URL_CHARS} to {MAX_URL_CHARS} characters"
            )));
        }
        if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid(
                "must not contain white space or control characters",
            ));
        }
        let url =
            Url::parse(raw).map_err(|_| invalid("must be an absolute http:// or https:// URL"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid(
                "the scheme must be http or https (or amqp, amqps, nats, tls for a broker)",
            ));
        }
        // WHATWG parsing forgives `https:host` and `https:///host`; the
        // contract wants the plain form.
        let authority = raw.split_once("://").map(|(_, rest)| rest);
        if authority.is_none_or(|a| a.starts_with(['/', '\\'])) {
            return Err(invalid("must be scheme://host/…"));
        }
        if !url.username().is_empty() || url.password().is_some() || authority_has_userinfo(raw) {
            return Err(invalid("must not carry a user name or password"));
        }
        if url.fragment().is_some() {
            return Err(invalid("must not have a fragment (#)"));
        }
        let host = url
            .host()
            .map(CanonicalHost::from_host)
            .ok_or_else(|| invalid("must have a host"))?;
        if let CanonicalHost::Domain(d) = &host {
            if d.is_empty() || !d.bytes().all(is_host_byte) {
                return Err(invalid("the host is not a valid name"));
            }
        }
        if host.is_blocked() {
            return Err(invalid(
                "the host is a blocked address (cloud metadata or link-local)",
            ));
        }
        if host.is_loopback_name() {
            return Err(invalid(
                "name a loopback destination by its literal IP (127.0.0.1 or [::1])",
            ));
        }
        let port = url
            .port_or_known_default()
            .ok_or_else(|| invalid("must have a port"))?;
        Ok(Self {
            raw: raw.to_owned(),
            url,
            host,
            port,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The parsed form (WHATWG), as a client sends it.
    pub fn url(&self) -> &Url {
        &self.url
    }

    pub fn host(&self) -> &CanonicalHost {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether any entry of any list allows this URL's host and port.
    /// Entries that do not parse allow nothing.
    pub fn is_allowed_by<'a>(&self, entries: impl IntoIterator<Item = &'a String>) -> bool {
        entries
            .into_iter()
            .filter_map(|e| AllowedDestination::parse(e))
            .any(|d| d.allows(&self.host, self.port))
    }

    /// [`is_allowed_by`](Self::is_allowed_by) as a 422 on `field`.
    pub fn check_allowed<'a>(
        &self,
        entries: impl IntoIterator<Item = &'a String>,
        field: &str,
    ) -> Result<(), FieldError> {
        if self.is_allowed_by(entries) {
            Ok(())
        } else {
            Err(FieldError::invalid(
                field,
                "the host is not in the allowed destinations (ask the operator to add it)",
            ))
        }
    }
}

/// `url` drops an empty userinfo (`http://@host/`); refuse it anyway.
fn authority_has_userinfo(raw: &str) -> bool {
    let Some((_, rest)) = raw.split_once("://") else {
        return false;
    };
    let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    rest[..end].contains('@')
}

/// Where a subscription delivers, parsed once: each kind of destination
/// is a variant, so the engine matches on it instead of re-reading a URL's
/// scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Webhook(WebhookUrl),
    /// RabbitMQ: `amqp://` or `amqps://`.
    Amqp(AmqpTarget),
    /// NATS: `nats://` or `tls://`.
    Nats(NatsTarget),
}

impl Destination {
    /// A subscription's `url` under the contract's rules; `field` names the
    /// field in a 422. The scheme picks the kind.
    pub fn parse(raw: &str, field: &str) -> Result<Self, FieldError> {
        let scheme = raw
            .split_once("://")
            .map(|(s, _)| s.to_ascii_lowercase())
            .unwrap_or_default();
        match scheme.as_str() {
            "amqp" | "amqps" => parse_amqp(raw, field).map(Destination::Amqp),
            "nats" | "tls" => parse_nats(raw, field).map(Destination::Nats),
            _ => WebhookUrl::parse(raw, field).map(Destination::Webhook),
        }
    }

    /// The text the user sent (what the API shows back).
    pub fn as_str(&self) -> &str {
        match self {
            Destination::Webhook(url) => url.as_str(),
            Destination::Amqp(t) => t.as_str(),
            Destination::Nats(t) => t.as_str(),
        }
    }

    /// Whether the kind is a broker (it may carry `credenciales`).
    pub fn is_broker(&self) -> bool {
        !matches!(self, Destination::Webhook(_))
    }

    /// The host and port connected to.
    pub fn host_port(&self) -> (&CanonicalHost, u16) {
        match self {
            Destination::Webhook(url) => (url.host(), url.port()),
            Destination::Amqp(t) => (&t.host, t.port),
            Destination::Nats(t) => (&t.host, t.port),
        }
    }

    /// Whether any entry of any list allows this destination's host and
    /// port. Entries that do not parse allow nothing.
    pub fn is_allowed_by<'a>(&self, entries: impl IntoIterator<Item = &'a String>) -> bool {
        let (host, port) = self.host_port();
        entries
            .into_iter()
            .filter_map(|e| AllowedDestination::parse(e))
            .any(|d| d.allows(host, port))
    }

    /// [`is_allowed_by`](Self::is_allowed_by) as a 422 on `field`.
    pub fn check_allowed<'a>(
        &self,
        entries: impl IntoIterator<Item = &'a String>,
        field: &str,
    ) -> Result<(), FieldError> {
        if self.is_allowed_by(entries) {
            Ok(())
        } else {
            Err(FieldError::invalid(
                field,
                "the host is not in the allowed destinations (ask the operator to add it)",
            ))
        }
    }
}

#[cfg(test)]
mod tests;
