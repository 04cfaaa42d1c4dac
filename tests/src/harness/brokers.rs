//! Receivers on the brokers: a RabbitMQ queue bound to `amq.topic` and a
//! JetStream stream read by an ordered consumer, each made for one run and
//! deleted with it. Every message taken off them is a `request` line of
//! the history with answer `consumed` (the broker stored it, which is what
//! Motor's publish waits for), its signature checked from the contract as
//! the webhook receivers check theirs.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use anyhow::Context;
use futures::StreamExt;
use lapin::{
    options::{BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions},
    types::{AMQPValue, FieldTable},
    Connection, ConnectionProperties,
};

use super::receiver::Trusted;
use crate::history::{now_us, Answer, Record, Recorder};

pub const RABBITMQ: &str = "127.0.0.1:5672";
pub const NATS: &str = "127.0.0.1:4222";

struct Shared {
    name: String,
    recorder: Recorder,
    secrets: Trusted,
    seen: AtomicU64,
}

/// What keeps a receiver's broker side alive (and deletes it at the end).
enum Side {
    Rabbit(Box<Connection>),
    Nats(async_nats::jetstream::Context),
}

pub struct BrokerReceiver {
    url: String,
    shared: Arc<Shared>,
    side: Side,
}

impl BrokerReceiver {
    /// An exclusive queue named `name`, bound to `amq.topic` with routing
    /// key `name`; the subscription's URL publishes there.
    pub async fn rabbit(name: &str, recorder: Recorder) -> anyhow::Result<Self> {
        let shared = shared(name, recorder);
        let props = ConnectionProperties::default()
            .with_executor(tokio_executor_trait::Tokio::current())
            .with_reactor(tokio_reactor_trait::Tokio::current());
        let conn = Connection::connect(&format!("amqp://guest:guest@{RABBITMQ}/%2f"), props)
            .await
            .context("RabbitMQ on 127.0.0.1:5672 (guest/guest)")?;
        let ch = conn.create_channel().await?;
        let exclusive = QueueDeclareOptions {
            exclusive: true,
            auto_delete: true,
            ..Default::default()
        };
        ch.queue_declare(name, exclusive, FieldTable::default())
            .await?;
        ch.queue_bind(
            name,
            "amq.topic",
            name,
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
        let no_ack = BasicConsumeOptions {
            no_ack: true,
            ..Default::default()
        };
        let mut consumer = ch
            .basic_consume(name, "faults", no_ack, FieldTable::default())
            .await?;
        let taking = shared.clone();
        tokio::spawn(async move {
            while let Some(Ok(delivery)) = consumer.next().await {
                let mut headers = HashMap::new();
                if let Some(table) = delivery.properties.headers() {
                    for (k, v) in table.inner() {
                        if let AMQPValue::LongString(s) = v {
                            headers.insert(
                                k.as_str().to_ascii_lowercase(),
                                String::from_utf8_lossy(s.as_bytes()).into_owned(),
                            );
                        }
                    }
                }
                taking.took(&headers, &delivery.data);
            }
        });
        Ok(Self {
            url: format!("amqp://{RABBITMQ}/?exchange=amq.topic&routing_key={name}"),
            shared,
            side: Side::Rabbit(Box::new(conn)),
        })
    }

    /// A JetStream stream named `name` on subject `name`, read from its
    /// start by an ordered consumer.
    pub async fn nats(name: &str, recorder: Recorder) -> anyhow::Result<Self> {
        let shared = shared(name, recorder);
        let client = async_nats::connect(NATS)
            .await
            .context("NATS on 127.0.0.1:4222")?;
        let js = async_nats::jetstream::new(client);
        let stream = js
            .create_stream(async_nats::jetstream::stream::Config {
                name: name.into(),
                subjects: vec![name.into()],
                ..Default::default()
            })
            .await?;
        let ordered = stream
            .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig::default())
            .await?;
        let mut messages = ordered.messages().await?;
        let taking = shared.clone();
        tokio::spawn(async move {
            while let Some(Ok(m)) = messages.next().await {
                let mut headers = HashMap::new();
                if let Some(h) = &m.headers {
                    for (k, vs) in h.iter() {
                        if let Some(v) = vs.first() {
                            headers.insert(k.to_string().to_ascii_lowercase(), v.to_string());
                        }
                    }
                }
                taking.took(&headers, &m.payload);
            }
        });
        Ok(Self {
            url: format!("nats://{NATS}/{name}"),
            shared,
            side: Side::Nats(js),
        })
    }

    /// The subscription URL (the checker reads the receiver's name back
    /// from its routing key or subject).
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn name(&self) -> &str {
        &self.shared.name
    }

    pub fn trust(&self, key_id: &str, secret: &str) {
        self.shared.secrets.trust(key_id, secret);
    }

    /// Messages taken so far.
    pub fn requests(&self) -> u64 {
        self.shared.seen.load(Ordering::Relaxed)
    }

    /// Deletes the queue (by closing its only connection) or the stream.
    pub async fn close(self) {
        match self.side {
            Side::Rabbit(conn) => {
                let _ = conn.close(200, "run over").await;
            }
            Side::Nats(js) => {
                let _ = js.delete_stream(&self.shared.name).await;
            }
        }
    }
}

fn shared(name: &str, recorder: Recorder) -> Arc<Shared> {
    Arc::new(Shared {
        name: name.into(),
        recorder,
        secrets: Trusted::default(),
        seen: AtomicU64::new(0),
    })
}

impl Shared {
    /// Records one message (`headers` in lower case).
    fn took(&self, headers: &HashMap<String, String>, body: &[u8]) {
        let at = now_us();
        let get = |name: &str| headers.get(name).map(String::as_str).unwrap_or_default();
        let delivery_id = get("x-mw-delivery-id").to_owned();
        let timestamp = get("x-mw-timestamp");
        let key_ids: Vec<String> = get("x-mw-key-id")
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        let mut signed = format!("{timestamp}.{delivery_id}.").into_bytes();
        signed.extend_from_slice(body);
        let verified = self
            .secrets
            .verify(&key_ids, get("x-mw-signature"), &signed);
        let envelope: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        self.recorder.record(&Record::Request {
            receiver: self.name.clone(),
            pid: None,
            conn: 0,
            delivery_id,
            event_id: get("x-mw-event-id").to_owned(),
            instance_id: envelope["instance_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            seq: envelope["seq"].as_i64().unwrap_or(-1),
            key_ids,
            verified,
            timestamp: timestamp.parse().unwrap_or(0),
            arrived_us: at,
            answering_us: Some(at),
            ended_us: at,
            answer: Answer::Consumed,
            status: None,
            retry_after_ms: None,
            contract: None,
        });
        self.seen.fetch_add(1, Ordering::Relaxed);
    }
}
