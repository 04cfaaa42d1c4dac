//! The battery's HTTP client: the webhook sender's rules (no redirects,
//! Motor's `User-Agent`, at most 4 KB of an answer read, one timeout over
//! the whole exchange), but a client of its own because the battery sends
//! what the sender never does — a repeated header — and because the CLI
//! is pointed by its operator at their own receiver, often on loopback,
//! which the sender's guarded resolver refuses. The API door
//! (`POST /v1/subscriptions/{id}/check`) uses [`CheckClient::guarded`]
//! instead: the sender's own resolver guard, so a user's URL reaches only
//! what a delivery could.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use motor_domain::delivery::TransportFailure;

use crate::{
    resolve::Resolver,
    roots::ExtraRoots,
    webhook::{failure, GuardedResolver, MAX_RESPONSE_BYTES, USER_AGENT},
};

/// One answer: its status (or why there was none) and how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub result: Result<u16, TransportFailure>,
    pub duration: Duration,
}

/// The client; cheap to clone (it pools connections).
#[derive(Clone)]
pub struct CheckClient {
    client: reqwest::Client,
}

impl CheckClient {
    /// Resolves names with the system resolver and connects anywhere,
    /// loopback included: for `motor check-receiver`, run by whoever owns
    /// the receiver. An API door must not use it for a user's URL.
    pub fn direct() -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT)
            .build()
            .expect("a client with these settings always builds");
        Self { client }
    }

    /// Connects only where a delivery may: names are asked of `names` and
    /// any answer holding a blocked or loopback address is refused whole
    /// (with `public_ipv4_only`, anything but public IPv4 too), exactly as
    /// the webhook sender's resolver does. A literal IP in the URL is not
    /// resolved: the caller checks it against the allowed destinations
    /// first, as an attempt does.
    /// Webhooks' extra `roots` are trusted too.
    pub fn guarded(names: Arc<dyn Resolver>, public_ipv4_only: bool, roots: &ExtraRoots) -> Self {
        let client = roots
            .add_to(reqwest::Client::builder())
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(GuardedResolver::new(names, public_ipv4_only)))
            .user_agent(USER_AGENT)
            .build()
            .expect("a client with these settings always builds");
        Self { client }
    }

    /// `POST`s `body` with `headers` (a name may appear twice: each pair is
    /// its own header line) and reads at most 4 KB of the answer.
    pub async fn post(
        &self,
        url: &str,
        timeout: Duration,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> Reply {
        let started = Instant::now();
        let mut request = self
            .client
            .post(url)
            .timeout(timeout)
            .header("content-type", "application/json")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let result = match request.send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                read_capped(response).await;
                Ok(status)
            }
            Err(e) => Err(failure(&e)),
        };
        Reply {
            result,
            duration: started.elapsed(),
        }
    }

    /// `GET`s `url` and returns its status and at most 4 KB of its body.
    pub async fn get(
        &self,
        url: &str,
        timeout: Duration,
    ) -> Result<(u16, Vec<u8>), TransportFailure> {
        let response = self
            .client
            .get(url)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| failure(&e))?;
        let status = response.status().as_u16();
        Ok((status, read_capped(response).await))
    }
}

/// Reads the answer's body up to [`MAX_RESPONSE_BYTES`]; a body cut short
/// or too long leaves what was read (the status is what counts).
async fn read_capped(mut response: reqwest::Response) -> Vec<u8> {
    let mut read = Vec::new();
    if response
        .content_length()
        .is_some_and(|n| n > MAX_RESPONSE_BYTES as u64)
    {
        return read;
    }
    while read.len() < MAX_RESPONSE_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => read.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    read.truncate(MAX_RESPONSE_BYTES);
    read
}
