//! The client: one `reqwest` client per process (it pools connections per
//! host) whose resolver refuses any answer containing a blocked or loopback
//! address, so the check is on the address actually connected to.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use motor_domain::{
    delivery::TransportFailure,
    destination::{canonical_ip, is_blocked_ip, WebhookUrl},
};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::{
    config::{MAX_RESPONSE_BYTES, USER_AGENT},
    outcome::failure,
};
use crate::{Answer, Message, Sender};

/// A name resolved to an address Motor never connects to.
#[derive(Debug)]
pub(super) struct BlockedAddress;

impl std::fmt::Display for BlockedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("destino_bloqueado")
    }
}
impl std::error::Error for BlockedAddress {}

#[derive(Debug)]
pub(super) struct DnsFailure;

impl std::fmt::Display for DnsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("dns")
    }
}
impl std::error::Error for DnsFailure {}

/// Resolves with the system resolver and refuses the whole answer if any
/// address is blocked or loopback.
pub(super) struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|_| Box::new(DnsFailure) as Box<dyn std::error::Error + Send + Sync>)?
                .collect();
            if addrs.is_empty() {
                return Err(Box::new(DnsFailure) as _);
            }
            if addrs.iter().any(|a| {
                let ip = canonical_ip(a.ip());
                is_blocked_ip(ip) || ip.is_loopback()
            }) {
                return Err(Box::new(BlockedAddress) as _);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The webhook sender; one per process (it pools connections per host).
#[derive(Clone)]
pub struct Webhook {
    client: reqwest::Client,
}

impl Default for Webhook {
    fn default() -> Self {
        Self::new()
    }
}

impl Webhook {
    pub fn new() -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(GuardedResolver))
            .user_agent(USER_AGENT)
            .build()
            .expect("a client with these settings always builds");
        Self { client }
    }

    /// `POST`s one signed request and reads at most 4 KB of the answer.
    pub async fn post(
        &self,
        url: &str,
        timeout: Duration,
        headers: &[(&str, String)],
        body: impl Into<reqwest::Body>,
    ) -> Result<Answer, TransportFailure> {
        let mut request = self
            .client
            .post(url)
            .timeout(timeout)
            .header("content-type", "application/json")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let mut response = request.send().await.map_err(|e| failure(&e))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut read = 0;
        while read < MAX_RESPONSE_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                Ok(None) => break,
                // The status is what counts; a body cut short changes nothing.
                Err(_) => break,
            }
        }
        Ok(Answer {
            status,
            retry_after,
        })
    }
}

impl Sender for Webhook {
    type Target = WebhookUrl;

    async fn send(
        &self,
        target: &WebhookUrl,
        message: &Message,
    ) -> Result<Answer, TransportFailure> {
        self.post(
            target.as_str(),
            message.timeout,
            &message.headers,
            message.body.clone(),
        )
        .await
    }
}
