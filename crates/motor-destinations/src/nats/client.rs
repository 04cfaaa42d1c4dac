//! The client: one NATS connection per destination, shared by every lane
//! that publishes there (a lane has one message in flight; lanes publish
//! concurrently and each waits for its own ack).

use std::{sync::Arc, time::Duration};

use async_nats::{connection::State, Client, ConnectOptions, HeaderMap, ServerAddr};
use backon::{ExponentialBuilder, Retryable};
use motor_domain::{
    credentials::BrokerCredentials,
    delivery::TransportFailure,
    destination::{is_publish_subject, nats_subject_char, CanonicalHost, NatsTarget},
};
use secrecy::ExposeSecret;

use super::{
    config::{
        reconnect_delay, CONNECT_MAX, CONNECT_MIN, CONNECT_TIMES, CONTENT_TYPE, MSG_ID_HEADER,
    },
    outcome::{connect_failure, is_transient, publish_failure},
};
use crate::{
    guard,
    links::{login_digest, Links},
    resolve::{Resolver, SystemResolver},
    Answer, Message, Sender, BROKER_ACK, BROKER_SENT,
};

/// What makes two targets share a connection.
#[derive(Clone, PartialEq, Eq, Hash)]
struct LinkKey {
    host: CanonicalHost,
    port: u16,
    tls: bool,
    /// SHA-256 of the login (never the login itself).
    login: [u8; 32],
}

/// One destination's client, made on first use.
#[derive(Default)]
struct Link {
    client: tokio::sync::Mutex<Option<Client>>,
}

impl Link {
    async fn client(
        &self,
        resolver: &dyn Resolver,
        target: &NatsTarget,
        credentials: Option<&BrokerCredentials>,
        timeout: Duration,
    ) -> Result<Client, TransportFailure> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            return Ok(client.clone());
        }
        let backoff = ExponentialBuilder::default()
            .with_min_delay(CONNECT_MIN)
            .with_max_delay(CONNECT_MAX)
            .with_max_times(CONNECT_TIMES)
            .with_jitter();
        let client = (|| connect(resolver, target, credentials, timeout))
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(|e| is_transient(*e))
            .await?;
        *slot = Some(client.clone());
        Ok(client)
    }
}

/// Resolves and checks the host, then connects to a checked address. With
/// TLS the client connects by name (the certificate names the host), to a
/// name the check just resolved.
async fn connect(
    resolver: &dyn Resolver,
    target: &NatsTarget,
    credentials: Option<&BrokerCredentials>,
    timeout: Duration,
) -> Result<Client, TransportFailure> {
    let addrs = guard::resolve(resolver, &target.host, target.port).await?;
    let mut options = ConnectOptions::new()
        .name("motor")
        .connection_timeout(timeout)
        .ignore_discovered_servers()
        .reconnect_delay_callback(reconnect_delay);
    options = match credentials {
        Some(BrokerCredentials::User { user, password }) => {
            options.user_and_password(user.clone(), password.expose_secret().to_owned())
        }
        Some(BrokerCredentials::Token(token)) => options.token(token.expose_secret().to_owned()),
        None => options,
    };
    let server = if target.tls {
        options = options.require_tls(true);
        let host = match &target.host {
            CanonicalHost::Domain(d) => d.clone(),
            CanonicalHost::Ip(std::net::IpAddr::V6(v6)) => format!("[{v6}]"),
            CanonicalHost::Ip(ip) => ip.to_string(),
        };
        format!("tls://{host}:{}", target.port)
    } else {
        format!("nats://{}", addrs[0])
    };
    let server: ServerAddr = server.parse().map_err(|_| TransportFailure::BadUrl)?;
    async_nats::connect_with_options(server, options)
        .await
        .map_err(|e| connect_failure(&e))
}

/// The NATS sender; one per process, pooling a client per destination.
#[derive(Clone)]
pub struct Nats {
    links: Links<LinkKey, Link>,
    resolver: Arc<dyn Resolver>,
}

impl Default for Nats {
    fn default() -> Self {
        Self::new(Arc::new(SystemResolver))
    }
}

impl Nats {
    /// A sender whose broker names are asked of `resolver`.
    pub fn new(resolver: Arc<dyn Resolver>) -> Self {
        Self {
            links: Links::default(),
            resolver,
        }
    }

    fn link(&self, target: &NatsTarget, credentials: Option<&BrokerCredentials>) -> Arc<Link> {
        self.links.get(LinkKey {
            host: target.host.clone(),
            port: target.port,
            tls: target.tls,
            login: login_digest(credentials),
        })
    }

    async fn publish(
        &self,
        target: &NatsTarget,
        message: &Message,
    ) -> Result<Answer, TransportFailure> {
        let subject =
            target
                .subject
                .resolve(&message.event_type, message.instance_id, nats_subject_char);
        if !is_publish_subject(&subject) {
            return Err(TransportFailure::BadUrl);
        }
        let credentials = message.credentials.as_ref();
        let client = self
            .link(target, credentials)
            .client(&*self.resolver, target, credentials, message.timeout)
            .await?;
        if client.connection_state() != State::Connected {
            // The client is reconnecting by itself; do not queue behind it.
            return Err(TransportFailure::Network);
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &message.headers {
            headers.insert(*name, value.as_str());
        }
        headers.insert("Content-Type", CONTENT_TYPE);
        headers.insert(MSG_ID_HEADER, message.delivery_id.as_str());
        let mut jetstream = async_nats::jetstream::new(client.clone());
        jetstream.set_timeout(message.timeout);
        let acked = match jetstream
            .publish_with_headers(subject.clone(), headers.clone(), message.body.clone())
            .await
        {
            Ok(ack) => ack.await,
            Err(e) => Err(e),
        };
        match acked {
            Ok(_) => Ok(Answer {
                status: BROKER_ACK,
                retry_after: None,
            }),
            Err(e) => {
                let connected = client.connection_state() == State::Connected;
                let failure = publish_failure(e.kind(), connected);
                if failure == TransportFailure::NoStream && message.nats_without_jetstream {
                    // Core NATS: the server had it once the flush returns.
                    client
                        .publish_with_headers(subject, headers, message.body.clone())
                        .await
                        .map_err(|_| TransportFailure::Network)?;
                    client
                        .flush()
                        .await
                        .map_err(|_| TransportFailure::Network)?;
                    return Ok(Answer {
                        status: BROKER_SENT,
                        retry_after: None,
                    });
                }
                Err(failure)
            }
        }
    }
}

impl Sender for Nats {
    type Target = NatsTarget;

    async fn send(
        &self,
        target: &NatsTarget,
        message: &Message,
    ) -> Result<Answer, TransportFailure> {
        tokio::time::timeout(message.timeout, self.publish(target, message))
            .await
            .unwrap_or(Err(TransportFailure::Timeout))
    }
}
