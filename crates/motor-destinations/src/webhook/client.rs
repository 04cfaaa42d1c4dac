//! The client: one `reqwest` client per process (it pools connections per
//! host) whose resolver refuses any answer containing a blocked or loopback
//! address, so the check is on the address actually connected to.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use motor_domain::{
    delivery::TransportFailure,
    destination::{canonical_ip, is_blocked_ip, is_loopback_ip, is_public_ipv4, WebhookUrl},
};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::{
    config::{MAX_RESPONSE_BYTES, USER_AGENT},
    outcome::{failure, BlockedAddress, DnsFailure},
};
use crate::{
    resolve::{Resolver, SystemResolver},
    Answer, ExtraRoots, Message, Sender,
};

/// Asks the injected resolver and refuses the whole answer if any address
/// is blocked or loopback (also through NAT64, 6to4, Teredo…); with
/// `public_ipv4_only` (an app under `publica_https`) also if any is not
/// public IPv4.
pub(crate) struct GuardedResolver {
    names: Arc<dyn Resolver>,
    public_ipv4_only: bool,
}

impl GuardedResolver {
    pub(crate) fn new(names: Arc<dyn Resolver>, public_ipv4_only: bool) -> Self {
        Self {
            names,
            public_ipv4_only,
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let lookup = self.names.lookup(name.as_str());
        let public_ipv4_only = self.public_ipv4_only;
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = lookup
                .await
                .map_err(|_| Box::new(DnsFailure) as Box<dyn std::error::Error + Send + Sync>)?
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            if addrs.is_empty() {
                return Err(Box::new(DnsFailure) as _);
            }
            if addrs.iter().any(|a| {
                let ip = canonical_ip(a.ip());
                is_blocked_ip(ip) || is_loopback_ip(ip) || (public_ipv4_only && !is_public_ipv4(ip))
            }) {
                return Err(Box::new(BlockedAddress) as _);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The webhook sender; one per process (it pools connections per host).
/// Two clients, one per resolver: the standard one, and one that connects
/// only to public IPv4 addresses (apps under `publica_https`).
#[derive(Clone)]
pub struct Webhook {
    client: reqwest::Client,
    public_ipv4: reqwest::Client,
}

impl Default for Webhook {
    fn default() -> Self {
        Self::new()
    }
}

impl Webhook {
    /// A sender asking the system's resolver.
    pub fn new() -> Self {
        Self::with_resolver(Arc::new(SystemResolver))
    }

    /// A sender whose host names are asked of `names` (then checked).
    pub fn with_resolver(names: Arc<dyn Resolver>) -> Self {
        Self::trusting(names, &ExtraRoots::default())
    }

    /// [`Self::with_resolver`], also trusting the certificates in `roots`.
    pub fn trusting(names: Arc<dyn Resolver>, roots: &ExtraRoots) -> Self {
        let client = |public_ipv4_only| {
            roots
                .add_to(reqwest::Client::builder())
                .redirect(reqwest::redirect::Policy::none())
                // An attempt is one request: the client never sends a copy
                // of its own (Motor's ladder retries, and records each
                // try). reqwest's default policy retries only HTTP/2 and
                // HTTP/3 refusals, which this HTTP/1.1 client never gets,
                // yet it copied every request's head and body in case:
                // 0.4 % of Motor's CPU samples in a fan-out.
                .retry(reqwest::retry::never().max_retries_per_request(0))
                .dns_resolver(Arc::new(GuardedResolver::new(
                    names.clone(),
                    public_ipv4_only,
                )))
                .user_agent(USER_AGENT)
                .build()
                .expect("a client with these settings always builds")
        };
        Self {
            client: client(false),
            public_ipv4: client(true),
        }
    }

    /// `POST`s one signed request and reads at most 4 KB of the answer.
    /// The timeout covers everything, the answer's body included: a
    /// receiver that trickles its answer is cut when it runs out (the
    /// status, already read, is what counts). An answer that declares more
    /// than 4 KB is not read at all, and however the bytes arrive (one
    /// large chunk or many), reading stops at the first chunk that
    /// reaches 4 KB; the connection is then dropped, not drained.
    pub async fn post(
        &self,
        url: impl reqwest::IntoUrl,
        timeout: Duration,
        headers: &[(&str, String)],
        body: impl Into<reqwest::Body>,
        public_ipv4_only: bool,
    ) -> Result<Answer, TransportFailure> {
        let client = if public_ipv4_only {
            &self.public_ipv4
        } else {
            &self.client
        };
        let mut request = client
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
        let declared_too_large = response
            .content_length()
            .is_some_and(|n| n > MAX_RESPONSE_BYTES as u64);
        let mut read = if declared_too_large {
            MAX_RESPONSE_BYTES
        } else {
            0
        };
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
            target.url().clone(),
            message.timeout,
            &message.headers,
            message.body.clone(),
            message.public_ipv4_only,
        )
        .await
    }
}
