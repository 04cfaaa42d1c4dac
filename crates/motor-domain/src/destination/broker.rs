//! Broker destinations: RabbitMQ (`amqp://`, `amqps://`) and NATS
//! (`nats://`, `tls://`) addresses, parsed once into targets the
//! destinations crate connects to. Pure parsing: the `{type}` and
//! `{instance_id}` placeholders of a routing key or subject are kept as a
//! [`Template`] and resolved per message. The host obeys the webhook rules
//! (no userinfo, no metadata address, no loopback name) and the same
//! allowed-destination lists.

use std::fmt;

use url::{Host, Url};

use super::{authority_has_userinfo, is_host_byte, CanonicalHost, MAX_URL_CHARS, MIN_URL_CHARS};
use crate::{error::FieldError, InstanceId};

/// RabbitMQ's default ports.
pub const AMQP_PORT: u16 = 5672;
pub const AMQPS_PORT: u16 = 5671;
/// NATS's default port (plain and TLS).
pub const NATS_PORT: u16 = 4222;
/// AMQP short strings (exchange, routing key) are at most 255 bytes.
const MAX_SHORT_STR: usize = 255;

/// A routing key or subject with `{type}` and `{instance_id}` placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(String);

impl Template {
    /// Any text whose only `{…}` are the two placeholders.
    fn parse(raw: &str, field: &str) -> Result<Self, FieldError> {
        let stripped = raw.replace("{type}", "").replace("{instance_id}", "");
        if stripped.contains(['{', '}']) {
            return Err(FieldError::invalid(
                field,
                "the only placeholders are {type} and {instance_id}",
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text for one message. `sanitize` maps each character of the
    /// substituted values (never of the fixed text).
    pub fn resolve(
        &self,
        event_type: &str,
        instance: InstanceId,
        sanitize: impl Fn(char) -> char,
    ) -> String {
        let event_type: String = event_type.chars().map(&sanitize).collect();
        self.0
            .replace("{type}", &event_type)
            .replace("{instance_id}", &instance.to_string())
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a RabbitMQ destination publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmqpTarget {
    raw: String,
    pub host: CanonicalHost,
    pub port: u16,
    pub tls: bool,
    /// Percent-decoded; an empty path is the default vhost `/`.
    pub vhost: String,
    pub exchange: String,
    pub routing_key: Template,
}

impl AmqpTarget {
    pub fn as_str(&self) -> &str {
        &self.raw
    }
}

/// Where a NATS destination publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsTarget {
    raw: String,
    pub host: CanonicalHost,
    pub port: u16,
    pub tls: bool,
    pub subject: Template,
}

impl NatsTarget {
    pub fn as_str(&self) -> &str {
        &self.raw
    }
}

/// Characters an event type may not bring into a NATS subject (token
/// separators inside a token, wildcards, white space) become `_`.
pub fn nats_subject_char(c: char) -> char {
    if c.is_whitespace() || c.is_control() || c == '*' || c == '>' {
        '_'
    } else {
        c
    }
}

/// Whether a resolved subject is one a publisher may use: dot-separated
/// non-empty tokens, no wildcard, no white space.
pub fn is_publish_subject(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|t| {
            !t.is_empty()
                && !t
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || c == '*' || c == '>')
        })
}

/// The part of `raw` shared by both kinds: length, characters, scheme, no
/// userinfo or fragment, a usable host. Returns the parsed URL, the host
/// and whether the scheme is the TLS one.
fn common(
    raw: &str,
    field: &str,
    schemes: (&str, &str),
) -> Result<(Url, CanonicalHost, bool), FieldError> {
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
    let url = Url::parse(raw).map_err(|_| invalid("must be an absolute URL"))?;
    let scheme = url.scheme();
    let tls = scheme == schemes.1;
    if scheme != schemes.0 && !tls {
        return Err(invalid(&format!(
            "the scheme must be {} or {}",
            schemes.0, schemes.1
        )));
    }
    let authority = raw.split_once("://").map(|(_, rest)| rest);
    if authority.is_none_or(|a| a.starts_with(['/', '\\'])) {
        return Err(invalid("must be scheme://host/…"));
    }
    if !url.username().is_empty() || url.password().is_some() || authority_has_userinfo(raw) {
        return Err(invalid(
            "must not carry a user name or password (use credenciales)",
        ));
    }
    if url.fragment().is_some() {
        return Err(invalid("must not have a fragment (#)"));
    }
    // Non-special schemes keep the host opaque: parse it as a web host
    // would be (IDN, dotted IPv4, lower case).
    let host = match url.host() {
        Some(Host::Domain(d)) => {
            let d = percent_decode(d).ok_or_else(|| invalid("the host is not a valid name"))?;
            let parsed = Host::parse(&d).map_err(|_| invalid("the host is not a valid name"))?;
            CanonicalHost::from_host(match &parsed {
                Host::Domain(d) => Host::Domain(d.as_str()),
                Host::Ipv4(v4) => Host::Ipv4(*v4),
                Host::Ipv6(v6) => Host::Ipv6(*v6),
            })
        }
        Some(other) => CanonicalHost::from_host(other),
        None => return Err(invalid("must have a host")),
    };
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
    Ok((url, host, tls))
}

/// The raw path after the authority (before `?`), without its leading `/`.
fn raw_path(raw: &str) -> &str {
    let rest = raw.split_once("://").map_or("", |(_, rest)| rest);
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    rest.find('/').map_or("", |i| &rest[i + 1..])
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `amqp[s]://host[:port]/[vhost]?exchange=NAME[&routing_key=KEY]`.
pub fn parse_amqp(raw: &str, field: &str) -> Result<AmqpTarget, FieldError> {
    let (url, host, tls) = common(raw, field, ("amqp", "amqps"))?;
    let invalid = |m: &str| FieldError::invalid(field, m);
    let path = raw_path(raw);
    if path.contains('/') {
        return Err(invalid(
            "the path is the vhost only (write a / in it as %2f)",
        ));
    }
    let vhost = percent_decode(path).ok_or_else(|| invalid("the vhost is not valid UTF-8"))?;
    let vhost = if vhost.is_empty() {
        "/".to_owned()
    } else {
        vhost
    };
    let mut exchange = None;
    let mut routing_key = None;
    for (k, v) in url.query_pairs() {
        let slot = match k.as_ref() {
            "exchange" => &mut exchange,
            "routing_key" => &mut routing_key,
            _ => {
                return Err(invalid(
                    "the only query parameters are exchange and routing_key",
                ))
            }
        };
        if slot.replace(v.into_owned()).is_some() {
            return Err(invalid(&format!("{k} is given twice")));
        }
    }
    let exchange = exchange
        .filter(|e| !e.is_empty())
        .ok_or_else(|| invalid("exchange is required (?exchange=NAME)"))?;
    if exchange.len() > MAX_SHORT_STR || exchange.chars().any(char::is_control) {
        return Err(invalid("exchange must be 1 to 255 bytes"));
    }
    let routing_key = routing_key.unwrap_or_else(|| "{type}".to_owned());
    if routing_key.len() > MAX_SHORT_STR {
        return Err(invalid("routing_key must be at most 255 bytes"));
    }
    let routing_key = Template::parse(&routing_key, field)?;
    Ok(AmqpTarget {
        raw: raw.to_owned(),
        host,
        port: url
            .port()
            .unwrap_or(if tls { AMQPS_PORT } else { AMQP_PORT }),
        tls,
        vhost,
        exchange,
        routing_key,
    })
}

/// `nats://host[:port]/SUBJECT` or `tls://host[:port]/SUBJECT`.
pub fn parse_nats(raw: &str, field: &str) -> Result<NatsTarget, FieldError> {
    let (url, host, tls) = common(raw, field, ("nats", "tls"))?;
    let invalid = |m: &str| FieldError::invalid(field, m);
    if url.query().is_some() {
        return Err(invalid("a NATS destination takes no query"));
    }
    let subject = percent_decode(raw_path(raw)).ok_or_else(|| invalid("bad subject"))?;
    let template = Template::parse(&subject, field)?;
    // Placeholders stand for one token-safe text each; check the rest.
    let probe = subject.replace("{type}", "t").replace("{instance_id}", "i");
    if !is_publish_subject(&probe) {
        return Err(invalid(
            "the path must be a subject: dot-separated tokens, no wildcard (* >) or empty token",
        ));
    }
    Ok(NatsTarget {
        raw: raw.to_owned(),
        host,
        port: url.port().unwrap_or(NATS_PORT),
        tls,
        subject: template,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn amqp(s: &str) -> Result<AmqpTarget, FieldError> {
        parse_amqp(s, "url")
    }

    fn nats(s: &str) -> Result<NatsTarget, FieldError> {
        parse_nats(s, "url")
    }

    #[test]
    fn amqp_shapes() {
        let t = amqp("amqp://Rabbit.Example.com/?exchange=motor").unwrap();
        assert_eq!(t.host, CanonicalHost::Domain("rabbit.example.com".into()));
        assert_eq!((t.port, t.tls, t.vhost.as_str()), (5672, false, "/"));
        assert_eq!(t.routing_key.as_str(), "{type}");
        let t =
            amqp("amqps://10.0.0.1:6000/prod%2fa?exchange=x&routing_key=ev.{instance_id}.{type}")
                .unwrap();
        assert_eq!(t.host, CanonicalHost::Ip("10.0.0.1".parse().unwrap()));
        assert_eq!((t.port, t.tls, t.vhost.as_str()), (6000, true, "prod/a"));
        let i = InstanceId::from_uuid(uuid::Uuid::nil());
        assert_eq!(
            t.routing_key.resolve("a.b", i, |c| c),
            format!("ev.{i}.a.b")
        );
        assert_eq!(amqp("amqps://h.io?exchange=x").unwrap().port, 5671);
        assert_eq!(
            amqp("amqp://127.1:5672/v?exchange=x").unwrap().host,
            CanonicalHost::Ip("127.0.0.1".parse().unwrap())
        );
    }

    #[test]
    fn amqp_refusals() {
        for bad in [
            "amqp://h.io/",
            "amqp://h.io/?exchange=",
            "amqp://h.io/?exchange=a&exchange=b",
            "amqp://h.io/?exchange=a&queue=b",
            "amqp://guest:guest@h.io/?exchange=x",
            "amqp://@h.io/?exchange=x",
            "amqp://localhost/?exchange=x",
            "amqp://169.254.169.254/?exchange=x",
            "amqp://h.io/a/b?exchange=x",
            "amqp://h.io/?exchange=x&routing_key={tipo}",
            "amqp://h.io/?exchange=x#f",
            "http://h.io/?exchange=x",
            "amqp:///?exchange=x",
        ] {
            assert_eq!(amqp(bad).expect_err(bad).field, "url", "{bad}");
        }
    }

    #[test]
    fn nats_shapes() {
        let t = nats("nats://127.0.0.1:4222/motor.{instance_id}.{type}").unwrap();
        assert_eq!((t.port, t.tls), (4222, false));
        let i = InstanceId::from_uuid(uuid::Uuid::nil());
        assert_eq!(
            t.subject
                .resolve("message.received x", i, nats_subject_char),
            format!("motor.{i}.message.received_x")
        );
        assert!(nats("tls://nats.example.com/orders").unwrap().tls);
        for bad in [
            "nats://h.io/",
            "nats://h.io/a..b",
            "nats://h.io/a.*",
            "nats://h.io/a.>",
            "nats://h.io/a?x=1",
            "nats://u:p@h.io/a",
            "nats://localhost/a",
            "nats://h.io/{x}",
            "amqp://h.io/a",
        ] {
            assert_eq!(nats(bad).expect_err(bad).field, "url", "{bad}");
        }
    }

    proptest! {
        #[test]
        fn any_userinfo_is_refused(user in "[a-zA-Z0-9]{1,10}", host in "[a-z]{1,10}\\.io") {
            let a = format!("amqp://{user}@{host}/?exchange=x");
            let n = format!("nats://{user}:{user}@{host}/s");
            prop_assert!(amqp(&a).is_err());
            prop_assert!(nats(&n).is_err());
        }

        #[test]
        fn resolved_subjects_are_publishable(t in "\\PC{1,30}") {
            let target = nats("nats://h.io/motor.{type}").unwrap();
            let s = target.subject.resolve(&t, InstanceId::from_uuid(uuid::Uuid::nil()), nats_subject_char);
            // Only an empty token (a type with `..` or a leading dot) can
            // still make it unpublishable.
            let has_empty = t.split('.').any(str::is_empty);
            prop_assert_eq!(is_publish_subject(&s), !has_empty);
        }
    }
}
