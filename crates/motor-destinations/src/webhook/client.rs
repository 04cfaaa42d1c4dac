//! The client: one pooled HTTP/1.1 client per process (hyper's, over
//! rustls) whose resolver refuses any answer containing a blocked or
//! loopback address, so the check is on the address actually connected to.
//!
//! Why hyper's client and not reqwest's, which wraps that same client and
//! connector: a request through reqwest's layers parsed its URL twice
//! more with the `url` crate (its redirect policy's record of the request,
//! and the response's URL, though no redirect is ever followed) and went
//! through a tower stack of redirect and retry layers Motor turns off:
//! reqwest's send and response future were 21 % of Motor's CPU samples in
//! a fan-out, hyper-util's client under them 7 %. Without them Motor spent
//! 24 % less a delivery there (docs/BENCHMARKS.md, 2026-12-06 21:34).
//! What reqwest set up is set up here the same way: `TCP_NODELAY`,
//! connections pooled per host and dropped after 90 s idle, rustls with
//! the ring provider, TLS 1.2 and 1.3, Mozilla's roots and the operator's
//! extra ones, ALPN `http/1.1`; `User-Agent` and `Accept: */*` on every
//! request. The conformance check (`crate::check`) keeps its reqwest
//! client: it sends a battery, not a stream.

use std::{
    future::Future,
    net::SocketAddr,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use http::{
    header::{ACCEPT, CONTENT_TYPE, RETRY_AFTER, USER_AGENT as USER_AGENT_HEADER},
    HeaderName, HeaderValue, Method, Request, Uri,
};
use http_body_util::{BodyExt, Full};
use hyper::body::Body;
use hyper_rustls::HttpsConnector;
use hyper_util::{
    client::legacy::{
        connect::{dns::Name as HyperName, HttpConnector},
        Client,
    },
    rt::{TokioExecutor, TokioTimer},
};
use motor_domain::{
    delivery::TransportFailure,
    destination::{canonical_ip, is_blocked_ip, is_loopback_ip, is_public_ipv4, WebhookUrl},
};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::{
    config::{MAX_RESPONSE_BYTES, USER_AGENT},
    outcome::{sent_failure, BlockedAddress, DnsFailure},
};
use crate::{
    resolve::{Resolver, SystemResolver},
    Answer, ExtraRoots, Message, Sender,
};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Asks the injected resolver and refuses the whole answer if any address
/// is blocked or loopback (also through NAT64, 6to4, Teredo…); with
/// `public_ipv4_only` (an app under `publica_https`) also if any is not
/// public IPv4. The sender's connector asks it as a `tower` service, the
/// conformance check's reqwest client through reqwest's [`Resolve`]. A
/// literal IP in a URL is never resolved: the destination's own checks
/// (`crate::attempt`) judge it.
#[derive(Clone)]
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

    /// `name`'s addresses (port 0), or why none may be connected to.
    fn judged(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Vec<SocketAddr>, BoxError>> + Send + 'static {
        let lookup = self.names.lookup(name);
        let public_ipv4_only = self.public_ipv4_only;
        async move {
            let addrs: Vec<SocketAddr> = lookup
                .await
                .map_err(|_| Box::new(DnsFailure) as BoxError)?
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
            Ok(addrs)
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let judged = self.judged(name.as_str());
        Box::pin(async move { Ok(Box::new(judged.await?.into_iter()) as Addrs) })
    }
}

impl tower_service::Service<HyperName> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: HyperName) -> Self::Future {
        let judged = self.judged(name.as_str());
        Box::pin(async move { Ok(judged.await?.into_iter()) })
    }
}

/// The sender's pooled client.
type Pooled = Client<HttpsConnector<HttpConnector<GuardedResolver>>, Full<Bytes>>;

/// How long an idle pooled connection is kept (reqwest's default).
const POOL_IDLE: Duration = Duration::from_secs(90);

fn pooled(
    names: Arc<dyn Resolver>,
    public_ipv4_only: bool,
    tls: Arc<rustls::ClientConfig>,
) -> Pooled {
    let mut http = HttpConnector::new_with_resolver(GuardedResolver::new(names, public_ipv4_only));
    // The TLS layer takes `https://` URLs to this connector too; a
    // request leaves as soon as it is written (no Nagle delay).
    http.enforce_http(false);
    http.set_nodelay(true);
    // `https://` over TLS, `http://` as it is. Made from its parts: the
    // connector's builder leaves ALPN empty when only HTTP/1.1 is on.
    let connector = HttpsConnector::from((http, tls));
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(POOL_IDLE)
        .build(connector)
}

/// TLS 1.2 and 1.3 with the ring provider, trusting `roots`, ALPN
/// `http/1.1`.
fn tls(roots: rustls::RootCertStore) -> Arc<rustls::ClientConfig> {
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring supports the default protocol versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// The webhook sender; one per process (it pools connections per host).
/// Two clients, one per resolver: the standard one, and one that connects
/// only to public IPv4 addresses (apps under `publica_https`).
#[derive(Clone)]
pub struct Webhook {
    client: Pooled,
    public_ipv4: Pooled,
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
    /// An attempt is one request: the client never sends a copy of its own
    /// (Motor's ladder retries, and records each try), and never follows a
    /// redirect (a 3xx is the answer).
    pub fn trusting(names: Arc<dyn Resolver>, roots: &ExtraRoots) -> Self {
        let tls = tls(roots.with_built_in());
        Self {
            client: pooled(names.clone(), false, tls.clone()),
            public_ipv4: pooled(names, true, tls),
        }
    }

    /// `POST`s one signed request and reads at most 4 KB of the answer.
    /// The timeout covers everything, the answer's body included: a
    /// receiver that trickles its answer is cut when it runs out (the
    /// status, already read, is what counts). An answer that declares more
    /// than 4 KB is not read at all, and however the bytes arrive (one
    /// large chunk or many), reading stops at the first chunk that
    /// reaches 4 KB; the connection is then dropped, not drained. A URL or
    /// a header the request cannot carry fails as `url`.
    pub async fn post(
        &self,
        url: &str,
        timeout: Duration,
        headers: &[(&str, String)],
        body: impl Into<Bytes>,
        public_ipv4_only: bool,
    ) -> Result<Answer, TransportFailure> {
        let client = if public_ipv4_only {
            &self.public_ipv4
        } else {
            &self.client
        };
        let request = request(url, headers, body.into()).ok_or(TransportFailure::BadUrl)?;
        let deadline = tokio::time::Instant::now() + timeout;
        let response = tokio::time::timeout_at(deadline, client.request(request))
            .await
            .map_err(|_| TransportFailure::Timeout)?
            .map_err(|e| sent_failure(&e))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut body = response.into_body();
        let declared_too_large = body
            .size_hint()
            .exact()
            .is_some_and(|n| n > MAX_RESPONSE_BYTES as u64);
        let mut read = if declared_too_large {
            MAX_RESPONSE_BYTES
        } else {
            0
        };
        // Read to its end (which gives the connection back to the pool),
        // unless it is too long or too slow. The status is what counts; a
        // body cut short changes nothing.
        while read < MAX_RESPONSE_BYTES && !body.is_end_stream() {
            match tokio::time::timeout_at(deadline, body.frame()).await {
                Ok(Some(Ok(frame))) => read += frame.data_ref().map_or(0, Bytes::len),
                Ok(None | Some(Err(_))) | Err(_) => break,
            }
        }
        Ok(Answer {
            status,
            retry_after,
        })
    }
}

/// The `POST` of `body` to `url` with `headers`, `Content-Type`,
/// `User-Agent` and `Accept` (`Host` and `Content-Length` are the
/// client's); `None` when the URL or a header cannot be sent.
fn request(url: &str, headers: &[(&str, String)], body: Bytes) -> Option<Request<Full<Bytes>>> {
    let mut request = Request::new(Full::new(body));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = Uri::try_from(url).ok()?;
    let map = request.headers_mut();
    map.reserve(headers.len() + 3);
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    map.insert(USER_AGENT_HEADER, HeaderValue::from_static(USER_AGENT));
    map.insert(ACCEPT, HeaderValue::from_static("*/*"));
    for (name, value) in headers {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).ok()?,
            HeaderValue::from_str(value).ok()?,
        );
    }
    Some(request)
}

impl Sender for Webhook {
    type Target = WebhookUrl;

    async fn send(
        &self,
        target: &WebhookUrl,
        message: &Message,
    ) -> Result<Answer, TransportFailure> {
        self.post(
            target.url().as_str(),
            message.timeout,
            &message.headers,
            message.body.clone(),
            message.public_ipv4_only,
        )
        .await
    }
}
