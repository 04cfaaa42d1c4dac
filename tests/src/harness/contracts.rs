//! What a Visito or an Asixto receiver reads of a request, written from
//! the product's own document (seed 001, seed 003) and nothing of Motor's:
//! the header names, the signature as the documents print its check, and
//! the body's ids. The fault matrix's [`super::Receiver`] speaks one of
//! them when told ([`super::Receiver::written_for`]); it records what it
//! read as [`ContractSeen`], and the checker (`check::contracts`) resolves
//! which delivery each request was and judges the contract's identity
//! rules.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::history::{now_us, ContractSeen};

/// The product a receiver was written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    /// Seed 001: `X-Visito-Event-Id`, `X-Visito-Signature: t=…,v1=…`,
    /// body `eventId`, `type`, `schemaVersion`, `tenantId`, `occurredAt`,
    /// `data`.
    Visito,
    /// Seed 003: one `Asixto-Signature: t=…,v1=…[,v1=…]`, body `id`,
    /// `type`, `created`, `environment`, `replay_of` (a replay), `data`.
    Asixto,
}

impl Product {
    /// Its `contrato` on the wire.
    pub fn wire(self) -> &'static str {
        match self {
            Product::Visito => "visito",
            Product::Asixto => "asixto",
        }
    }
}

/// Both documents: a `t` more than five minutes from the receiver's clock
/// is refused (seed 001 "rechaza diferencias de más de cinco minutos",
/// seed 003's `TOLERANCIA_S`).
const WINDOW_S: i64 = 300;

/// One request as the product's receiver reads it.
pub(crate) struct Read {
    pub verified: bool,
    /// The signature's `t`.
    pub timestamp: i64,
    pub seen: ContractSeen,
}

/// Reads one request: `header` looks a header up by name (any case),
/// `secrets` are the ones the receiver knows.
pub(crate) fn read<'a>(
    product: Product,
    header: impl Fn(&str) -> &'a str,
    body: &[u8],
    secrets: &[String],
) -> Read {
    let (signature, header_id) = match product {
        Product::Visito => (
            header("x-visito-signature"),
            Some(header("x-visito-event-id").to_owned()),
        ),
        Product::Asixto => (header("asixto-signature"), None),
    };
    let (timestamp, verified) = verify(signature, body, secrets);
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let body_id = match product {
        Product::Visito => text(&json["eventId"]),
        Product::Asixto => text(&json["id"]),
    };
    let replay_of = match product {
        Product::Visito => None,
        Product::Asixto => json["replay_of"].as_str().map(str::to_owned),
    };
    Read {
        verified,
        timestamp,
        seen: ContractSeen {
            name: product.wire().into(),
            body_id,
            header_id,
            replay_of,
            source: text(&json["data"]["s"]),
        },
    }
}

/// Seed 003's `verificar`, which seed 001's sentences say too ("Calcula
/// HMAC-SHA256 de timestamp + "." + cuerpoOriginal usando el secreto.
/// Compara en tiempo constante"): the header's `t` and every `v1`; the
/// raw body signed as `t + "." + body`; any `v1` matching any known
/// secret verifies, within the window. The `t` (0 when absent) and the
/// verdict.
fn verify(signature: &str, body: &[u8], secrets: &[String]) -> (i64, bool) {
    let mut t: Option<&str> = None;
    let mut v1s = Vec::new();
    for part in signature.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => t = Some(value),
            Some(("v1", value)) => v1s.push(value),
            _ => {}
        }
    }
    let Some(t) = t.filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())) else {
        return (0, false);
    };
    let Ok(timestamp) = t.parse::<i64>() else {
        return (0, false);
    };
    if v1s.is_empty() || (now_us() / 1_000_000 - timestamp).abs() > WINDOW_S {
        return (timestamp, false);
    }
    let verified = secrets.iter().any(|secret| {
        v1s.iter().any(|v1| {
            let Ok(expected) = hex::decode(v1) else {
                return false;
            };
            let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
            mac.update(t.as_bytes());
            mac.update(b".");
            mac.update(body);
            mac.verify_slice(&expected).is_ok()
        })
    });
    (timestamp, verified)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &str, t: i64, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{t}.").as_bytes());
        mac.update(body);
        hex::encode(mac.finalize().into_bytes())
    }

    #[test]
    fn asixto_verifies_when_any_v1_matches_a_known_secret() {
        let body = br#"{"id":"a","replay_of":"b","data":{"s":"src-1"}}"#;
        let t = now_us() / 1_000_000;
        let header = format!(
            "t={t},v1={},v1={}",
            sign("other", t, body),
            sign("mine", t, body)
        );
        let read = read(
            Product::Asixto,
            |name| {
                if name == "asixto-signature" {
                    &header
                } else {
                    ""
                }
            },
            body,
            &["mine".into()],
        );
        assert!(read.verified);
        assert_eq!(read.seen.body_id, "a");
        assert_eq!(read.seen.replay_of.as_deref(), Some("b"));
        assert_eq!(read.seen.source, "src-1");
        let tampered = br#"{"id":"a","replay_of":"c","data":{"s":"src-1"}}"#;
        let read = super::read(
            Product::Asixto,
            |name| {
                if name == "asixto-signature" {
                    &header
                } else {
                    ""
                }
            },
            tampered,
            &["mine".into()],
        );
        assert!(!read.verified);
    }

    #[test]
    fn visito_refuses_a_stale_timestamp_and_reads_both_ids() {
        let body = br#"{"eventId":"e","data":{"s":"src-2"}}"#;
        let stale = now_us() / 1_000_000 - 301;
        let header = format!("t={stale},v1={}", sign("k", stale, body));
        let read = read(
            Product::Visito,
            |name| match name {
                "x-visito-signature" => &header,
                "x-visito-event-id" => "e",
                _ => "",
            },
            body,
            &["k".into()],
        );
        assert!(!read.verified);
        assert_eq!(read.timestamp, stale);
        assert_eq!(read.seen.header_id.as_deref(), Some("e"));
        assert_eq!(read.seen.body_id, "e");
    }
}
