//! The test's own view of the brokers, written from their docs alone: a
//! RabbitMQ exchange and queue, a NATS JetStream stream — each made for
//! one test and deleted by it — read back with plain clients, and a
//! signature check written from the contract.

use std::{collections::HashMap, time::Duration};

use hmac::{Hmac, Mac};
use lapin::{
    options::{
        BasicGetOptions, ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions,
        QueueDeclareOptions, QueueDeleteOptions,
    },
    types::{AMQPValue, FieldTable},
    Channel, Connection, ConnectionProperties, ExchangeKind,
};
use sha2::Sha256;

/// One message as a consumer got it.
#[derive(Debug, Clone)]
pub struct Got {
    pub body: Vec<u8>,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    /// AMQP `message_id` / `content_type` / `delivery_mode` (RabbitMQ).
    pub message_id: Option<String>,
    pub content_type: Option<String>,
    pub delivery_mode: Option<u8>,
}

impl Got {
    pub fn envelope(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
            .unwrap_or_default()
    }

    /// `X-MW-Signature` checked as the docs say: `v1=hex(HMAC-SHA256(secret,
    /// timestamp + "." + delivery_id + "." + body))`, one per key id.
    pub fn verifies_with(&self, key_id: &str, secret: &str) -> bool {
        let key_ids: Vec<&str> = self
            .header("x-mw-key-id")
            .split(',')
            .map(str::trim)
            .collect();
        let signatures: Vec<&str> = self
            .header("x-mw-signature")
            .split(',')
            .map(str::trim)
            .collect();
        let Some(i) = key_ids.iter().position(|k| *k == key_id) else {
            return false;
        };
        let Some(hex_sig) = signatures.get(i).and_then(|s| s.strip_prefix("v1=")) else {
            return false;
        };
        let Ok(expected) = hex::decode(hex_sig) else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(
            format!(
                "{}.{}.",
                self.header("x-mw-timestamp"),
                self.header("x-mw-delivery-id")
            )
            .as_bytes(),
        );
        mac.update(&self.body);
        mac.verify_slice(&expected).is_ok()
    }
}

pub fn unique(tag: &str) -> String {
    format!(
        "motor-test-{tag}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..10]
    )
}

// ---- RabbitMQ --------------------------------------------------------------

/// A fresh connection and channel (a test may close every connection the
/// broker has, its own included).
pub async fn rabbit() -> (Connection, Channel) {
    let props = ConnectionProperties::default()
        .with_executor(tokio_executor_trait::Tokio::current())
        .with_reactor(tokio_reactor_trait::Tokio::current());
    let conn = Connection::connect("amqp://guest:guest@127.0.0.1:5672/%2f", props)
        .await
        .expect("RabbitMQ on 127.0.0.1:5672 (guest/guest)");
    let channel = conn.create_channel().await.unwrap();
    (conn, channel)
}

/// A topic exchange and, unless `bind` is false, a queue bound to it with
/// `#`. `queue_args`: extra queue arguments (`x-max-length`, …).
pub struct RabbitSetup {
    pub exchange: String,
    pub queue: String,
}

impl RabbitSetup {
    pub async fn new(tag: &str, bind: bool, queue_args: FieldTable) -> Self {
        let name = unique(tag);
        let (conn, ch) = rabbit().await;
        ch.exchange_declare(
            &name,
            ExchangeKind::Topic,
            ExchangeDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
        ch.queue_declare(&name, QueueDeclareOptions::default(), queue_args)
            .await
            .unwrap();
        let setup = Self {
            exchange: name.clone(),
            queue: name,
        };
        if bind {
            setup.bind_with(&ch).await;
        }
        let _ = conn.close(200, "done").await;
        setup
    }

    async fn bind_with(&self, ch: &Channel) {
        ch.queue_bind(
            &self.queue,
            &self.exchange,
            "#",
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    }

    pub async fn bind(&self) {
        let (conn, ch) = rabbit().await;
        self.bind_with(&ch).await;
        let _ = conn.close(200, "done").await;
    }

    /// `amqp://127.0.0.1:5672/?exchange=…` plus `extra` query text.
    pub fn url(&self, extra: &str) -> String {
        format!("amqp://127.0.0.1:5672/?exchange={}{extra}", self.exchange)
    }

    /// Takes up to `max` messages off the queue (basic.get, acked).
    pub async fn take(&self, max: usize) -> Vec<Got> {
        let (conn, ch) = rabbit().await;
        let mut out = Vec::new();
        while out.len() < max {
            let Some(m) = ch
                .basic_get(&self.queue, BasicGetOptions { no_ack: true })
                .await
                .unwrap()
            else {
                break;
            };
            let props = &m.delivery.properties;
            let mut headers = HashMap::new();
            if let Some(table) = props.headers() {
                for (k, v) in table.inner() {
                    let value = match v {
                        AMQPValue::LongString(s) => {
                            String::from_utf8_lossy(s.as_bytes()).into_owned()
                        }
                        AMQPValue::ShortString(s) => s.as_str().to_owned(),
                        other => format!("{other:?}"),
                    };
                    headers.insert(k.as_str().to_ascii_lowercase(), value);
                }
            }
            out.push(Got {
                body: m.delivery.data.clone(),
                headers,
                message_id: props.message_id().as_ref().map(|s| s.as_str().to_owned()),
                content_type: props.content_type().as_ref().map(|s| s.as_str().to_owned()),
                delivery_mode: *props.delivery_mode(),
            });
        }
        let _ = conn.close(200, "done").await;
        out
    }

    /// Reads the queue until `n` messages came (they stay in the queue
    /// until then: the test reads after Motor has recorded them).
    pub async fn take_all(&self, n: usize, within: Duration) -> Vec<Got> {
        let deadline = tokio::time::Instant::now() + within;
        let mut out = Vec::new();
        while out.len() < n {
            out.extend(self.take(n - out.len()).await);
            if out.len() < n {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{} of {n} messages in {}",
                    out.len(),
                    self.queue
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        out
    }

    pub async fn delete(self) {
        let (conn, ch) = rabbit().await;
        let _ = ch
            .queue_delete(&self.queue, QueueDeleteOptions::default())
            .await;
        let _ = ch
            .exchange_delete(&self.exchange, ExchangeDeleteOptions::default())
            .await;
        let _ = conn.close(200, "done").await;
    }
}

/// Closes every client connection RabbitMQ has (Motor's and the test's):
/// RabbitMQ is shared by every test of this binary, and
/// [`close_all_rabbit_connections`] closes every connection it has, other
/// tests' too: a test that uses RabbitMQ holds this for reading, the one
/// that closes connections holds it for writing.
pub static RABBIT: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// `rabbitmqctl close_all_connections`, which works on this machine (the
/// management plugin is not enabled).
pub fn close_all_rabbit_connections() {
    let status = std::process::Command::new("rabbitmqctl")
        .args(["close_all_connections", "motor test: connection closed"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("rabbitmqctl");
    assert!(status.success());
}

// ---- NATS ------------------------------------------------------------------

pub async fn nats() -> async_nats::Client {
    async_nats::connect("127.0.0.1:4222")
        .await
        .expect("NATS on 127.0.0.1:4222")
}

/// A JetStream stream capturing `{name}.>`.
pub struct NatsSetup {
    pub stream: String,
    pub subject_root: String,
    js: async_nats::jetstream::Context,
}

impl NatsSetup {
    pub async fn new(tag: &str) -> Self {
        let name = unique(tag);
        let setup = Self {
            subject_root: name.clone(),
            stream: name,
            js: async_nats::jetstream::new(nats().await),
        };
        setup.create_stream().await;
        setup
    }

    pub async fn create_stream(&self) {
        self.js
            .create_stream(async_nats::jetstream::stream::Config {
                name: self.stream.clone(),
                subjects: vec![format!("{}.>", self.subject_root)],
                ..Default::default()
            })
            .await
            .unwrap();
    }

    pub async fn delete_stream(&self) {
        self.js.delete_stream(&self.stream).await.unwrap();
    }

    /// `nats://127.0.0.1:4222/{root}.{suffix}`.
    pub fn url(&self, suffix: &str) -> String {
        format!("nats://127.0.0.1:4222/{}.{suffix}", self.subject_root)
    }

    /// Every message the stream holds, in stream order, once it holds at
    /// least `n`.
    pub async fn read_all(&self, n: usize, within: Duration) -> Vec<Got> {
        let deadline = tokio::time::Instant::now() + within;
        let mut stream = self.js.get_stream(&self.stream).await.unwrap();
        loop {
            let info = stream.info().await.unwrap();
            if info.state.messages as usize >= n {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} of {n} messages in {}",
                info.state.messages,
                self.stream
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let info = stream.info().await.unwrap().state.clone();
        let mut out = Vec::new();
        for seq in info.first_sequence..=info.last_sequence {
            let m = stream.get_raw_message(seq).await.unwrap();
            let mut headers = HashMap::new();
            for (k, vs) in m.headers.iter() {
                headers.insert(
                    k.to_string().to_ascii_lowercase(),
                    vs.first().map(|v| v.to_string()).unwrap_or_default(),
                );
            }
            out.push(Got {
                body: m.payload.to_vec(),
                headers,
                message_id: None,
                content_type: None,
                delivery_mode: None,
            });
        }
        out
    }

    pub async fn delete(self) {
        let _ = self.js.delete_stream(&self.stream).await;
    }
}

/// Arguments for a queue that Nacks publishes once it holds `max`.
pub fn reject_when_full(max: i64) -> FieldTable {
    let mut args = FieldTable::default();
    args.insert("x-max-length".into(), AMQPValue::LongLongInt(max));
    args.insert(
        "x-overflow".into(),
        AMQPValue::LongString("reject-publish".into()),
    );
    args
}
