//! The client: one connection per destination (host, port, TLS, vhost,
//! login), shared by every lane that publishes there, with one
//! confirm-mode channel per exchange. A lane has one message in flight;
//! lanes to one exchange publish concurrently on its channel and each waits
//! for its own confirm.

use std::{collections::HashMap, net::SocketAddr, sync::Arc, time::Duration};

use backon::{ExponentialBuilder, Retryable};
use lapin::{
    options::{BasicPublishOptions, ConfirmSelectOptions},
    publisher_confirm::Confirmation,
    tcp::{TLSConfig, TcpStream},
    types::{AMQPValue, FieldTable, LongString, ShortString},
    uri::{AMQPAuthority, AMQPQueryString, AMQPScheme, AMQPUri, AMQPUserInfo},
    BasicProperties, Channel, Connection, ConnectionProperties,
};
use motor_domain::{
    credentials::BrokerCredentials,
    delivery::TransportFailure,
    destination::{AmqpTarget, CanonicalHost},
};
use secrecy::ExposeSecret;

use super::{
    config::{
        CONTENT_TYPE, HEARTBEAT_SECONDS, PERSISTENT, RECONNECT_MAX, RECONNECT_MIN, RECONNECT_TIMES,
    },
    outcome::{failure, is_transient},
};
use crate::{
    guard,
    links::{login_digest, Links},
    resolve::{Resolver, SystemResolver},
    Answer, Message, Sender, BROKER_ACK,
};

/// What makes two targets share a connection.
#[derive(Clone, PartialEq, Eq, Hash)]
struct LinkKey {
    host: CanonicalHost,
    port: u16,
    tls: bool,
    vhost: String,
    /// SHA-256 of the login (never the login itself).
    login: [u8; 32],
}

impl LinkKey {
    fn new(target: &AmqpTarget, credentials: Option<&BrokerCredentials>) -> Self {
        Self {
            host: target.host.clone(),
            port: target.port,
            tls: target.tls,
            vhost: target.vhost.clone(),
            login: login_digest(credentials),
        }
    }
}

/// A connection and its confirm-mode channels, one per exchange: a
/// publish to a missing exchange closes its channel, and only publishes to
/// that exchange share it.
struct Live {
    connection: Connection,
    channels: HashMap<String, Channel>,
}

/// One destination's connection, made on first use and replaced when it
/// dies.
#[derive(Default)]
struct Link {
    live: tokio::sync::Mutex<Option<Live>>,
}

impl Link {
    /// The target exchange's channel in confirm mode: the live one, a new
    /// one on the live connection, or a new connection (with backoff).
    async fn channel(
        &self,
        resolver: &dyn Resolver,
        target: &AmqpTarget,
        credentials: Option<&BrokerCredentials>,
        timeout: Duration,
    ) -> Result<Channel, TransportFailure> {
        let mut live = self.live.lock().await;
        if let Some(l) = live.as_mut() {
            if let Some(channel) = l.channels.get(&target.exchange) {
                if channel.status().connected() {
                    return Ok(channel.clone());
                }
            }
            if l.connection.status().connected() {
                if let Ok(channel) = open_channel(&l.connection).await {
                    l.channels.insert(target.exchange.clone(), channel.clone());
                    return Ok(channel);
                }
            }
        }
        if let Some(old) = live.take() {
            // Best effort: the broker may be gone already.
            let _ = old.connection.close(200, "reconnecting").await;
        }
        let backoff = ExponentialBuilder::default()
            .with_min_delay(RECONNECT_MIN)
            .with_max_delay(RECONNECT_MAX)
            .with_max_times(RECONNECT_TIMES)
            .with_jitter();
        let (connection, channel) = (|| connect(resolver, target, credentials, timeout))
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(|e| is_transient(*e))
            .await?;
        *live = Some(Live {
            connection,
            channels: HashMap::from([(target.exchange.clone(), channel.clone())]),
        });
        Ok(channel)
    }
}

async fn open_channel(connection: &Connection) -> Result<Channel, TransportFailure> {
    let channel = connection.create_channel().await.map_err(|e| failure(&e))?;
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .map_err(|e| failure(&e))?;
    Ok(channel)
}

/// Resolves and checks the host, then connects to a checked address (TLS
/// verified against the host's name), and opens a first channel (a login
/// without access to the vhost is refused there at the latest).
// The connector's error type is lapin's (`HandshakeError`), large or not.
#[allow(clippy::result_large_err)]
async fn connect(
    resolver: &dyn Resolver,
    target: &AmqpTarget,
    credentials: Option<&BrokerCredentials>,
    timeout: Duration,
) -> Result<(Connection, Channel), TransportFailure> {
    let addrs: Vec<SocketAddr> = guard::resolve(resolver, &target.host, target.port).await?;
    let host = match &target.host {
        CanonicalHost::Domain(d) => d.clone(),
        CanonicalHost::Ip(ip) => ip.to_string(),
    };
    let userinfo = match credentials {
        Some(BrokerCredentials::User { user, password }) => AMQPUserInfo {
            username: user.clone(),
            password: password.expose_secret().to_owned(),
        },
        // A token is refused for RabbitMQ when the subscription is saved;
        // none means the broker's default login.
        _ => AMQPUserInfo::default(),
    };
    let uri = AMQPUri {
        scheme: if target.tls {
            AMQPScheme::AMQPS
        } else {
            AMQPScheme::AMQP
        },
        authority: AMQPAuthority {
            userinfo,
            host: host.clone(),
            port: target.port,
        },
        vhost: target.vhost.clone(),
        query: AMQPQueryString {
            heartbeat: Some(HEARTBEAT_SECONDS),
            connection_timeout: Some(timeout.as_millis() as u64),
            ..Default::default()
        },
    };
    let tls = target.tls;
    let connect = move |_: &AMQPUri| {
        let stream = TcpStream::connect_timeout(&addrs[..], timeout)?;
        let stream = if tls {
            stream.into_tls(&host, TLSConfig::default())?
        } else {
            stream
        };
        stream.set_nonblocking(true)?;
        Ok(stream)
    };
    let properties = ConnectionProperties::default()
        .with_connection_name("motor".into())
        .with_executor(tokio_executor_trait::Tokio::current())
        .with_reactor(tokio_reactor_trait::Tokio::current());
    let connection = Connection::connector(uri, Box::new(connect), properties)
        .await
        .map_err(|e| failure(&e))?;
    let channel = match open_channel(&connection).await {
        Ok(channel) => channel,
        Err(e) => {
            let _ = connection.close(200, "no channel").await;
            return Err(e);
        }
    };
    Ok((connection, channel))
}

/// The RabbitMQ sender; one per process, pooling a connection per
/// destination.
#[derive(Clone)]
pub struct Amqp {
    links: Links<LinkKey, Link>,
    resolver: Arc<dyn Resolver>,
}

impl Default for Amqp {
    fn default() -> Self {
        Self::new(Arc::new(SystemResolver))
    }
}

impl Amqp {
    /// A sender whose broker names are asked of `resolver`.
    pub fn new(resolver: Arc<dyn Resolver>) -> Self {
        Self {
            links: Links::default(),
            resolver,
        }
    }

    /// Closes every connection (AMQP `connection.close`, 200) and waits
    /// for the broker's answer. Call it once the senders are done and
    /// before the runtime stops: a connection left open is torn down by
    /// the runtime's shutdown, which lapin logs as two IO errors.
    pub async fn close(&self) {
        for link in self.links.all() {
            if let Some(live) = link.live.lock().await.take() {
                // Best effort: the broker may be gone already.
                if live.connection.close(200, "shutdown").await.is_ok() {
                    // The close-ok returns before lapin's I/O thread has
                    // done its last I/O; were the runtime to stop
                    // meanwhile, that thread logs two errors. A closed
                    // connection's thread ends: wait for it, briefly.
                    let connection = live.connection;
                    let _ = tokio::time::timeout(
                        Duration::from_secs(2),
                        tokio::task::spawn_blocking(move || connection.run()),
                    )
                    .await;
                }
            }
        }
    }

    async fn publish(
        &self,
        target: &AmqpTarget,
        message: &Message,
    ) -> Result<Answer, TransportFailure> {
        let link = self
            .links
            .get(LinkKey::new(target, message.credentials.as_ref()));
        let channel = link
            .channel(
                &*self.resolver,
                target,
                message.credentials.as_ref(),
                message.timeout,
            )
            .await?;
        let routing_key =
            target
                .routing_key
                .resolve(&message.event_type, message.instance_id, |c| c);
        let mut headers = FieldTable::default();
        for (name, value) in &message.headers {
            headers.insert(
                ShortString::from(*name),
                AMQPValue::LongString(LongString::from(value.as_str())),
            );
        }
        let properties = BasicProperties::default()
            .with_content_type(ShortString::from(CONTENT_TYPE))
            .with_delivery_mode(PERSISTENT)
            .with_message_id(ShortString::from(message.delivery_id.as_str()))
            .with_headers(headers);
        // A failed publish leaves a closed channel (or connection) behind;
        // the next message's `channel()` sees it and replaces it.
        async {
            let confirm = channel
                .basic_publish(
                    &target.exchange,
                    &routing_key,
                    BasicPublishOptions {
                        mandatory: true,
                        immediate: false,
                    },
                    &message.body,
                    properties,
                )
                .await
                .map_err(|e| failure(&e))?;
            match confirm.await.map_err(|e| failure(&e))? {
                Confirmation::Ack(None) => Ok(Answer {
                    status: BROKER_ACK,
                    retry_after: None,
                }),
                // `mandatory` and no queue bound: the broker hands it back
                // (then acks it): not delivered.
                Confirmation::Ack(Some(_)) => Err(TransportFailure::BrokerUnroutable),
                Confirmation::Nack(_) => Err(TransportFailure::BrokerNack),
                // The channel is in confirm mode: a publish without a
                // confirm means the mode was lost with the channel.
                Confirmation::NotRequested => Err(TransportFailure::Network),
            }
        }
        .await
    }
}

impl Sender for Amqp {
    type Target = AmqpTarget;

    async fn send(
        &self,
        target: &AmqpTarget,
        message: &Message,
    ) -> Result<Answer, TransportFailure> {
        tokio::time::timeout(message.timeout, self.publish(target, message))
            .await
            .unwrap_or(Err(TransportFailure::Timeout))
    }
}
